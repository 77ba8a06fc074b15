-- Goodput per attempt: billed GPU-hours split into productive, startup, checkpoint, lost work and recovery.
-- grain: one row per (attempt_id, allocation_model)
-- materialized: parquet (written once, as the published Parquet; the build reads it through a view)
-- Measured parts come from staging.attempt_events and are NULL when unknown, never 0: an attempt
-- without a first_step event is not instrumented, and a checkpoint event without duration_s makes
-- its part unknown. Billed time is [started_at, ended_at) x gpu_count. event_at of checkpoint_saved
-- and checkpoint_loaded is when the blocking write or read finished; duration_s is how long it blocked.
-- Lost work: time since the last progress anchor (first_step, last checkpoint saved or loaded) at each
-- interrupted event followed by a resumed event, and at ended_at for attempts that did not succeed.
-- Recovery: interrupted -> next resumed. Productive = billed - the other parts.
-- Modeled columns (prefix modeled_) are the Young/Daly model, not measurements: M = 1/(gpu_count x
-- failure_rate_per_gpu_hour), G = tau / (M e^(R/M) (e^((tau+delta)/M) - 1)) with tau the checkpoint
-- interval and delta the write time (measured when the attempt saved checkpoints, else config.economics)
-- and R = recovery_minutes. Money (cost, lost_work_cost) is effective_cost; rates are rounded to 10 places.
-- Measured utilisation beside goodput (marts.gpu_utilisation, same attempt and model): mean_utilisation (busy /
-- sampled GPU-hours, 0-1), busy and idle GPU-hours and utilisation_coverage (sampled / held); NULL when no
-- prometheus source measured the attempt.
with attempts as (
    select * from staging.attempts
),

events as (
    select * from staging.attempt_events
),

attempt_costs as (
    select * from marts.attempt_costs
),

utilisation as (
    select * from marts.gpu_utilisation
),

settings as (
    select * from config.economics
),

event_summary as (
    select
        events.attempt_id,
        min(events.event_at) filter (where events.event_type = 'first_step') as first_step_at,
        count(*) filter (where events.event_type = 'checkpoint_saved') as saves,
        exact_double_sum_where(events.duration_s, events.event_type = 'checkpoint_saved')
            as save_seconds,
        count(*) filter (
            where events.event_type = 'checkpoint_saved' and events.duration_s is null
        ) as saves_without_duration,
        count(*) filter (where events.event_type = 'checkpoint_loaded') as restores,
        exact_double_sum_where(events.duration_s, events.event_type = 'checkpoint_loaded')
            as restore_seconds,
        count(*) filter (
            where events.event_type = 'checkpoint_loaded' and events.duration_s is null
        ) as restores_without_duration,
        count(*) filter (where events.event_type = 'interrupted') as interruptions,
        (
            epoch_us(max(events.event_at) filter (where events.event_type = 'checkpoint_saved'))
            - epoch_us(min(events.event_at) filter (where events.event_type = 'checkpoint_saved'))
        ) / 1000000.0 as save_span_seconds
    from events
    group by events.attempt_id
),

interruptions as (
    select
        events.attempt_id,
        events.event_at as interrupted_at,
        (
            select min(later.event_at)
            from events as later
            where
                later.attempt_id = events.attempt_id
                and later.event_type = 'resumed'
                and later.event_at >= events.event_at
        ) as resumed_at
    from events
    where events.event_type = 'interrupted'
),

loss_points as (
    select
        interruptions.attempt_id,
        interruptions.interrupted_at as lost_at,
        interruptions.resumed_at
    from interruptions
    inner join attempts on interruptions.attempt_id = attempts.attempt_id
    where interruptions.resumed_at is not null and interruptions.resumed_at <= attempts.ended_at
    union all
    select
        attempts.attempt_id,
        attempts.ended_at as lost_at,
        null as resumed_at
    from attempts
    where attempts.status <> 'succeeded' and attempts.ended_at is not null
),

