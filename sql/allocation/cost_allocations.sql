-- Every cost line split into slices under each allocation model: attributed, shared by a pool, or unallocated.
-- grain: one row per (allocation_model, line_id, allocation_kind, attribution_method, attempt_id, experiment_id,
-- unallocated_reason)
-- The slices of one line carry the line's dimensions and sum exactly to it (FOCUS 1.3 split rules).
-- materialized: view (allocation.model_slices with the line's dimensions: computed when read, never written)
with model_slices as (
    select * from allocation.model_slices
),

cost_lines as (
    select
        cost_lines.line_id,
        cost_lines.sub_account_id,
        cost_lines.service_name,
        cost_lines.charge_category,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        cost_lines.resource_id
    from normalized.cost_lines as cost_lines
),

final as (
    select
        slice_key(model_slices),  -- noqa: AL03, RF02
        model_slices.experiment_id,
        model_slices.attribution_method,
        model_slices.confidence,
        model_slices.pool_name,
        model_slices.unallocated_reason,
        model_slices.share,
        model_slices.provider,
        model_slices.billing_account_id,
        cost_lines.sub_account_id,
        model_slices.billing_period,
        model_slices.billing_currency,
        cost_lines.service_name,
        cost_lines.charge_category,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        cost_lines.resource_id,
        bases(model_slices)  -- noqa: AL03, RF02
    from model_slices
    inner join cost_lines on model_slices.line_id = cost_lines.line_id
)

select * from final
