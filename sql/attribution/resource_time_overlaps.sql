-- How long each attempt held a resource inside one charge window, for every line of that resource and window.
-- grain: one row per (resource_id, charge_period_start, charge_period_end) window an attempt held
-- Every line of one resource in one charge window has the same overlaps, so they are computed once per
-- window, never per line (no hash table keyed by line_id). `holders` lists the holders with a positive
-- overlap; slice_rank 1 (largest overlap, then attempt id) takes a placed line's rounding remainder, the others
-- are 2.
-- A window of one hour (every line of an hourly bill) whose hour one held interval alone reaches (most of them:
-- attempts on a node follow each other) has one row, its holder's: it takes its list as it is, without the sum
-- per window and attempt or the list aggregate, which hash every row (taken by every window, the aggregate cost
-- about half of the model's CPU). The others are summed per window and attempt, then grouped per window into
-- their list with the holder that takes the rest: one aggregate, with no window function sorting the rows to rank
-- them.
-- Both sides are cut at hour boundaries and equi-joined on (resource_id, hour_start_us): a hash join
-- with only a time-overlap filter goes quadratic on long-lived nodes with many short attempts. Hours are
-- counted in microseconds since the epoch (hour_start_us, epoch_us): truncating and adding intervals to
-- TIMESTAMPTZ goes through the time-zone calendar, about 15x the CPU.
-- Built in resource-hash passes (in_resource_partition, pipeline/dag/partitions.py): every row of a
-- window and every hour it joins share the window's resource, so each pass holds one slice of the
-- resources' hours and windows in memory; the horizon stays the whole bill's.
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
with cost_lines as (
    select * from normalized.cost_line_facts
),

attempts as (
    select * from staging.attempts
),

attempt_resources as (
    select * from staging.attempt_resources
),

attribution_settings as (
    select * from config.attribution
),

horizon as (
    -- the span of the lines built: an interval listing no hour of it meets no window (a night
    -- building one month of many never cuts the other months' intervals into hours)
    select
        min(cost_lines.charge_period_start) as earliest_start,
        max(cost_lines.charge_period_end) as latest_end
    from cost_lines
),

held_intervals as (
    select
        attempt_resources.attempt_id,
        attempt_resources.resource_id,
        coalesce(attempt_resources.started_at, attempts.started_at) as held_from,
        -- a resource still held (no end yet) counts as held to the end of the billed data
        coalesce(
            attempt_resources.ended_at, attempts.ended_at, horizon.latest_end
        ) as held_until,
        coalesce(attempt_resources.gpu_count, attempts.gpu_count) as gpu_count,
        attempts.experiment_id,
        horizon.earliest_start as span_start,
        horizon.latest_end as span_end
    from attempt_resources
    inner join attempts on attempt_resources.attempt_id = attempts.attempt_id
    cross join horizon
    where
        coalesce(attempt_resources.resource_id, '') <> ''
        and coalesce(attempt_resources.started_at, attempts.started_at) is not null
        and in_resource_partition(attempt_resources.resource_id)
),

held_spans as (
    -- the intervals that list an hour of the span of the lines, each with its first and last listed
    -- hour; filtered here, past the intervals every reader shares, so that the span's one row stays
    -- a cross product and never becomes a range join
    select
        held_intervals.* exclude (held_intervals.span_start, held_intervals.span_end),
        hour_start_us(held_intervals.held_from) as first_hour_us,
        hour_start_us(held_intervals.held_until - interval 1 microsecond) as last_hour_us
    from held_intervals
    where
        held_intervals.held_until > held_intervals.held_from
        -- an hour of the span: a window's hours lie in it, and an interval listing one of them
        -- counts its GPUs there even when it holds none of the window's time
        and epoch_us(held_intervals.held_until) > hour_start_us(held_intervals.span_start)
        and hour_start_us(held_intervals.held_from) < epoch_us(held_intervals.span_end)
),

held_neighbours as (
    -- the hours the resource's other intervals reach: in the order by first hour every other interval
    -- comes before this one or after it, so an hour after the last hour of those before and before
    -- the first hour of the next one (the earliest of those after) is this interval's alone
    select
        held_spans.*,
        max(held_spans.last_hour_us) over (
            partition by held_spans.resource_id
            order by held_spans.first_hour_us asc, held_spans.last_hour_us asc
            rows between unbounded preceding and 1 preceding
        ) as others_last_hour_before_us,
        lead(held_spans.first_hour_us) over (
            partition by held_spans.resource_id
            order by held_spans.first_hour_us asc, held_spans.last_hour_us asc
        ) as others_first_hour_after_us
    from held_spans
),

held_hours as (
    select
        held_neighbours.*,
        unnest(
            range(held_neighbours.first_hour_us, epoch_us(held_neighbours.held_until), 3600000000)
        ) as hour_start_us
    from held_neighbours
),

held_resources as (
    select distinct held_intervals.resource_id from held_intervals
),

charge_windows as (
    -- tagged and split lines are taken out where lines meet windows (line_attributions)
    select distinct
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end
    from cost_lines
    cross join attribution_settings
    semi join held_resources on cost_lines.resource_id = held_resources.resource_id
    where
        attribution_settings.resource_time
        and cost_lines.charge_period_end > cost_lines.charge_period_start
        and in_resource_partition(cost_lines.resource_id)
),

window_hours as (
    select
        charge_windows.*,
        -- a window inside one hour (every line of an hourly bill) lists one hour
        epoch_us(charge_windows.charge_period_end)
        <= hour_start_us(charge_windows.charge_period_start) + 3600000000 as one_hour_window,
        unnest(
            range(
                hour_start_us(charge_windows.charge_period_start),
                epoch_us(charge_windows.charge_period_end),
                3600000000
            )
        ) as hour_start_us
    from charge_windows
),

hour_overlaps as (
    select
        window_hours.resource_id,
        window_hours.charge_period_start,
        window_hours.charge_period_end,
        held_hours.attempt_id,
        held_hours.experiment_id,
        held_hours.gpu_count,
        -- a window of one hour that one interval alone holds: its only row, its holder's whole overlap
        window_hours.one_hour_window
        and coalesce(held_hours.hour_start_us > held_hours.others_last_hour_before_us, true)
        and coalesce(held_hours.hour_start_us < held_hours.others_first_hour_after_us, true) as sole_holder,
        greatest(
            0,
            least(
                epoch_us(window_hours.charge_period_end),
                epoch_us(held_hours.held_until),
                window_hours.hour_start_us + 3600000000
            )
            - greatest(
                epoch_us(window_hours.charge_period_start),
                epoch_us(held_hours.held_from),
                window_hours.hour_start_us
            )
        ) as overlap_us
    from window_hours
    inner join held_hours
        on
            window_hours.resource_id = held_hours.resource_id
            and window_hours.hour_start_us = held_hours.hour_start_us
),

window_overlaps as (
    select
        hour_overlaps.resource_id,
        hour_overlaps.charge_period_start,
        hour_overlaps.charge_period_end,
        hour_overlaps.attempt_id,
        hour_overlaps.experiment_id,
        cast(sum(hour_overlaps.overlap_us) as bigint) as overlap_us,
        max(hour_overlaps.gpu_count) as gpu_count
    from hour_overlaps
    where not hour_overlaps.sole_holder
    group by all
    having sum(hour_overlaps.overlap_us) > 0
),

window_holders as (
    -- each window's holders in one aggregate: their total, their list and the one that takes a
    -- placed line's rounding remainder (the largest overlap, then the smallest attempt id). Ranking
    -- the window's rows with a window function sorted them, then the list was grouped again; only
    -- rank 1 is read (line_attributions), so the others are 2
    select
        window_overlaps.resource_id,
        window_overlaps.charge_period_start,
        window_overlaps.charge_period_end,
        sum(window_overlaps.overlap_us) as total_overlap_us,
        arg_min(
            window_overlaps.attempt_id,
            { 'overlap_key': -window_overlaps.overlap_us, 'attempt_id': window_overlaps.attempt_id }
        ) as first_attempt_id,
        list({
            'attempt_id': window_overlaps.attempt_id,
            'experiment_id': window_overlaps.experiment_id,
            'overlap_us': window_overlaps.overlap_us,
            'gpu_count': window_overlaps.gpu_count
        }) as listed
    from window_overlaps
    group by window_overlaps.resource_id, window_overlaps.charge_period_start, window_overlaps.charge_period_end
),

ranked_windows as (
    select
        window_holders.resource_id,
        window_holders.charge_period_start,
        window_holders.charge_period_end,
        window_holders.total_overlap_us,
        list_transform(
            window_holders.listed,
            lambda holder: {
                'attempt_id': holder.attempt_id,
                'experiment_id': holder.experiment_id,
                'overlap_us': holder.overlap_us,
                'gpu_count': holder.gpu_count,
                'slice_rank': cast(
                    case when holder.attempt_id = window_holders.first_attempt_id then 1 else 2 end as bigint
                )
            }
        ) as holders
    from window_holders
),

sole_holders as (
    -- a window of one hour one interval alone holds: one holder, ranked first, with no group or
    -- window function over it; its list is built here, not in ranked_holders, which DuckDB stores
    -- once for its two readers (the 4M windows of 10M lines through it: 6.8-7.1 CPU s against 6.1-6.8)
    select
        hour_overlaps.resource_id,
        hour_overlaps.charge_period_start,
        hour_overlaps.charge_period_end,
        hour_overlaps.overlap_us as total_overlap_us,
        [{
            'attempt_id': hour_overlaps.attempt_id,
            'experiment_id': hour_overlaps.experiment_id,
            'overlap_us': hour_overlaps.overlap_us,
            'gpu_count': hour_overlaps.gpu_count,
            'slice_rank': cast(1 as bigint)
        }] as holders
    from hour_overlaps
    where hour_overlaps.sole_holder and hour_overlaps.overlap_us > 0
),

final as (
    select * from sole_holders
    union all
    select * from ranked_windows
)

select * from final
