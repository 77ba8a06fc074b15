-- Cost against quality per experiment: on the frontier when no cheaper comparable experiment is as good.
-- grain: one row per (experiment_id, allocation_model)
-- Comparable experiments share quality_metric and higher_is_better (val_loss is never compared with
-- accuracy). total_cost is effective_cost. on_frontier is NULL without a best metric.
-- cheapest_meeting_bar marks, per metric, the cheapest experiment that met its own threshold
-- (ties: each tied experiment is marked).
with outcomes as (
    select * from marts.experiment_outcomes
),

scored as (
    select outcomes.*
    from outcomes
    where outcomes.best_metric_value is not null and outcomes.higher_is_better is not null
),

dominated as (
    select distinct
        scored.experiment_id,
        scored.allocation_model
    from scored
    inner join scored as rival
        on
            scored.allocation_model = rival.allocation_model
            and scored.quality_metric = rival.quality_metric
            and scored.higher_is_better = rival.higher_is_better
            and scored.experiment_id <> rival.experiment_id
            and scored.total_cost > rival.total_cost
            and (
                (scored.higher_is_better and scored.best_metric_value <= rival.best_metric_value)
                or (not scored.higher_is_better and scored.best_metric_value >= rival.best_metric_value)
            )
),

cheapest as (
    select
        outcomes.allocation_model,
        outcomes.quality_metric,
        outcomes.higher_is_better,
        min(outcomes.total_cost) as cheapest_cost
    from outcomes
    where outcomes.accepted
    group by outcomes.allocation_model, outcomes.quality_metric, outcomes.higher_is_better
),

final as (
    select
        outcomes.experiment_id,
        outcomes.allocation_model,
        outcomes.team,
        outcomes.quality_metric,
        outcomes.higher_is_better,
        outcomes.quality_threshold,
        outcomes.total_cost,
        outcomes.best_metric_value,
        outcomes.best_attempt_id,
        outcomes.best_config_version,
        outcomes.accepted,
        case
            when scored.experiment_id is null then null
            else dominated.experiment_id is null
        end as on_frontier,
        coalesce(outcomes.accepted and outcomes.total_cost = cheapest.cheapest_cost, false)
            as cheapest_meeting_bar
    from outcomes
    left join scored on same_row_and_model(outcomes, scored, 'experiment_id')  -- noqa: RF02
    left join dominated
        on
            same_row_and_model(outcomes, dominated, 'experiment_id')  -- noqa: RF02
    left join cheapest
        on
            outcomes.allocation_model = cheapest.allocation_model
            and outcomes.quality_metric = cheapest.quality_metric
            and outcomes.higher_is_better = cheapest.higher_is_better
)

select * from final
