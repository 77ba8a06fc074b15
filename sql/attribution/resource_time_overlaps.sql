-- How long each attempt held an untagged, unsplit line's resource inside the line's charge window.
-- grain: one row per (line_id, attempt_id) with a positive overlap
-- Both sides are cut at hour boundaries and equi-joined on (resource_id, hour_start): a hash join
-- with only a time-overlap filter goes quadratic on long-lived nodes with many short attempts.
with cost_lines as (
    select * from normalized.cost_lines
),

tag_matches as (
    select tag_matches.line_id from attribution.tag_matches as tag_matches
),

split_lines as (
    -- instance lines their pods' split cost places come before resource and time
    select distinct split_cost_shares.line_id
    from attribution.split_cost_shares as split_cost_shares
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
    select max(cost_lines.charge_period_end) as latest_end from cost_lines
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
        coalesce(attempt_resources.gpu_count, attempts.gpu_count) as gpu_count
    from attempt_resources
    inner join attempts on attempt_resources.attempt_id = attempts.attempt_id
    cross join horizon
    where
        coalesce(attempt_resources.resource_id, '') <> ''
        and coalesce(attempt_resources.started_at, attempts.started_at) is not null
),

held_hours as (
    select
        held_intervals.*,
        unnest(
            range(
                date_trunc('hour', held_intervals.held_from),
                held_intervals.held_until,
                interval 1 hour
            )
        ) as hour_start
    from held_intervals
    where held_intervals.held_until > held_intervals.held_from
),

held_resources as (
    select distinct held_intervals.resource_id from held_intervals
),

candidate_lines as (
    select
        cost_lines.line_id,
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end
    from cost_lines
    cross join attribution_settings
    semi join held_resources on cost_lines.resource_id = held_resources.resource_id
    anti join tag_matches on cost_lines.line_id = tag_matches.line_id
    anti join split_lines on cost_lines.line_id = split_lines.line_id
    where
        attribution_settings.resource_time
        and cost_lines.charge_period_end > cost_lines.charge_period_start
),

line_hours as (
    select
        candidate_lines.*,
        unnest(
            range(
                date_trunc('hour', candidate_lines.charge_period_start),
                candidate_lines.charge_period_end,
                interval 1 hour
            )
        ) as hour_start
    from candidate_lines
),

hour_overlaps as (
    select
        line_hours.line_id,
        held_hours.attempt_id,
        held_hours.gpu_count,
        greatest(
            0,
            epoch_us(
                least(
                    line_hours.charge_period_end,
                    held_hours.held_until,
                    line_hours.hour_start + interval 1 hour
                )
            )
            - epoch_us(
                greatest(
                    line_hours.charge_period_start,
                    held_hours.held_from,
                    line_hours.hour_start
                )
            )
        ) as overlap_us
    from line_hours
    inner join held_hours
        on
            line_hours.resource_id = held_hours.resource_id
            and line_hours.hour_start = held_hours.hour_start
),

final as (
    select
        hour_overlaps.line_id,
        hour_overlaps.attempt_id,
        cast(sum(hour_overlaps.overlap_us) as bigint) as overlap_us,
        max(hour_overlaps.gpu_count) as gpu_count
    from hour_overlaps
    group by hour_overlaps.line_id, hour_overlaps.attempt_id
    having sum(hour_overlaps.overlap_us) > 0
)

select * from final
