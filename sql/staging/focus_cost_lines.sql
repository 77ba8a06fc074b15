-- FOCUS file rows as provider-neutral cost lines (the columns of normalized.cost_lines, DECIMAL(38, 10)).
-- grain: one row per FOCUS row (line_id)
-- FOCUS already carries the four bases' meanings: BilledCost, EffectiveCost, ListCost; FOCUS has
-- no net column, so net_cost is EffectiveCost. Rules for charge_category and resource_class: docs/focus.md. Each row
-- names its profile (the text columns with few values, its provider, account and currency too) by profile_key, a hash
-- of the columns staging.focus_line_profiles computes them from (focus_profile_key, pipeline/dag/macros.py).
with focus_line_items as (
    select * from staging.focus_line_items
),

classified as (
    select
        focus_line_items.*,
        focus_unit(focus_line_items) as unit,  -- noqa: RF02
        coalesce(focus_line_items.consumed_quantity, focus_line_items.pricing_quantity) as quantity
    from focus_line_items
),

final as (
    select
        classified.line_id,
        classified.source_line,
        strftime(classified.billing_period_start, '%Y-%m') as billing_period,
        classified.billing_period_start,
        classified.billing_period_end,
        classified.charge_period_start,
        classified.charge_period_end,
        classified.resource_id,
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
        cast(classified.pricing_quantity as double) as pricing_quantity,
        cast(classified.list_unit_price as double) as list_unit_price,
        cast(classified.contracted_unit_price as double) as contracted_unit_price,
        classified.contracted_cost,
        classified.resource_name,
        focus_profile_key(classified) as profile_key  -- noqa: RF02
    from classified
)

select * from final
