-- Every cost line split into slices, each stored once for the allocation models it belongs to.
-- grain: one row per (allocation_models, line_id, allocation_kind, attribution_method, attempt_id,
-- experiment_id, unallocated_reason)
-- materialized: view (attribution.line_attributions and allocation.unattributed_slices, each written once: the
-- attributed slices are not copied into a third table, which cost about 9 CPU s at 10M lines, docs/performance.md)
-- allocation_models is 'both' (attributed slices, and a rest no pool takes), 'marginal' or 'fully_loaded';
-- allocation.model_slices expands it. Only the line's ledger keys are carried (provider, account, period,
-- currency) and its profile's key (profile_key), never by a join on line_id: the stored slices carry the period
-- and the key, and the other ledger keys are the profile's, read from the bill's few thousand profiles
-- (normalized.cost_line_profiles) as the slices are read (contract version 4). A mart that reads a line's
-- category, service or usage type joins the profiles on profile_key too, not the lines.
-- allocation.cost_allocations adds the other dimensions on read.
with line_attributions as (
    select * from attribution.line_attributions
),

unattributed_slices as (
    select * from allocation.unattributed_slices
),

profiles as (
    select * from normalized.cost_line_profiles
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
        profiles.provider,
        profiles.billing_account_id,
        line_attributions.billing_period,
        profiles.billing_currency,
        bases(line_attributions),  -- noqa: AL03, RF02
        line_attributions.profile_key
    from line_attributions
    left join profiles on line_attributions.profile_key = profiles.profile_key
),

final as (
    select * from attributed
    union all
    select * from unattributed_slices
)

select * from final
