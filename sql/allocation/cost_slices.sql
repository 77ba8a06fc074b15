-- Every cost line split into slices, each stored once for the allocation models it belongs to.
-- grain: one row per (allocation_models, line_id, allocation_kind, attribution_method, attempt_id,
-- experiment_id, unallocated_reason)
-- materialized: view (attribution.line_attributions and allocation.unattributed_slices, each written once: the
-- attributed slices are not copied into a third table, which cost about 9 CPU s at 10M lines, docs/performance.md)
-- allocation_models is 'both' (attributed slices, and a rest no pool takes), 'marginal' or 'fully_loaded';
-- allocation.model_slices expands it. Only the line's ledger keys are carried (provider, account, period,
-- currency) and its profile's key (profile_key), from the attribution steps, never by a join on line_id: a mart
-- that reads a line's category, service or usage type joins the bill's few thousand profiles
-- (normalized.cost_line_profiles) on it, not the lines. allocation.cost_allocations adds the other dimensions
-- on read.
with line_attributions as (
    select * from attribution.line_attributions
),

unattributed_slices as (
    select * from allocation.unattributed_slices
),

attributed as (
    select
        'both' as allocation_models,
        line_attributions.line_id,
        'attributed' as allocation_kind,
        line_attributions.attempt_id,
        line_attributions.experiment_id,
        line_attributions.attribution_method,
        line_attributions.confidence,
        cast(null as varchar) as pool_name,
        cast(null as varchar) as unallocated_reason,
        line_attributions.share,
        line_attributions.provider,
        line_attributions.billing_account_id,
        line_attributions.billing_period,
        line_attributions.billing_currency,
        line_attributions.billed_cost,
        line_attributions.effective_cost,
        line_attributions.list_cost,
        line_attributions.net_cost,
        line_attributions.profile_key
    from line_attributions
),

final as (
    select * from attributed
    union all
    select * from unattributed_slices
)

select * from final
