-- What each attempt cost under each allocation model, in the four bases; every attempt in telemetry appears.
-- grain: one row per (attempt_id, allocation_model)
-- periods: combined (an attempt's costs add up every billing period it ran in)
-- materialized: parquet (written once, as the published Parquet; the build reads it through a view)
with attempts as (
    select * from staging.attempts
),

period_slice_sums as (
    select * from allocation.period_slice_sums
),

billing_periods as (
    select * from normalized.billing_periods
),

cost_estimates as (
    select * from marts.cost_estimates
),

estimate_totals as (
    select
        cost_estimates.attempt_id,
        sum(cost_estimates.estimated_hours) as unbilled_hours,
        sum(cost_estimates.estimated_cost) as unbilled_estimate
    from cost_estimates
    group by cost_estimates.attempt_id
),

overlap_finality as (
    -- the periods an attempt's run overlaps (its slices' periods are ranked in slice_totals);
    -- one row per attempt: they are the same periods under either model
    select
        attempts.attempt_id,
        min(
            case billing_periods.period_status when 'open' then 1 when 'provisional' then 2 else 3 end
        ) as status_rank
    from attempts
    inner join billing_periods
        on
            coalesce(attempts.provider, billing_periods.provider) = billing_periods.provider
            and attempts.started_at < billing_periods.billing_period_end
            and coalesce(attempts.ended_at, attempts.started_at) >= billing_periods.billing_period_start
    group by attempts.attempt_id
),

period_ranks as (
    -- each billing period's status as a rank: the least final of an attempt's periods decides
    select
        billing_periods.provider,
        billing_periods.billing_account_id,
        billing_periods.billing_period,
        case billing_periods.period_status when 'open' then 1 when 'provisional' then 2 else 3 end as status_rank
    from billing_periods
),

slice_totals as (
    -- each period's sums of the stored slices, by the models they belong to, added before the
    -- models are expanded: a slice of both models is not summed twice
    select
        period_slice_sums.allocation_models,
        period_slice_sums.attempt_id,
        sum_bases(period_slice_sums),  -- noqa: AL03, RF02
        sum(period_slice_sums.effective_cost) filter (
            where period_slice_sums.attribution_method = 'resource_time'
        ) as estimated_cost,
        sum(period_slice_sums.effective_cost) filter (
            where period_slice_sums.allocation_kind = 'shared'
        ) as shared_cost,
        min(period_slice_sums.billing_currency) as billing_currency,
        sum(period_slice_sums.cost_slices) as slices,
        -- the least final period among the slices' periods, in the same pass over the sums
        min(period_ranks.status_rank) as status_rank
    from period_slice_sums
    left join period_ranks on same_billing_period(period_slice_sums, period_ranks)  -- noqa: RF02
    where period_slice_sums.attempt_id is not null
    group by period_slice_sums.allocation_models, period_slice_sums.attempt_id
),

own_model_totals as (
    -- each model's own slices of an attempt: those of both models are joined as slice_totals has them
    select
        allocation_models.allocation_model,
        slice_totals.*
    from slice_totals
    inner join allocation_models() as allocation_models
        on in_allocation_model(slice_totals.allocation_models, allocation_models.allocation_model)
    where not in_both_allocation_models(slice_totals.allocation_models)
),

attempt_totals as (
    -- every attempt under each model: its slices of both models plus those of the model alone, at
    -- most one row of each, so two joined rows are added instead of a second aggregate over the
    -- slices expanded to the models (0.4 CPU s less for 600,000 attempts)
    select
        attempts.*,
        allocation_models.allocation_model,
        coalesce(both_models_totals.billed_cost, 0) + coalesce(own_model_totals.billed_cost, 0) as billed_cost,
        coalesce(both_models_totals.effective_cost, 0)
        + coalesce(own_model_totals.effective_cost, 0) as effective_cost,
        coalesce(both_models_totals.list_cost, 0) + coalesce(own_model_totals.list_cost, 0) as list_cost,
        coalesce(both_models_totals.net_cost, 0) + coalesce(own_model_totals.net_cost, 0) as net_cost,
        coalesce(both_models_totals.estimated_cost, 0)
        + coalesce(own_model_totals.estimated_cost, 0) as estimated_cost,
        coalesce(both_models_totals.shared_cost, 0) + coalesce(own_model_totals.shared_cost, 0) as shared_cost,
        least(both_models_totals.billing_currency, own_model_totals.billing_currency) as billing_currency,
        coalesce(both_models_totals.slices, 0) + coalesce(own_model_totals.slices, 0) as slices,
        least(both_models_totals.status_rank, own_model_totals.status_rank) as status_rank
    from attempts
    cross join allocation_models() as allocation_models
    left join slice_totals as both_models_totals
        on
            attempts.attempt_id = both_models_totals.attempt_id
            and in_both_allocation_models(both_models_totals.allocation_models)
    left join own_model_totals
        on
            attempts.attempt_id = own_model_totals.attempt_id
            and allocation_models.allocation_model = own_model_totals.allocation_model
),

final as (
    select
        attempt_totals.attempt_id,
        attempt_totals.experiment_id,
        attempt_totals.allocation_model,
        money_bases(attempt_totals),  -- noqa: AL03, RF02
        money(attempt_totals.estimated_cost) as estimated_cost,
        money(attempt_totals.shared_cost) as shared_cost,
        attempt_totals.billing_currency,
        cast(attempt_totals.slices as bigint) as cost_slices,
        attempt_totals.status,
        attempt_totals.parent_attempt_id,
        attempt_totals.capacity_type,
        attempt_totals.instance_type,
        attempt_totals.gpu_type,
        attempt_totals.gpu_count,
        attempt_totals.submitted_at,
        attempt_totals.started_at,
        attempt_totals.ended_at,
        (epoch_us(attempt_totals.ended_at) - epoch_us(attempt_totals.started_at))
        / 3600000000.0 as wall_hours,
        (epoch_us(attempt_totals.ended_at) - epoch_us(attempt_totals.started_at))
        / 3600000000.0
        * coalesce(attempt_totals.gpu_count, 0) as gpu_hours,
        coalesce(estimate_totals.unbilled_hours, 0) as unbilled_hours,
        money(coalesce(estimate_totals.unbilled_estimate, 0)) as unbilled_estimate,
        case when estimate_totals.attempt_id is null then 'billed' else 'estimated' end as cost_status,
        case least(attempt_totals.status_rank, overlap_finality.status_rank)
            when 1 then 'open' when 2 then 'provisional' when 3 then 'final'
        end as period_status,
        coalesce(
            estimate_totals.attempt_id is null
            and least(attempt_totals.status_rank, overlap_finality.status_rank) = 3,
            false
        ) as is_final
    from attempt_totals
    left join estimate_totals on attempt_totals.attempt_id = estimate_totals.attempt_id
    left join overlap_finality on attempt_totals.attempt_id = overlap_finality.attempt_id
)

select * from final
