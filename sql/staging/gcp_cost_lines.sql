-- Google Cloud billing export rows as provider-neutral cost lines (FOCUS 1.2 meanings, four cost bases, exact).
-- grain: one row per export row (line_id); billing_period is the invoice month, never the usage month
-- normalized.cost_lines unions this with the other providers' *_cost_lines views (docs/gcp.md).
with gcp_line_items as (
    select * from staging.gcp_billing_line_items
),

gpu_skus as (
    -- accelerator SKUs known by id; any other SKU whose description names a GPU is one too
    select gpu_sku_list.sku_id
    from (values ('88B8-C3ED-03F0')) as gpu_sku_list (sku_id)
),

classified as (
    select
        gcp_line_items.*,
        gpu_skus.sku_id is not null
        or regexp_matches(
            lower(coalesce(gcp_line_items.sku_description, '')), '(nvidia|tesla|\bgpu\b)'
        ) as is_gpu_sku,
        lower(coalesce(gcp_line_items.sku_description, '')) like 'commitment%' as is_commitment_fee,
        coalesce(
            gcp_line_items.system_labels['compute.googleapis.com/is_unused_reservation'], ''
        ) = 'true' as is_unused_reservation,
        lower(coalesce(gcp_line_items.sku_description, '')) as sku_text
    from gcp_line_items
    left join gpu_skus on gcp_line_items.sku_id = gpu_skus.sku_id
),

bases as (
    select
        classified.*,
        classified.cost as billed_cost,
        -- the usage price: cost less the credits that set it (sustained use, committed use,
        -- fee offsets, free tier, subscription benefits); commitment fees are their own rows
        classified.cost
        + classified.credit_sustained_usage_discount
        + classified.credit_committed_usage_discount
        + classified.credit_committed_usage_discount_dollar_base
        + classified.credit_fee_utilization_offset
        + classified.credit_free_tier
        + classified.credit_subscription_benefit as effective_cost,
        -- cost_at_list is missing from tables created before 2023-06-29 and on some
        -- tax and adjustment rows: list cost is then the cost itself
        coalesce(classified.cost_at_list, classified.cost) as list_cost,
        classified.cost + classified.credits_total as net_cost,
        -- GKE cost allocation: a pod label k8s-label/<key> is also readable as <key>, unless the
        -- row carries a label <key> of its own (the plain label wins)
        map_from_entries(list_concat(
            map_entries(classified.labels),
            list_transform(
                list_filter(
                    map_entries(classified.labels),
                    lambda e: starts_with(e.key, 'k8s-label/')  -- noqa: RF02
                    and not list_contains(map_keys(classified.labels), substr(e.key, 11))  -- noqa: RF02
                ),
                lambda e: { 'key': substr(e.key, 11), 'value': e.value }  -- noqa: RF02
            )
        )) as attribution_tags
    from classified
),

