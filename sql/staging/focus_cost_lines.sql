-- FOCUS file rows as provider-neutral cost lines (the columns of normalized.cost_lines, DECIMAL(38, 10)).
-- grain: one row per FOCUS row (line_id)
-- FOCUS already carries the four bases' meanings: BilledCost, EffectiveCost, ListCost; FOCUS has
-- no net column, so net_cost is EffectiveCost. Rules for charge_category and resource_class: docs/focus.md.
with focus_line_items as (
    select * from staging.focus_line_items
),

classified as (
    select
        focus_line_items.*,
        case lower(trim(focus_line_items.charge_category))
            when 'usage' then 'Usage'
            when 'purchase' then 'Purchase'
            when 'tax' then 'Tax'
            when 'credit' then 'Credit'
            when 'adjustment' then 'Adjustment'
            else focus_line_items.charge_category
        end as category,
        lower(coalesce(focus_line_items.consumed_unit, focus_line_items.pricing_unit, '')) as unit,
        coalesce(focus_line_items.consumed_quantity, focus_line_items.pricing_quantity) as quantity,
        lower(coalesce(focus_line_items.commitment_discount_status, '')) as commitment_status
    from focus_line_items
),

final as (
    select
        classified.line_id,
        lower(trim(classified.provider_name)) as provider,
        classified.source_delivery,
        classified.source_file,
        classified.source_line,
        classified.billing_account_id,
        classified.billing_account_name,
        classified.sub_account_id,
        classified.sub_account_name,
        strftime(classified.billing_period_start, '%Y-%m') as billing_period,
        classified.billing_period_start,
        classified.billing_period_end,
        classified.charge_period_start,
        classified.charge_period_end,
        classified.category as charge_category,
        case
            when lower(trim(classified.charge_class)) = 'correction' then 'Correction'
            else classified.charge_class
        end as charge_class,
        classified.charge_description,
        -- FOCUS has no line item type: the charge category, with the commitment status when set
        case
            when classified.commitment_discount_status is null then classified.category
            else classified.category || ':' || classified.commitment_discount_status
        end as provider_line_type,
        classified.service_name,
        classified.sku_id,
        classified.usage_type,
        classified.operation,
        classified.resource_id,
        classified.region_id,
        classified.availability_zone,
        cast(null as varchar) as instance_type,
        classified.pricing_unit,
        case
            when classified.category = 'Tax' then 'tax'
            when classified.category in ('Credit', 'Adjustment') then 'credit'
            when
                classified.commitment_status = 'unused'
                or (
                    classified.category = 'Purchase'
                    and (
                        classified.commitment_discount_id is not null
                        or classified.commitment_discount_category is not null
                    )
                )
                then 'commitment'
            when classified.service_category in ('Compute', 'AI and Machine Learning') then 'compute'
            when classified.service_category = 'Storage'
                then case
                    when
                        classified.unit like '%request%'
                        or classified.unit like '%transaction%'
                        or classified.unit like '%operation%'
                        then 'storage_operations'
                    else 'storage'
                end
            when
                classified.service_category = 'Networking'
                and (classified.unit like '%gb%' or classified.unit like '%byte%' or classified.unit like '%tb%')
                and classified.unit not like '%month%'
                and classified.unit not like '%hour%'
                then 'data_transfer'
            when classified.service_category = 'Management and Governance' then 'platform'
            else 'other'
        end as resource_class,
        classified.consumed_quantity,
        -- seconds of use inside the charge window: hour-priced usage says how long the resource
        -- ran; anything else is taken to span its window (as for AWS lines)
        case
            when classified.unit in ('hours', 'hour', 'hrs', 'hr')
                then least(
                    greatest(coalesce(cast(classified.quantity as double), 0), 0) * 3600,
                    epoch(classified.charge_period_end) - epoch(classified.charge_period_start)
                )
            else epoch(classified.charge_period_end) - epoch(classified.charge_period_start)
        end as usage_seconds,
        classified.billing_currency,
        nullif(classified.invoice_id, '') as invoice_id,
        classified.billed_cost,
        classified.effective_cost,
        classified.list_cost,
        classified.effective_cost as net_cost,
        -- FOCUS carries credits as their own rows (ChargeCategory Credit), not on the rows they reduce
        cast(null as map (varchar, decimal(38, 10))) as credits_by_type,
        -- JSON Tags as a map; valueless keys (true) and numbers become their text
        coalesce(
            cast(json(classified.tags_json) as map(varchar, varchar)),  -- noqa: LT01
            cast(map() as map(varchar, varchar))  -- noqa: LT01
        ) as tags,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'focus' as source_format,
        -- FOCUS 1.2 columns passed through as the file has them (docs/focus.md#normalizedfocus)
        classified.provider_name,
        classified.publisher_name,
        classified.invoice_issuer_name,
        classified.service_category,
        classified.charge_frequency,
        classified.pricing_category,
        cast(classified.pricing_quantity as double) as pricing_quantity,
        classified.consumed_unit,
        cast(classified.list_unit_price as double) as list_unit_price,
        cast(classified.contracted_unit_price as double) as contracted_unit_price,
        classified.contracted_cost,
        classified.commitment_discount_category,
        classified.commitment_discount_id,
        classified.commitment_discount_name,
        classified.commitment_discount_status,
        classified.commitment_discount_type,
        classified.region_name,
        classified.resource_name,
        classified.resource_type,
        classified.sku_price_id
    from classified
)

select * from final
