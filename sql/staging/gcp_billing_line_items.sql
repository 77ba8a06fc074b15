-- Google Cloud billing export rows of each partition day's current delivery: flattened, renamed, money exact.
-- grain: one row per (source_delivery, source_file, source_line)
-- Credits stay on their row: each sum is a list aggregate over the row's own credits array, never a
-- join or unnest (which would repeat cost once per credit). raw.gcp_billing already reads money
-- through its exact text, whether the export wrote FLOAT64 or NUMERIC.
with source as (
    select * from raw.gcp_billing
),

renamed as (
    select
        -- GCP owns the line ids from 2^56: file_index * 2^28 + source_line above that
        line_id_of(1, source.file_index, source.source_line) as line_id,
        source.delivery_id as source_delivery,
        source.source_file,
        source.source_line,
        source.export_name,
        source.partition_date,
        source.billing_account_id,
        source.service.id as service_id,
        source.service.description as service_description,
        source.sku.id as sku_id,
        source.sku.description as sku_description,
        source.usage_start_time as usage_start,
        source.usage_end_time as usage_end,
        source.project.id as project_id,
        source.project.number as project_number,
        source.project.name as project_name,
        map_from_entries(coalesce(source.project.labels, [])) as project_labels,
        map_from_entries(coalesce(source.labels, [])) as labels,
        map_from_entries(coalesce(source.system_labels, [])) as system_labels,
        -- the same two as the export's key/value lists, which the cost lines and profiles read:
        -- a map made on every row costs about 1 CPU s per million rows
        coalesce(source.labels, []) as label_entries,
        coalesce(source.system_labels, []) as system_label_entries,
        map_from_entries(
            list_transform(coalesce(source.tags, []), lambda t: { 'key': t.key, 'value': t.value })  -- noqa: RF02
        ) as resource_manager_tags,
        source.location.location as location_name,
        source.location.country as location_country,
        source.location.region as location_region,
        source.location.zone as location_zone,
        nullif(trim(source.resource.name), '') as resource_name,
        nullif(trim(source.resource.global_name), '') as resource_global_name,
        source.subscription.instance_id as subscription_instance_id,
        source.transaction_type,
        source.seller_name,
        source.export_time,
        source.currency,
        source.currency_conversion_rate,
        source.usage.amount as usage_amount,
        source.usage.unit as usage_unit,
        source.usage.amount_in_pricing_units as usage_amount_in_pricing_units,
        source.usage.pricing_unit as usage_pricing_unit,
        source.invoice.month as invoice_month,
        source.invoice.publisher_type as invoice_publisher_type,
        source.cost_type,
        source.adjustment_info.id as adjustment_id,
        source.adjustment_info.description as adjustment_description,
        source.adjustment_info.type as adjustment_type,
        source.adjustment_info.mode as adjustment_mode,
        money(source.cost) as cost,
        money(source.cost_at_list) as cost_at_list,
        coalesce(source.credits, []) as credit_entries
    from source
),

credits as (
    select
        renamed.*,
        gcp_credits_total(renamed.credit_entries) as credits_total,
        gcp_credits_of_type(renamed.credit_entries, 'SUSTAINED_USAGE_DISCOUNT') as credit_sustained_usage_discount,
        gcp_credits_of_type(renamed.credit_entries, 'COMMITTED_USAGE_DISCOUNT') as credit_committed_usage_discount,
        gcp_credits_of_type(renamed.credit_entries, 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE')
            as credit_committed_usage_discount_dollar_base,
        gcp_credits_of_type(renamed.credit_entries, 'FEE_UTILIZATION_OFFSET') as credit_fee_utilization_offset,
        gcp_credits_of_type(renamed.credit_entries, 'DISCOUNT') as credit_discount,
        gcp_credits_of_type(renamed.credit_entries, 'FREE_TIER') as credit_free_tier,
        gcp_credits_of_type(renamed.credit_entries, 'PROMOTION') as credit_promotion,
        gcp_credits_of_type(renamed.credit_entries, 'RESELLER_MARGIN') as credit_reseller_margin,
        gcp_credits_of_type(renamed.credit_entries, 'SUBSCRIPTION_BENEFIT') as credit_subscription_benefit
    from renamed
),

labelled as (
    select
        credits.*,
        -- a resource path (projects/.../instances/name) is shortened to its last segment, the
        -- name telemetry records; the full name stays in resource_name and resource_global_name
        nullif(regexp_extract(credits.resource_name, '[^/]+$'), '') as resource_short_name,
        credits.credits_total
        - credits.credit_sustained_usage_discount
        - credits.credit_committed_usage_discount
        - credits.credit_committed_usage_discount_dollar_base
        - credits.credit_fee_utilization_offset
        - credits.credit_discount
        - credits.credit_free_tier
        - credits.credit_promotion
        - credits.credit_reseller_margin
        - credits.credit_subscription_benefit as credit_other
    from credits
),

final as (
    select * from labelled
)

select * from final
