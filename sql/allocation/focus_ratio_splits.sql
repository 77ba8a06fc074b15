-- The slices of each FOCUS charge whose cost may be no basis of its line, in the cost columns split by ratio.
-- grain: one row per (allocation_model, x_LineId, x_ProviderLineType, allocation_kind, attribution_method,
-- attempt_id, experiment_id, unallocated_reason); billing_period is the line's, so the table is published by
-- billing period and a night that builds some periods carries the others' splits forward
-- materialized: table (published: marts.focus_allocated, a view, takes these slices' ContractedCost and
-- PricingCurrencyEffectiveCost from it, and checks.focus_allocated_sums_to_origin sums them; the candidate rows
-- alone, a fifth of the FOCUS rows on a bill of net rates, none on most bills)
-- The candidate origin rows (macro focus_costs_maybe_unmatched: a ContractedCost or PricingCurrencyEffectiveCost
-- that is not NULL, not 0 and equals none of the row's BilledCost, EffectiveCost and ListCost) are split here
-- once, before any other FOCUS row meets a slice. A column of a basis of the line takes the slice's own amount in
-- that basis; a column no basis equals is split by the slice's ratio of its line (macro slice_ratio_of_line), the
-- slice of the largest amount under each allocation model taking that model's rounding remainder, so each
-- model's slices sum exactly to the origin row. The slices are read as stored (allocation.cost_slices, a slice
-- the two models share once) and placed in one window per origin row, then expanded to the models
-- (in_allocation_model): the window sorts each stored slice once, not its copy under each model.
-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
with focus as (
    select * from normalized.focus
),

cost_slices as (
    select * from allocation.cost_slices
),

candidates as (
    select
        focus.x_LineId,
        focus.x_ProviderLineType,
        focus.BilledCost,
        focus.EffectiveCost,
        focus.ListCost,
        focus.ContractedCost,
        focus.PricingCurrencyEffectiveCost
    from focus
    where focus_costs_maybe_unmatched(focus)  -- noqa: RF02
),

line_facts as (
    select
        cost_line_facts.line_id,
        line_bases(cost_line_facts)  -- noqa: AL03, RF02
    from normalized.cost_line_facts as cost_line_facts
),

sourced as (
    -- each candidate row with the basis of its line each cost column equals
    select
        origins.*,
        focus_cost_sources(origins)  -- noqa: AL03, RF02
    from (
        select
            candidates.*,
            line_costs(line_facts)  -- noqa: AL03, RF02
        from candidates
        inner join line_facts on candidates.x_LineId = line_facts.line_id
    ) as origins
),

parts as (
    -- each stored slice of each candidate row's line, its amounts before any rounding remainder
    select
        sliced.x_LineId,
        sliced.x_ProviderLineType,
        sliced.allocation_models,
        sliced.billing_period,
        sliced.allocation_kind,
        sliced.attribution_method,
        sliced.attempt_id,
        sliced.experiment_id,
        sliced.unallocated_reason,
        sliced.billed_cost,
        sliced.effective_cost,
        focus_ratio_wholes(sliced),  -- noqa: AL03, RF02
        focus_slice_costs(sliced)  -- noqa: AL03, RF02
    from (
        select
            sourced.*,
            cost_slices.allocation_models,
            cost_slices.billing_period,
            cost_slices.allocation_kind,
            cost_slices.attribution_method,
            cost_slices.attempt_id,
            cost_slices.experiment_id,
            cost_slices.unallocated_reason,
            bases(cost_slices),  -- noqa: AL03, RF02
            slice_ratio_of_line(cost_slices, sourced) as line_ratio  -- noqa: RF02
        from sourced
        inner join cost_slices on sourced.x_LineId = cost_slices.line_id
    ) as sliced
),

ranked as (
    -- under each model, the slice of the largest amount of each origin row takes the rounding remainders
    select
        parts.*,
        focus_ratio_sums(parts)  -- noqa: AL03, RF02
    from parts
),

final as (
    select
        models.allocation_model,
        ranked.billing_period,
        ranked.x_LineId,
        ranked.x_ProviderLineType,
        ranked.allocation_kind,
        ranked.attribution_method,
        ranked.attempt_id,
        ranked.experiment_id,
        ranked.unallocated_reason,
        focus_costs_with_rest(ranked, models.allocation_model)  -- noqa: AL03, RF02
    from ranked
    inner join allocation_models() as models
        on in_allocation_model(ranked.allocation_models, models.allocation_model)
)

-- noqa: enable=CP02
select * from final
