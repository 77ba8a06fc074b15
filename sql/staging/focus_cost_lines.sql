-- FOCUS file rows as provider-neutral cost lines (the columns of normalized.cost_lines, DECIMAL(38, 10)).
-- grain: one row per FOCUS row (line_id)
-- FOCUS already carries the four bases' meanings: BilledCost, EffectiveCost, ListCost; FOCUS has
-- no net column, so net_cost is EffectiveCost. A FOCUS 1.3 allocated row (split cost allocation: the provider's
-- allocated rows replace their origin charge and sum to it) is a line of its own: its resource_id is the
-- AllocatedResourceId it was allocated to (the resource+time join's key), its ResourceId kept as origin_resource_id,
-- and its AllocatedTags are looked up over its Tags for the attribution tags (normalized.cost_line_facts).
-- Rules for charge_category and resource_class: docs/focus.md. Each row names its profile (the text columns with
-- few values, its provider, account and currency too) by profile_key, a hash of the columns
-- staging.focus_line_profiles computes them from (focus_profile_key, pipeline/dag/profile_macros.py).
with focus_line_items as (
    select * from staging.focus_line_items
),

classified as (
    select
        focus_line_items.*,
        focus_unit(focus_line_items) as unit,
        coalesce(focus_line_items.consumed_quantity, focus_line_items.pricing_quantity) as quantity
    from focus_line_items
),

tag_maps as (
    -- each distinct Tags text parsed once and joined back to its rows: parsing the JSON of every
    -- row cost 9.3 CPU s per 10M rows with 130,000 distinct texts, against 2.7 for the distinct
    -- texts and the join; a row without Tags finds no text
    select
        tag_texts.tags_json,
        cast(json(tag_texts.tags_json) as map(varchar, varchar)) as tags  -- noqa: LT01
    from (select distinct focus_line_items.tags_json from focus_line_items) as tag_texts
    where tag_texts.tags_json is not null
),

allocated_tag_maps as (
    -- each distinct AllocatedTags text parsed once, as Tags are; NULL on a row without it
    select
        tag_texts.allocated_tags_json,
        cast(json(tag_texts.allocated_tags_json) as map(varchar, varchar)) as allocated_tags  -- noqa: LT01
    from (select distinct focus_line_items.allocated_tags_json from focus_line_items) as tag_texts
    where tag_texts.allocated_tags_json is not null
),

period_names as (
    -- each billing period's name once, not formatted on every row (strftime: 1.0 CPU s per 10M)
    select
        period_starts.billing_period_start,
        strftime(period_starts.billing_period_start, '%Y-%m') as billing_period
    from (select distinct focus_line_items.billing_period_start from focus_line_items) as period_starts
    where period_starts.billing_period_start is not null
),

final as (
    select
        classified.line_id,
        classified.source_line,
        period_names.billing_period,
        classified.billing_period_start,
        classified.billing_period_end,
        classified.charge_period_start,
        classified.charge_period_end,
        coalesce(classified.allocated_resource_id, classified.resource_id) as resource_id,
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
        coalesce(tag_maps.tags, cast(map() as map(varchar, varchar))) as tags,  -- noqa: LT01
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'focus' as source_format,
        classified.pricing_quantity,
        classified.list_unit_price,
        classified.contracted_unit_price,
        classified.contracted_cost,
        classified.commitment_discount_quantity,
        -- a FOCUS file delivers an unused commitment as a row of its own
        money(null) as unused_commitment_quantity,
        classified.pricing_currency_list_unit_price,
        classified.pricing_currency_contracted_unit_price,
        classified.pricing_currency_effective_cost,
        classified.resource_name,
        classified.allocated_method_id,
        classified.allocated_method_details,
        classified.allocated_resource_id,
        classified.allocated_resource_name,
        allocated_tag_maps.allocated_tags,
        case when classified.allocated_resource_id is not null then classified.resource_id end as origin_resource_id,
        classified.service_provider_name,
        classified.host_provider_name,
        classified.contract_applied,
        focus_profile_key(classified) as profile_key  -- noqa: RF02
    from classified
    left join tag_maps on classified.tags_json = tag_maps.tags_json
    left join allocated_tag_maps on classified.allocated_tags_json = allocated_tag_maps.allocated_tags_json
    left join period_names on classified.billing_period_start = period_names.billing_period_start
)

select * from final
