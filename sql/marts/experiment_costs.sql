-- What each experiment cost per allocation model: all its attempts, failed ones included, plus lines tagged to it.
-- grain: one row per (experiment_id, allocation_model)
-- periods: combined (an experiment's costs add up every billing period)
-- failed_attempt_cost and experiment_only_cost are on the effective_cost basis.
with attempt_costs as (
    select * from marts.attempt_costs
),

period_slice_sums as (
    select * from allocation.period_slice_sums
),

experiments as (
    select * from staging.experiments
),

billing_periods as (
    select * from normalized.billing_periods
),

attempt_statuses as (
    select
        attempt_costs.allocation_model,
        attempt_costs.experiment_id,
        sum(attempt_costs.unbilled_estimate) as unbilled_estimate,
        max(case when attempt_costs.cost_status = 'estimated' then 1 else 0 end) as any_estimated,
        min(case when attempt_costs.is_final then 1 else 0 end) as all_final,
        min(
            case attempt_costs.period_status when 'open' then 1 when 'provisional' then 2 when 'final' then 3 end
        ) as status_rank
    from attempt_costs
    group by attempt_costs.allocation_model, attempt_costs.experiment_id
),

experiment_only_sums as (
    -- each period's sums of the slices placed on an experiment and no attempt (lines tagged to it),
    -- under each model they belong to
    select
        allocation_models.allocation_model,
        period_slice_sums.*
    from period_slice_sums
    inner join allocation_models() as allocation_models
        on in_allocation_model(period_slice_sums.allocation_models, allocation_models.allocation_model)
    where period_slice_sums.attempt_id is null
),

experiment_only_periods as (
    select
        experiment_only_sums.allocation_model,
        experiment_only_sums.experiment_id,
        min(
            case billing_periods.period_status when 'open' then 1 when 'provisional' then 2 else 3 end
        ) as status_rank
    from experiment_only_sums
    inner join billing_periods on same_billing_period(experiment_only_sums, billing_periods)  -- noqa: RF02
    group by experiment_only_sums.allocation_model, experiment_only_sums.experiment_id
),

known_experiments as (
    select attempt_costs.experiment_id from attempt_costs
    union
    select experiments.experiment_id from experiments
),

attempt_totals as (
    select
        attempt_costs.allocation_model,
        attempt_costs.experiment_id,
        count(*) as attempts,
        count(*) filter (
            where attempt_costs.status in ('failed', 'interrupted', 'timeout')
        ) as failed_attempts,
        sum_bases(attempt_costs),  -- noqa: AL03
        sum(attempt_costs.estimated_cost) as estimated_cost,
        sum(attempt_costs.effective_cost) filter (
            where attempt_costs.status in ('failed', 'interrupted', 'timeout')
        ) as failed_attempt_cost,
        min(attempt_costs.started_at) as first_started_at,
        max(attempt_costs.ended_at) as last_ended_at
    from attempt_costs
    group by attempt_costs.allocation_model, attempt_costs.experiment_id
),

experiment_only as (
    select
        experiment_only_sums.allocation_model,
        experiment_only_sums.experiment_id,
        sum_bases(experiment_only_sums)  -- noqa: AL03
    from experiment_only_sums
    group by experiment_only_sums.allocation_model, experiment_only_sums.experiment_id
),

experiment_models as (
    -- every experiment under each allocation model, zero cost included
    select
        known_experiments.experiment_id,
        allocation_models.allocation_model
    from known_experiments
    cross join allocation_models() as allocation_models
),

final as (
    select
        experiment_models.experiment_id,
        experiment_models.allocation_model,
        experiments.team,
        coalesce(attempt_totals.attempts, 0) as attempts,
        coalesce(attempt_totals.failed_attempts, 0) as failed_attempts,
        money(
            coalesce(attempt_totals.billed_cost, 0) + coalesce(experiment_only.billed_cost, 0)
        ) as billed_cost,
        money(
            coalesce(attempt_totals.effective_cost, 0)
            + coalesce(experiment_only.effective_cost, 0)
        ) as effective_cost,
        money(
            coalesce(attempt_totals.list_cost, 0) + coalesce(experiment_only.list_cost, 0)
        ) as list_cost,
        money(
            coalesce(attempt_totals.net_cost, 0) + coalesce(experiment_only.net_cost, 0)
        ) as net_cost,
        money(coalesce(attempt_totals.estimated_cost, 0)) as estimated_cost,
        money(
            coalesce(attempt_totals.failed_attempt_cost, 0)
        ) as failed_attempt_cost,
        money(
            coalesce(experiment_only.effective_cost, 0)
        ) as experiment_only_cost,
        attempt_totals.first_started_at,
        attempt_totals.last_ended_at,
        money(coalesce(attempt_statuses.unbilled_estimate, 0)) as unbilled_estimate,
        case when attempt_statuses.any_estimated = 1 then 'estimated' else 'billed' end as cost_status,
        case least(
            coalesce(attempt_statuses.status_rank, 3), coalesce(experiment_only_periods.status_rank, 3)
        )
            when 1 then 'open'
            when 2 then 'provisional'
            else case
                when
                    attempt_statuses.status_rank is not null or experiment_only_periods.status_rank is not null
                    then 'final'
            end
        end as period_status,
        coalesce(attempt_statuses.all_final, 1) = 1
        and coalesce(attempt_statuses.any_estimated, 0) = 0
        and coalesce(experiment_only_periods.status_rank, 3) = 3
        and (attempt_statuses.all_final is not null or experiment_only_periods.status_rank is not null)
            as is_final
    from experiment_models
    left join experiments on experiment_models.experiment_id = experiments.experiment_id
    left join attempt_totals
        on same_row_and_model(experiment_models, attempt_totals, 'experiment_id')  -- noqa: RF02
    left join experiment_only
        on same_row_and_model(experiment_models, experiment_only, 'experiment_id')  -- noqa: RF02
    left join attempt_statuses
        on same_row_and_model(experiment_models, attempt_statuses, 'experiment_id')  -- noqa: RF02
    left join experiment_only_periods
        on same_row_and_model(experiment_models, experiment_only_periods, 'experiment_id')  -- noqa: RF02
)

select * from final