losses as (
    select
        loss_points.attempt_id,
        loss_points.lost_at,
        loss_points.resumed_at,
        greatest(
            event_summary.first_step_at,
            (
                select max(anchor.event_at)
                from events as anchor
                where
                    anchor.attempt_id = loss_points.attempt_id
                    and anchor.event_type in ('checkpoint_saved', 'checkpoint_loaded')
                    and anchor.event_at <= loss_points.lost_at
            )
        ) as anchor_at
    from loss_points
    inner join event_summary on loss_points.attempt_id = event_summary.attempt_id
    where event_summary.first_step_at is not null
),

loss_totals as (
    select
        losses.attempt_id,
        sum(greatest(epoch_us(losses.lost_at) - epoch_us(losses.anchor_at), 0)) / 3600000000.0 as lost_hours,
        coalesce(
            sum(epoch_us(losses.resumed_at) - epoch_us(losses.lost_at)) / 3600000000.0, 0
        ) as recovery_hours
    from losses
    group by losses.attempt_id
),

parts as (
    select
        attempts.attempt_id,
        attempts.experiment_id,
        attempts.status,
        attempts.capacity_type,
        attempts.gpu_count,
        (epoch_us(attempts.ended_at) - epoch_us(attempts.started_at)) / 3600000000.0 as wall_hours,
        event_summary.first_step_at is not null and attempts.ended_at is not null as instrumented,
        coalesce(event_summary.interruptions, 0) as interruptions,
        event_summary.saves,
        event_summary.save_seconds,
        event_summary.save_span_seconds,
        (epoch_us(event_summary.first_step_at) - epoch_us(attempts.started_at)) / 3600000000.0
            as startup_hours,
        case
            when event_summary.saves_without_duration = 0
                then coalesce(event_summary.save_seconds, 0) / 3600.0
        end as save_hours,
        case
            when event_summary.restores_without_duration = 0
                then coalesce(event_summary.restore_seconds, 0) / 3600.0
        end as restore_hours,
        coalesce(loss_totals.lost_hours, 0) as lost_hours,
        coalesce(loss_totals.recovery_hours, 0) as recovery_hours
    from attempts
    left join event_summary on attempts.attempt_id = event_summary.attempt_id
    left join loss_totals on attempts.attempt_id = loss_totals.attempt_id
),

measured as (
    select
        parts.*,
        parts.wall_hours * parts.gpu_count as billed_gpu_hours,
        case when parts.instrumented then parts.startup_hours * parts.gpu_count end as startup_gpu_hours,
        case when parts.instrumented then parts.save_hours * parts.gpu_count end as checkpoint_save_gpu_hours,
        case when parts.instrumented then parts.restore_hours * parts.gpu_count end as checkpoint_restore_gpu_hours,
        case when parts.instrumented then parts.lost_hours * parts.gpu_count end as lost_work_gpu_hours,
        case when parts.instrumented then parts.recovery_hours * parts.gpu_count end as recovery_gpu_hours,
        case
            when parts.instrumented
                then
                    (
                        parts.wall_hours - parts.startup_hours - parts.save_hours - parts.restore_hours
                        - parts.lost_hours - parts.recovery_hours
                    )
                    * parts.gpu_count
        end as productive_gpu_hours,
        -- Young/Daly inputs, in hours
        1.0 / (nullif(parts.gpu_count, 0) * settings.failure_rate_per_gpu_hour) as modeled_mtbf_hours,
        case
            when parts.saves > 0 and parts.save_hours is not null
                then parts.save_seconds / parts.saves / 3600.0
            else settings.checkpoint_write_minutes / 60.0
        end as modeled_checkpoint_write_hours,
        case
            when parts.saves > 1 and parts.save_hours is not null
                then (parts.save_span_seconds / (parts.saves - 1) - parts.save_seconds / parts.saves) / 3600.0
            else settings.checkpoint_interval_minutes / 60.0
        end as modeled_checkpoint_interval_hours,
        settings.recovery_minutes / 60.0 as modeled_recovery_hours,
        case
            when parts.saves > 1 and parts.save_hours is not null then 'events'
            else 'config'
        end as modeled_checkpoint_source
    from parts
    cross join settings
),