final as (
    select
        bases.line_id,
        'gcp' as provider,
        bases.source_delivery,
        bases.source_file,
        bases.source_line,
        bases.billing_account_id,
        cast(null as varchar) as billing_account_name,
        bases.project_id as sub_account_id,
        bases.project_name as sub_account_name,
        substr(bases.invoice_month, 1, 4) || '-' || substr(bases.invoice_month, 5, 2) as billing_period,
        -- invoice months start at midnight Pacific time
        timezone(
            'America/Los_Angeles', cast(strptime(bases.invoice_month || '01', '%Y%m%d') as timestamp)
        ) as billing_period_start,
        timezone(
            'America/Los_Angeles',
            cast(strptime(bases.invoice_month || '01', '%Y%m%d') as timestamp) + interval 1 month
        ) as billing_period_end,
        bases.usage_start as charge_period_start,
        bases.usage_end as charge_period_end,
        case
            when bases.cost_type = 'tax' then 'Tax'
            when bases.cost_type in ('adjustment', 'rounding_error') then 'Adjustment'
            when bases.is_commitment_fee then 'Purchase'
            else 'Usage'
        end as charge_category,
        case when bases.adjustment_id is not null or bases.adjustment_type is not null then 'Correction' end
            as charge_class,
        bases.sku_description as charge_description,
        bases.cost_type as provider_line_type,
        bases.service_description as service_name,
        bases.sku_id,
        cast(null as varchar) as usage_type,
        cast(null as varchar) as operation,
        bases.resource_short_name as resource_id,
        bases.location_region as region_id,
        bases.location_zone as availability_zone,
        bases.system_labels['compute.googleapis.com/machine_spec'] as instance_type,
        bases.usage_pricing_unit as pricing_unit,
        case
            when bases.cost_type = 'tax' then 'tax'
            when bases.cost_type = 'rounding_error' then 'other'
            when
                bases.cost_type = 'adjustment'
                and coalesce(bases.adjustment_type, '') not in (
                    'USAGE_CORRECTION', 'PRICE_CORRECTION', 'METADATA_CORRECTION'
                )
                then case when bases.cost <= 0 then 'credit' else 'other' end
            when bases.is_unused_reservation then 'unused_reservation'
            when bases.is_commitment_fee then 'commitment'
            when bases.is_gpu_sku then 'gpu'
            when
                bases.sku_text like '%egress%'
                or bases.sku_text like '%data transfer%'
                or bases.sku_text like 'network %'
                then 'data_transfer'
            when bases.sku_text like '%operations%' then 'storage_operations'
            when
                bases.sku_text like '%pd capacity%'
                or bases.sku_text like '%pd snapshot%'
                or bases.sku_text like '%local ssd%'
                or bases.sku_text like '%storage%'
                then 'storage'
            when
                bases.sku_text like '%instance core%'
                or bases.sku_text like '%instance ram%'
                or bases.sku_text like '% core running%'
                or bases.sku_text like '% ram running%'
                or bases.service_description = 'Compute Engine'
                then 'compute'
            when bases.service_description in ('Kubernetes Engine', 'Cloud Monitoring', 'Cloud Logging') then 'platform'
            else 'other'
        end as resource_class,
        bases.usage_amount as consumed_quantity,
        -- seconds the resource ran inside the row's window: time-unit usage (seconds, hours) says
        -- how long, bounded by the window; other units (byte-seconds, bytes) span the window
        case
            when lower(coalesce(bases.usage_unit, '')) in ('seconds', 'second', 's')
                then least(
                    greatest(coalesce(cast(bases.usage_amount as double), 0), 0),
                    epoch(bases.usage_end) - epoch(bases.usage_start)
                )
            when lower(coalesce(bases.usage_unit, '')) in ('hours', 'hour', 'h')
                then least(
                    greatest(coalesce(cast(bases.usage_amount as double), 0), 0) * 3600,
                    epoch(bases.usage_end) - epoch(bases.usage_start)
                )
            else epoch(bases.usage_end) - epoch(bases.usage_start)
        end as usage_seconds,
        bases.currency as billing_currency,
        cast(null as varchar) as invoice_id,
        cast(bases.billed_cost as decimal(38, 10)) as billed_cost,
        cast(bases.effective_cost as decimal(38, 10)) as effective_cost,
        cast(bases.list_cost as decimal(38, 10)) as list_cost,
        cast(bases.net_cost as decimal(38, 10)) as net_cost,
        map_from_entries(list_filter([
            { 'key': 'SUSTAINED_USAGE_DISCOUNT', 'value': bases.credit_sustained_usage_discount },
            { 'key': 'COMMITTED_USAGE_DISCOUNT', 'value': bases.credit_committed_usage_discount },
            {
                'key': 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE',
                'value': bases.credit_committed_usage_discount_dollar_base
            },
            { 'key': 'FEE_UTILIZATION_OFFSET', 'value': bases.credit_fee_utilization_offset },
            { 'key': 'DISCOUNT', 'value': bases.credit_discount },
            { 'key': 'FREE_TIER', 'value': bases.credit_free_tier },
            { 'key': 'PROMOTION', 'value': bases.credit_promotion },
            { 'key': 'RESELLER_MARGIN', 'value': bases.credit_reseller_margin },
            { 'key': 'SUBSCRIPTION_BENEFIT', 'value': bases.credit_subscription_benefit },
            { 'key': 'OTHER', 'value': bases.credit_other }
        ], lambda e: e.value <> 0)) as credits_by_type,  -- noqa: RF02
        bases.attribution_tags as tags,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'gcp_billing_export' as source_format,
        -- FOCUS 1.2 columns the normalized.focus view passes through (docs/focus.md#normalizedfocus)
        'Google Cloud' as provider_name,
        coalesce(nullif(bases.seller_name, ''), 'Google Cloud') as publisher_name,
        'Google Cloud' as invoice_issuer_name,
        cast(null as varchar) as service_category,
        case when bases.cost_type = 'regular' then 'Usage-Based' else 'One-Time' end as charge_frequency,
        case
            when bases.cost_type = 'tax' then cast(null as varchar)
            when bases.credit_committed_usage_discount <> 0 then 'Committed'
            else 'Standard'
        end as pricing_category,
        cast(bases.usage_amount_in_pricing_units as double) as pricing_quantity,
        bases.usage_unit as consumed_unit,
        cast(null as double) as list_unit_price,
        cast(null as double) as contracted_unit_price,
        cast(bases.list_cost as decimal(38, 10)) as contracted_cost,
        cast(null as varchar) as commitment_discount_category,
        cast(null as varchar) as commitment_discount_id,
        cast(null as varchar) as commitment_discount_name,
        cast(null as varchar) as commitment_discount_status,
        cast(null as varchar) as commitment_discount_type,
        cast(null as varchar) as region_name,
        bases.resource_name,
        cast(null as varchar) as resource_type,
        cast(null as varchar) as sku_price_id
    from bases
)

select * from final
