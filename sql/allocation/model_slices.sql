-- Every slice under each allocation model it belongs to: allocation.cost_slices with its models expanded.
-- grain: one row per (allocation_model, line_id, allocation_kind, attribution_method, attempt_id, experiment_id,
-- unallocated_reason)
-- materialized: view (a slice shared by both models is stored once; the marts read it through this view)
with cost_slices as (
    select * from allocation.cost_slices
),

final as (
    select
        allocation_models.allocation_model,
        cost_slices.line_id,
        cost_slices.allocation_kind,
        cost_slices.attempt_id,
        cost_slices.experiment_id,
        cost_slices.attribution_method,
        cost_slices.confidence,
        cost_slices.pool_name,
        cost_slices.unallocated_reason,
        cost_slices.share,
        ledger_keys(cost_slices),  -- noqa: AL03, RF02
        bases(cost_slices),  -- noqa: AL03, RF02
        cost_slices.profile_key
    from cost_slices
    inner join allocation_models() as allocation_models
        on in_allocation_model(cost_slices.allocation_models, allocation_models.allocation_model)
)

select * from final