modeled as (
    select
        measured.*,
        measured.productive_gpu_hours / nullif(measured.billed_gpu_hours, 0) as goodput,
        -- a denominator that underflows to 0 (an MTBF beyond double precision) gives NULL, not inf
        measured.modeled_checkpoint_interval_hours / nullif(
            measured.modeled_mtbf_hours
            * exp(measured.modeled_recovery_hours / measured.modeled_mtbf_hours)
            * (
                exp(
                    (measured.modeled_checkpoint_interval_hours + measured.modeled_checkpoint_write_hours)
                    / measured.modeled_mtbf_hours
                )
                - 1
            ),
            0
        ) as modeled_goodput,
        1
        - measured.modeled_checkpoint_write_hours / measured.modeled_checkpoint_interval_hours
        - (
            measured.modeled_checkpoint_interval_hours / 2
            + measured.modeled_checkpoint_write_hours
            + measured.modeled_recovery_hours
        )
        / measured.modeled_mtbf_hours as modeled_goodput_first_order
    from measured
),

final as (
    select
        modeled.attempt_id,
        modeled.experiment_id,
        attempt_costs.allocation_model,
        modeled.status,
        modeled.capacity_type,
        modeled.gpu_count,
        modeled.interruptions,
        modeled.billed_gpu_hours,
        modeled.productive_gpu_hours,
        modeled.startup_gpu_hours,
        modeled.checkpoint_save_gpu_hours,
        modeled.checkpoint_restore_gpu_hours,
        modeled.lost_work_gpu_hours,
        modeled.recovery_gpu_hours,
        modeled.goodput,
        attempt_costs.effective_cost as cost,
        money(attempt_costs.effective_cost / nullif(modeled.billed_gpu_hours, 0))
            as cost_per_billed_gpu_hour,
        case
            when modeled.productive_gpu_hours > 0
                then money(attempt_costs.effective_cost / modeled.productive_gpu_hours)
        end as cost_per_useful_gpu_hour,
        money(
            attempt_costs.effective_cost * modeled.lost_work_gpu_hours / nullif(modeled.billed_gpu_hours, 0)
        ) as lost_work_cost,
        modeled.modeled_mtbf_hours,
        modeled.modeled_checkpoint_interval_hours,
        modeled.modeled_checkpoint_write_hours,
        modeled.modeled_recovery_hours,
        modeled.modeled_checkpoint_source,
        modeled.modeled_goodput,
        modeled.modeled_goodput_first_order,
        case
            when modeled.modeled_goodput > 0 and modeled.billed_gpu_hours > 0
                then
                    money(
                        attempt_costs.effective_cost / (modeled.billed_gpu_hours * modeled.modeled_goodput)
                    )
        end as modeled_cost_per_useful_gpu_hour,
        -- an attempt that held no GPU-hours (cancelled before it started, or CPU only) has no
        -- goodput: the model's figure describes GPU time it never had
        case
            when coalesce(modeled.billed_gpu_hours, 0) > 0
                then coalesce(modeled.goodput, modeled.modeled_goodput)
        end as goodput_used,
        case
            when coalesce(modeled.billed_gpu_hours, 0) = 0 then 'no_gpu_hours'
            when modeled.goodput is not null then 'measured'
            when modeled.modeled_goodput is not null then 'modeled_young_daly'
        end as goodput_source,
        utilisation.mean_utilisation,
        utilisation.busy_gpu_hours,
        utilisation.idle_gpu_hours,
        utilisation.coverage as utilisation_coverage
    from modeled
    inner join attempt_costs on modeled.attempt_id = attempt_costs.attempt_id
    left join utilisation
        on
            modeled.attempt_id = utilisation.attempt_id
            and attempt_costs.allocation_model = utilisation.allocation_model
)

select * from final
