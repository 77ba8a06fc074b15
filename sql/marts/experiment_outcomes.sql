-- Per experiment: total and failed-attempt cost, best metric against the quality bar, accepted, time to target.
-- grain: one row per (experiment_id, allocation_model)
-- Money is on the effective_cost basis (marts.experiment_costs: every attempt, failed ones included,
-- plus lines tagged to the experiment alone). A scored attempt succeeded and reported the experiment's
-- quality_metric (or no metric name); it meets the bar when metric_value >= quality_threshold
-- (higher_is_better) or <= quality_threshold (lower is better). accepted is NULL without a full bar.
with experiment_costs as (
    select * from marts.experiment_costs
),

attempts as (
    select * from staging.attempts
),

experiments as (
    select * from staging.experiments
),

scored as (
    select
        attempts.attempt_id,
        attempts.experiment_id,
        attempts.config_version,
        attempts.metric_value,
        attempts.ended_at,
        experiments.higher_is_better,
        case
            when experiments.higher_is_better then attempts.metric_value >= experiments.quality_threshold
            when not experiments.higher_is_better then attempts.metric_value <= experiments.quality_threshold
        end as meets_bar
    from attempts
    inner join experiments on attempts.experiment_id = experiments.experiment_id
    where
        attempts.status = 'succeeded'
        and attempts.metric_value is not null
        and coalesce(attempts.metric_name, experiments.quality_metric) = experiments.quality_metric
),

ranked as (
    select
        scored.*,
        row_number() over (
            partition by scored.experiment_id
            order by
                case when scored.higher_is_better then -scored.metric_value else scored.metric_value end,
                scored.ended_at,
                scored.attempt_id
        ) as best_rank,
        row_number() over (
            partition by scored.experiment_id, scored.meets_bar
            order by scored.ended_at, scored.attempt_id
        ) as meets_rank
    from scored
),

best as (
    select
        ranked.experiment_id,
        ranked.attempt_id as best_attempt_id,
        ranked.metric_value as best_metric_value,
        ranked.config_version as best_config_version
    from ranked
    where ranked.best_rank = 1
),

first_accepting as (
    select
        ranked.experiment_id,
        ranked.attempt_id as accepting_attempt_id,
        ranked.ended_at as accepted_at
    from ranked
    where ranked.meets_bar and ranked.meets_rank = 1
),

attempt_summary as (
    select
        attempts.experiment_id,
        count(*) filter (where attempts.status = 'succeeded') as succeeded_attempts,
        min(coalesce(attempts.submitted_at, attempts.started_at)) as first_submitted_at
    from attempts
    group by attempts.experiment_id
),

final as (
    select
        experiment_costs.experiment_id,
        experiment_costs.allocation_model,
        experiment_costs.team,
        experiments.quality_metric,
        experiments.quality_threshold,
        experiments.higher_is_better,
        experiment_costs.attempts,
        coalesce(attempt_summary.succeeded_attempts, 0) as succeeded_attempts,
        experiment_costs.failed_attempts,
        experiment_costs.effective_cost as total_cost,
        experiment_costs.failed_attempt_cost,
        experiment_costs.experiment_only_cost,
        best.best_attempt_id,
        best.best_metric_value,
        best.best_config_version,
        case
            when
                experiments.quality_metric is null
                or experiments.quality_threshold is null
                or experiments.higher_is_better is null
                then null
            else first_accepting.accepting_attempt_id is not null
        end as accepted,
        case
            when
                experiments.quality_metric is null
                or experiments.quality_threshold is null
                or experiments.higher_is_better is null
                then 'no_quality_bar'
            when first_accepting.accepting_attempt_id is not null then 'met_bar'
            when best.best_attempt_id is not null then 'below_bar'
            when coalesce(attempt_summary.succeeded_attempts, 0) > 0 then 'no_metric_reported'
            else 'no_succeeded_attempt'
        end as acceptance_status,
        first_accepting.accepting_attempt_id,
        attempt_summary.first_submitted_at,
        first_accepting.accepted_at,
        (epoch_us(first_accepting.accepted_at) - epoch_us(attempt_summary.first_submitted_at))
        / 3600000000.0 as time_to_target_hours
    from experiment_costs
    left join experiments on experiment_costs.experiment_id = experiments.experiment_id
    left join attempt_summary on experiment_costs.experiment_id = attempt_summary.experiment_id
    left join best on experiment_costs.experiment_id = best.experiment_id
    left join first_accepting on experiment_costs.experiment_id = first_accepting.experiment_id
)

select * from final
