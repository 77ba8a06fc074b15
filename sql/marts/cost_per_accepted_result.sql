-- Cost per accepted result of a portfolio: all its training cost over its accepted experiments.
-- grain: one row per (allocation_model, dimension, dimension_value)
-- dimension is all, team, model_version, config_version, capacity_type or month (YYYY-MM of the
-- attempt's start, else its submission). Training cost (effective_cost basis) is what was placed on
-- a telemetry attempt, plus lines tagged to a telemetry experiment alone (those have no attempt
-- dimensions: NULL dimension_value). Inference and API spend never reaches an attempt or a training
-- experiment, so it is never in these figures. An accepted experiment counts once, in the groups of
-- its accepting attempt (the first succeeded attempt that met the bar). No accepted result: the cost
-- is NULL with reason no_accepted_result. The quotient is exact, rounded half away from zero to 10 places.
with attempt_costs as (
    select * from marts.attempt_costs
),

experiment_costs as (
    select * from marts.experiment_costs
),

outcomes as (
    select * from marts.experiment_outcomes
),

attempts as (
    select * from staging.attempts
),

experiments as (
    select * from staging.experiments
),

dimensions as (
    select unnest(['all', 'team', 'model_version', 'config_version', 'capacity_type', 'month']) as dimension
),

attempt_items as (
    select
        attempt_costs.allocation_model,
        attempt_costs.experiment_id,
        attempt_costs.attempt_id,
        experiments.team,
        attempts.model_version,
        attempts.config_version,
        attempts.capacity_type,
        strftime(coalesce(attempts.started_at, attempts.submitted_at), '%Y-%m') as month,
        attempt_costs.effective_cost as cost,
        attempt_costs.status in ('failed', 'interrupted', 'timeout') as failed
    from attempt_costs
    inner join attempts on attempt_costs.attempt_id = attempts.attempt_id
    left join experiments on attempt_costs.experiment_id = experiments.experiment_id
),

cost_items as (
    -- the attempts summed per experiment, dimension values and failure before they are crossed
    -- with the dimensions: one row per combination instead of one per attempt
    select
        attempt_items.allocation_model,
        attempt_items.experiment_id,
        attempt_items.team,
        attempt_items.model_version,
        attempt_items.config_version,
        attempt_items.capacity_type,
        attempt_items.month,
        attempt_items.failed,
        count(attempt_items.attempt_id) as attempts,
        sum(attempt_items.cost) as cost
    from attempt_items
    group by all
    union all
    select
        experiment_costs.allocation_model,
        experiment_costs.experiment_id,
        experiment_costs.team,
        null as model_version,
        null as config_version,
        null as capacity_type,
        null as month,
        false as failed,
        0 as attempts,
        experiment_costs.experiment_only_cost as cost
    from experiment_costs
    where experiment_costs.experiment_only_cost <> 0
),

accepted_items as (
    select attempt_items.*
    from attempt_items
    inner join outcomes
        on
            attempt_items.attempt_id = outcomes.accepting_attempt_id
            and attempt_items.allocation_model = outcomes.allocation_model
    where outcomes.accepted
),

cost_groups as (
    select
        cost_items.allocation_model,
        dimensions.dimension,
        case dimensions.dimension
            when 'all' then 'all'
            when 'team' then cost_items.team
            when 'model_version' then cost_items.model_version
            when 'config_version' then cost_items.config_version
            when 'capacity_type' then cost_items.capacity_type
            when 'month' then cost_items.month
        end as dimension_value,
        cost_items.experiment_id,
        cost_items.attempts,
        cost_items.cost,
        cost_items.failed
    from cost_items
    cross join dimensions
),

accepted_groups as (
    select
        accepted_items.allocation_model,
        dimensions.dimension,
        case dimensions.dimension
            when 'all' then 'all'
            when 'team' then accepted_items.team
            when 'model_version' then accepted_items.model_version
            when 'config_version' then accepted_items.config_version
            when 'capacity_type' then accepted_items.capacity_type
            when 'month' then accepted_items.month
        end as dimension_value,
        count(distinct accepted_items.experiment_id) as accepted_results
    from accepted_items
    cross join dimensions
    group by all
),

experiment_groups as (
    -- each group's rows of one experiment summed first, so a group counts its experiments as rows:
    -- count(distinct) over every attempt crossed with the dimensions cost the 1M skewed benchmark
    -- (600,000 attempts) 0.97 CPU s against 0.55 with the attempts summed
    select
        cost_groups.allocation_model,
        cost_groups.dimension,
        cost_groups.dimension_value,
        cost_groups.experiment_id,
        sum(cost_groups.attempts) as attempts,
        sum(cost_groups.cost) as cost,
        sum(cost_groups.cost) filter (where cost_groups.failed) as failed_cost
    from cost_groups
    group by all
),

totals as (
    select
        experiment_groups.allocation_model,
        experiment_groups.dimension,
        experiment_groups.dimension_value,
        count(experiment_groups.experiment_id) as experiments,
        cast(sum(experiment_groups.attempts) as bigint) as attempts,
        money(sum(experiment_groups.cost)) as total_cost,
        money(coalesce(sum(experiment_groups.failed_cost), 0)) as failed_attempt_cost
    from experiment_groups
    group by experiment_groups.allocation_model, experiment_groups.dimension, experiment_groups.dimension_value
),

counted as (
    select
        totals.*,
        coalesce(accepted_groups.accepted_results, 0) as accepted_results,
        cast(totals.total_cost * 10000000000 as hugeint) as cost_units
    from totals
    left join accepted_groups
        on
            totals.allocation_model = accepted_groups.allocation_model
            and totals.dimension = accepted_groups.dimension
            and totals.dimension_value is not distinct from accepted_groups.dimension_value
),

final as (
    select
        counted.allocation_model,
        counted.dimension,
        counted.dimension_value,
        counted.experiments,
        counted.attempts,
        counted.accepted_results,
        counted.total_cost,
        counted.failed_attempt_cost,
        case
            when counted.accepted_results > 0
                then
                    cast(
                        sign(counted.cost_units)
                        * ((abs(counted.cost_units) * 2 + counted.accepted_results) // (2 * counted.accepted_results))
                        as decimal(38, 0)
                    )
                    * cast(0.0000000001 as decimal(11, 10))
        end as cost_per_accepted_result,
        case when counted.accepted_results = 0 then 'no_accepted_result' end as no_result_reason
    from counted
)

select * from final
