-- Cost no attempt, experiment or pool took, by why, in the four bases.
-- grain: one row per (allocation_model, provider, billing_period, billing_currency, unallocated_reason, service_name)
with cost_slices as (
    select * from allocation.cost_slices
),

profiles as (
    select
        profiles.profile_key,
        profiles.service_name
    from normalized.cost_line_profiles as profiles
),

allocation_models as (
    select unnest(['marginal', 'fully_loaded']) as allocation_model
),

stored_sums as (
    -- each stored slice once, by the models it belongs to, before the models are expanded: a
    -- rest no pool takes is one slice of both models, joined once to its line's profile (the
    -- service is a profile column: the join holds the bill's profiles, not its lines)
    select
        cost_slices.allocation_models,
        cost_slices.provider,
        cost_slices.billing_period,
        cost_slices.billing_currency,
        cost_slices.unallocated_reason,
        profiles.service_name,
        count(*) as cost_lines,
        sum(cost_slices.billed_cost) as billed_cost,
        sum(cost_slices.effective_cost) as effective_cost,
        sum(cost_slices.list_cost) as list_cost,
        sum(cost_slices.net_cost) as net_cost
    from cost_slices
    inner join profiles on cost_slices.profile_key = profiles.profile_key
    where cost_slices.allocation_kind = 'unallocated'
    group by
        cost_slices.allocation_models,
        cost_slices.provider,
        cost_slices.billing_period,
        cost_slices.billing_currency,
        cost_slices.unallocated_reason,
        profiles.service_name
),

final as (
    select
        allocation_models.allocation_model,
        stored_sums.provider,
        stored_sums.billing_period,
        stored_sums.billing_currency,
        stored_sums.unallocated_reason,
        stored_sums.service_name,
        cast(sum(stored_sums.cost_lines) as bigint) as cost_lines,
        cast(sum(stored_sums.billed_cost) as decimal(38, 10)) as billed_cost,
        cast(sum(stored_sums.effective_cost) as decimal(38, 10)) as effective_cost,
        cast(sum(stored_sums.list_cost) as decimal(38, 10)) as list_cost,
        cast(sum(stored_sums.net_cost) as decimal(38, 10)) as net_cost
    from stored_sums
    inner join allocation_models
        on in_allocation_model(stored_sums.allocation_models, allocation_models.allocation_model)
    group by
        allocation_models.allocation_model,
        stored_sums.provider,
        stored_sums.billing_period,
        stored_sums.billing_currency,
        stored_sums.unallocated_reason,
        stored_sums.service_name
)

select * from final
