-- How each attempt's and experiment's cost moved since the previous published snapshot, and why.
-- grain: one row per (change_level, experiment_id, attempt_id, allocation_model) whose cost or status moved
-- periods: combined (changes per attempt and experiment add up every billing period)
-- materialized: parquet (written once, as the published Parquet; the build reads it through a view)
-- total = billed_cost + unbilled_estimate (billed_cost basis). Reasons, in this order:
-- restated_delivery (a period's delivery was replaced and hours billed before changed),
-- late_rows (the bill reached hours it did not cover, with no estimate replaced),
-- new_telemetry (the attempt is new, its telemetry changed, or a running attempt's estimate grew),
-- config_changed (the settings that change results differ), estimate_replaced (estimated hours are
-- billed now). An experiment also takes restated_delivery (or late_rows, if no delivery was
-- replaced) when the lines placed on it and no attempt moved, such as a tax line tagged to it; an
-- attempt does when only its estimate's price from the bill moved.
-- Before the first publish every attempt and experiment is listed as new_telemetry.
with attempt_costs as (
    select * from marts.attempt_costs
),

experiment_costs as (
    select * from marts.experiment_costs
),

estimate_errors as (
    select * from marts.estimate_errors
),

cost_slices as (
    select * from allocation.cost_slices
),

cost_lines as (
    select
        cost_lines.line_id,
        cost_lines.billing_period,
        cost_lines.charge_period_start,
        cost_lines.profile_key
    from normalized.cost_line_facts as cost_lines
),

profiles as (
    select * from normalized.cost_line_profiles
),

billing_periods as (
    select * from normalized.billing_periods
),

attempts as (
    select * from staging.attempts
),

attempt_resources as (
    select * from staging.attempt_resources
),

period_settings as (
    select * from config.periods
),

previous_snapshot as (
    select * from staging.previous_snapshot
),

previous_attempt_costs as (
    select * from staging.previous_attempt_costs
),

previous_experiment_costs as (
    select * from staging.previous_experiment_costs
),

previous_billing_periods as (
    select * from staging.previous_billing_periods
),

previous_attempts as (
    select * from staging.previous_attempts
),

previous_attempt_resources as (
    select * from staging.previous_attempt_resources
),

snapshot_pairs as (
    select
        previous_snapshot.run_id as previous_run_id,
        previous_snapshot.config_fingerprint as previous_fingerprint,
        period_settings.config_fingerprint
    from period_settings
    left join previous_snapshot on previous_snapshot.run_id is not null
),

snapshot_state as (
    select
        snapshot_pairs.previous_run_id,
        snapshot_pairs.previous_run_id is not null as has_previous,
        -- a snapshot from before config.periods has no fingerprint: not counted as a change
        snapshot_pairs.previous_fingerprint is not null
        and snapshot_pairs.previous_fingerprint <> coalesce(snapshot_pairs.config_fingerprint, '')
            as config_changed
    from snapshot_pairs
),

period_changes as (
    select
        billing_periods.provider,
        billing_periods.billing_account_id,
        billing_periods.billing_period,
        -- how far the previous bill's usage reached (snapshots from before usage_until: its last line)
        coalesce(previous_billing_periods.usage_until, previous_billing_periods.last_charge_period_end)
            as previous_billed_until,
        previous_billing_periods.billing_period is not null
        and billing_periods.source_deliveries <> previous_billing_periods.source_deliveries as delivery_replaced
    from billing_periods
    left join previous_billing_periods on same_billing_period(billing_periods, previous_billing_periods)  -- noqa: RF02
),

profile_changes as (
    -- each profile's periods with how far the previous bill reached: a line's provider and account
    -- are its profile's, so the lines and slices meet the periods on (profile_key, billing_period)
    select
        profiles.profile_key,
        period_changes.billing_period,
        period_changes.previous_billed_until
    from profiles
    inner join period_changes
        on
            profiles.provider = period_changes.provider
            and profiles.billing_account_id is not distinct from period_changes.billing_account_id
),

global_changes as (
    select coalesce(max(case when period_changes.delivery_replaced then 1 else 0 end), 0) = 1 as any_delivery_replaced
    from period_changes
),

late_lines as (
    -- lines starting where the previous snapshot's bill stopped: the night's new hours, not the month
    select cost_lines.line_id
    from cost_lines
    inner join profile_changes on same_profile_period(cost_lines, profile_changes)  -- noqa: RF02
    where cost_lines.charge_period_start >= profile_changes.previous_billed_until
),

stored_late_slices as (
    -- billed for hours the previous snapshot's bill did not reach (or periods it did not have);
    -- each stored slice once, by the models it belongs to, before the models are expanded; the
    -- late lines are looked up by id, so no hash table holds the month's lines
    select
        cost_slices.allocation_models,
        cost_slices.attempt_id,
        sum(cost_slices.billed_cost) as late_billed
    from cost_slices
    inner join profile_changes on same_profile_period(cost_slices, profile_changes)  -- noqa: RF02
    where
        cost_slices.attempt_id is not null
        and (
            profile_changes.previous_billed_until is null
            or cost_slices.line_id in (select late_lines.line_id from late_lines)
        )
    group by cost_slices.allocation_models, cost_slices.attempt_id
),

late_slices as (
    select
        allocation_models.allocation_model,
        stored_late_slices.attempt_id,
        sum(stored_late_slices.late_billed) as late_billed
    from stored_late_slices
    inner join allocation_models() as allocation_models
        on in_allocation_model(stored_late_slices.allocation_models, allocation_models.allocation_model)
    group by allocation_models.allocation_model, stored_late_slices.attempt_id
),

attempt_row_changes as (
    select coalesce(attempts.attempt_id, previous_attempts.attempt_id) as attempt_id
    from attempts
    full outer join previous_attempts on attempts.attempt_id = previous_attempts.attempt_id
    where
        attempts.attempt_id is null
        or previous_attempts.attempt_id is null
        or attempts.experiment_id is distinct from previous_attempts.experiment_id
        or attempts.status is distinct from previous_attempts.status
        or attempts.instance_type is distinct from previous_attempts.instance_type
        or attempts.region is distinct from previous_attempts.region
        or attempts.capacity_type is distinct from previous_attempts.capacity_type
        or attempts.gpu_count is distinct from previous_attempts.gpu_count
        or attempts.started_at is distinct from previous_attempts.started_at
        or attempts.ended_at is distinct from previous_attempts.ended_at
),

resource_row_changes as (
    select coalesce(attempt_resources.attempt_id, previous_attempt_resources.attempt_id) as attempt_id
    from attempt_resources
    full outer join previous_attempt_resources
        on
            same_attempt_resource(attempt_resources, previous_attempt_resources)  -- noqa: RF02
            and attempt_resources.started_at is not distinct from previous_attempt_resources.started_at
            and attempt_resources.ended_at is not distinct from previous_attempt_resources.ended_at
            and attempt_resources.gpu_count is not distinct from previous_attempt_resources.gpu_count
    where attempt_resources.attempt_id is null or previous_attempt_resources.attempt_id is null
),

telemetry_changes as (
    select attempt_row_changes.attempt_id from attempt_row_changes
    union
    select resource_row_changes.attempt_id from resource_row_changes
),

replaced_estimates as (
    select distinct estimate_errors.attempt_id
    from estimate_errors
    where estimate_errors.replaced_since_previous
),

attempt_pairs as (
    select
        snapshot_cost_pair(attempt_costs, previous_attempt_costs, 'attempt_id'),  -- noqa: AL03, RF02
        coalesce(attempt_costs.experiment_id, previous_attempt_costs.experiment_id) as experiment_id
    from attempt_costs
    full outer join previous_attempt_costs
        on same_row_and_model(attempt_costs, previous_attempt_costs, 'attempt_id')  -- noqa: RF02
),

attempt_flags as (
    select
        attempt_pairs.*,
        snapshot_state.previous_run_id,
        snapshot_state.has_previous,
        snapshot_state.config_changed,
        global_changes.any_delivery_replaced,
        coalesce(late_slices.late_billed, 0) as late_billed,
        replaced_estimates.attempt_id is not null as estimate_replaced,
        telemetry_changes.attempt_id is not null as telemetry_changed,
        coalesce(attempt_pairs.billed_cost, 0) - coalesce(late_slices.late_billed, 0)
        <> coalesce(attempt_pairs.previous_billed_cost, 0) as billed_hours_changed,
        coalesce(attempt_pairs.billed_cost, 0) + coalesce(attempt_pairs.unbilled_estimate, 0)
        <> coalesce(attempt_pairs.previous_billed_cost, 0) + attempt_pairs.previous_unbilled_estimate
            as total_changed
    from attempt_pairs
    cross join snapshot_state
    cross join global_changes
    left join late_slices on same_row_and_model(attempt_pairs, late_slices, 'attempt_id')  -- noqa: RF02
    left join replaced_estimates on attempt_pairs.attempt_id = replaced_estimates.attempt_id
    left join telemetry_changes on attempt_pairs.attempt_id = telemetry_changes.attempt_id
),

attempt_repricing as (
    -- the estimate shrank with no hours billed and no telemetry or config change: the bill's list
    -- price for the instance type moved (price_source billing)
    select
        attempt_flags.*,
        attempt_flags.has_previous
        and attempt_flags.in_previous
        and attempt_flags.in_current
        and coalesce(attempt_flags.unbilled_estimate, 0) < attempt_flags.previous_unbilled_estimate
        and not attempt_flags.estimate_replaced
        and not attempt_flags.telemetry_changed
        and not attempt_flags.config_changed as estimate_repriced
    from attempt_flags
),

attempt_reasons as (
    select
        attempt_repricing.*,
        attempt_repricing.has_previous
        and attempt_repricing.any_delivery_replaced
        and (attempt_repricing.billed_hours_changed or attempt_repricing.estimate_repriced) as restated_delivery,
        attempt_repricing.has_previous
        and (
            (attempt_repricing.late_billed <> 0 and not attempt_repricing.estimate_replaced)
            or (attempt_repricing.estimate_repriced and not attempt_repricing.any_delivery_replaced)
        ) as late_rows,
        not attempt_repricing.has_previous
        or not attempt_repricing.in_previous
        or not attempt_repricing.in_current
        or attempt_repricing.telemetry_changed
        or coalesce(attempt_repricing.unbilled_estimate, 0) > attempt_repricing.previous_unbilled_estimate
        or (
            attempt_repricing.billed_hours_changed
            and not attempt_repricing.any_delivery_replaced
            and not attempt_repricing.config_changed
        ) as new_telemetry,
        attempt_repricing.config_changed as config_changed_reason,
        attempt_repricing.has_previous and attempt_repricing.estimate_replaced as estimate_replaced_reason
    from attempt_repricing
),

experiment_reasons as (
    select
        attempt_reasons.experiment_id,
        attempt_reasons.allocation_model,
        max(case when attempt_reasons.restated_delivery and attempt_reasons.total_changed then 1 else 0 end)
            as restated_delivery,
        max(case when attempt_reasons.late_rows and attempt_reasons.total_changed then 1 else 0 end) as late_rows,
        max(case when attempt_reasons.new_telemetry and attempt_reasons.total_changed then 1 else 0 end)
            as new_telemetry,
        max(case when attempt_reasons.estimate_replaced_reason then 1 else 0 end) as estimate_replaced,
        sum(coalesce(attempt_reasons.billed_cost, 0)) as attempts_billed_cost,
        sum(coalesce(attempt_reasons.previous_billed_cost, 0)) as previous_attempts_billed_cost
    from attempt_reasons
    group by attempt_reasons.experiment_id, attempt_reasons.allocation_model
),

experiment_pairs as (
    select snapshot_cost_pair(experiment_costs, previous_experiment_costs, 'experiment_id')  -- noqa: RF02
    from experiment_costs
    full outer join previous_experiment_costs
        on same_row_and_model(experiment_costs, previous_experiment_costs, 'experiment_id')  -- noqa: RF02
),

experiment_lines as (
    -- lines placed on the experiment and no attempt (tagged to it): the bill's part beside its attempts
    select
        experiment_pairs.*,
        coalesce(experiment_pairs.billed_cost, 0) - coalesce(experiment_reasons.attempts_billed_cost, 0)
        <> coalesce(experiment_pairs.previous_billed_cost, 0)
        - coalesce(experiment_reasons.previous_attempts_billed_cost, 0) as experiment_lines_changed
    from experiment_pairs
    left join experiment_reasons
        on
            same_row_and_model(experiment_pairs, experiment_reasons, 'experiment_id')  -- noqa: RF02
),

experiment_flags as (
    select
        experiment_lines.*,
        snapshot_state.previous_run_id,
        snapshot_state.has_previous,
        coalesce(experiment_lines.billed_cost, 0) + coalesce(experiment_lines.unbilled_estimate, 0)
        <> coalesce(experiment_lines.previous_billed_cost, 0) + experiment_lines.previous_unbilled_estimate
            as total_changed,
        -- the experiment's own lines moved: a replaced delivery restated them, else they are new rows
        snapshot_state.has_previous
        and (
            coalesce(experiment_reasons.restated_delivery, 0) = 1
            or (experiment_lines.experiment_lines_changed and global_changes.any_delivery_replaced)
        ) as restated_delivery,
        snapshot_state.has_previous
        and (
            coalesce(experiment_reasons.late_rows, 0) = 1
            or (experiment_lines.experiment_lines_changed and not global_changes.any_delivery_replaced)
        ) as late_rows,
        not snapshot_state.has_previous
        or not experiment_lines.in_previous
        or not experiment_lines.in_current
        or coalesce(experiment_reasons.new_telemetry, 0) = 1 as new_telemetry,
        snapshot_state.config_changed as config_changed_reason,
        snapshot_state.has_previous and coalesce(experiment_reasons.estimate_replaced, 0) = 1
            as estimate_replaced_reason
    from experiment_lines
    cross join snapshot_state
    cross join global_changes
    left join experiment_reasons
        on
            same_row_and_model(experiment_lines, experiment_reasons, 'experiment_id')  -- noqa: RF02
),

changes as (
    select
        'attempt' as change_level,
        attempt_reasons.experiment_id,
        attempt_reasons.attempt_id,
        attempt_reasons.allocation_model,
        attempt_reasons.previous_run_id,
        attempt_reasons.in_previous,
        attempt_reasons.in_current,
        attempt_reasons.previous_billed_cost,
        attempt_reasons.billed_cost,
        attempt_reasons.previous_unbilled_estimate,
        attempt_reasons.unbilled_estimate,
        attempt_reasons.previous_cost_status,
        attempt_reasons.cost_status,
        attempt_reasons.total_changed,
        attempt_reasons.restated_delivery,
        attempt_reasons.late_rows,
        attempt_reasons.new_telemetry,
        attempt_reasons.config_changed_reason,
        attempt_reasons.estimate_replaced_reason
    from attempt_reasons
    union all
    select
        'experiment' as change_level,
        experiment_flags.experiment_id,
        null as attempt_id,
        experiment_flags.allocation_model,
        experiment_flags.previous_run_id,
        experiment_flags.in_previous,
        experiment_flags.in_current,
        experiment_flags.previous_billed_cost,
        experiment_flags.billed_cost,
        experiment_flags.previous_unbilled_estimate,
        experiment_flags.unbilled_estimate,
        experiment_flags.previous_cost_status,
        experiment_flags.cost_status,
        experiment_flags.total_changed,
        experiment_flags.restated_delivery,
        experiment_flags.late_rows,
        experiment_flags.new_telemetry,
        experiment_flags.config_changed_reason,
        experiment_flags.estimate_replaced_reason
    from experiment_flags
),

final as (
    select
        changes.change_level,
        changes.experiment_id,
        changes.attempt_id,
        changes.allocation_model,
        changes.previous_run_id,
        money(changes.previous_billed_cost) as previous_billed_cost,
        money(changes.billed_cost) as billed_cost,
        money(
            case when changes.in_previous then changes.previous_unbilled_estimate end
        ) as previous_unbilled_estimate,
        money(changes.unbilled_estimate) as unbilled_estimate,
        money(
            case
                when changes.in_previous
                    then coalesce(changes.previous_billed_cost, 0) + changes.previous_unbilled_estimate
            end
        ) as previous_total,
        money(
            case
                when changes.in_current then coalesce(changes.billed_cost, 0) + coalesce(changes.unbilled_estimate, 0)
            end
        ) as total,
        money(
            coalesce(changes.billed_cost, 0) + coalesce(changes.unbilled_estimate, 0)
            - coalesce(changes.previous_billed_cost, 0) - changes.previous_unbilled_estimate
        ) as change,
        changes.previous_cost_status,
        changes.cost_status,
        concat_ws(
            ', ',
            case when changes.restated_delivery then 'restated_delivery' end,
            case when changes.late_rows then 'late_rows' end,
            case when changes.new_telemetry then 'new_telemetry' end,
            case when changes.config_changed_reason then 'config_changed' end,
            case when changes.estimate_replaced_reason then 'estimate_replaced' end
        ) as reasons
    from changes
    where
        changes.total_changed
        or changes.in_previous <> changes.in_current
        or changes.previous_cost_status is distinct from changes.cost_status
)

select * from final
