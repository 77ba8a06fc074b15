-- Every cost line is split whole, once, under each model: its slices sum exactly to it in every basis.
-- grain: one row per (allocation_model, line_id) whose slices are missing or do not sum to the line
with cost_lines as (
    select * from normalized.cost_lines
),

cost_allocations as (
    select * from allocation.model_slices
),

allocation_models as (
    select unnest(['marginal', 'fully_loaded']) as allocation_model
),

slice_totals as (
    select
        cost_allocations.allocation_model,
        cost_allocations.line_id,
        sum(cost_allocations.billed_cost) as billed_cost,
        sum(cost_allocations.effective_cost) as effective_cost,
        sum(cost_allocations.list_cost) as list_cost,
        sum(cost_allocations.net_cost) as net_cost
    from cost_allocations
    group by cost_allocations.allocation_model, cost_allocations.line_id
),

final as (
    select
        allocation_models.allocation_model,
        cost_lines.line_id,
        cost_lines.billed_cost as line_billed_cost,
        slice_totals.billed_cost as slices_billed_cost
    from cost_lines
    cross join allocation_models
    left join slice_totals
        on
            cost_lines.line_id = slice_totals.line_id
            and allocation_models.allocation_model = slice_totals.allocation_model
    where
        slice_totals.line_id is null
        or slice_totals.billed_cost <> cost_lines.billed_cost
        or slice_totals.effective_cost <> cost_lines.effective_cost
        or slice_totals.list_cost <> cost_lines.list_cost
        or slice_totals.net_cost <> cost_lines.net_cost
)

select * from final
