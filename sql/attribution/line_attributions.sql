-- Attributed slices of cost lines in each basis: whole lines by tag, by pods' split cost, by resource and time.
-- grain: one row per (line_id, attempt_id, experiment_id) attributed slice
with cost_lines as (
    select * from normalized.cost_lines
),

tag_matches as (
    select * from attribution.tag_matches
),

held_overlaps as (
    select * from attribution.resource_time_overlaps
),

split_cost_shares as (
    select * from attribution.split_cost_shares
),

excluded_lines as (
    select * from attribution.excluded_lines
),

attempts as (
    select
        attempts.attempt_id,
        attempts.experiment_id
    from staging.attempts as attempts
),

overlap_totals as (
    select
        held_overlaps.line_id,
        sum(held_overlaps.overlap_us) as total_overlap_us
    from held_overlaps
    group by held_overlaps.line_id
),

resource_time_slices as (
    -- share_i = overlap_i / max(active, sum of overlaps): attempts one after another each get
    -- their seconds of the line's active time; when held seconds exceed it (attempts sharing
    -- the resource at once) the line is placed whole, split by seconds held
    select
        held_overlaps.line_id,
        held_overlaps.attempt_id,
        attempts.experiment_id,
        'resource_time' as attribution_method,
        'estimated' as confidence,
        overlap_totals.total_overlap_us >= cost_lines.usage_seconds * 1000000 as fully_attributed,
        held_overlaps.overlap_us as weight,
        held_overlaps.overlap_us
        / greatest(cost_lines.usage_seconds * 1000000, overlap_totals.total_overlap_us) as share
    from held_overlaps
    inner join overlap_totals on held_overlaps.line_id = overlap_totals.line_id
    inner join cost_lines on held_overlaps.line_id = cost_lines.line_id
    inner join attempts on held_overlaps.attempt_id = attempts.attempt_id
),

tag_slices as (
    select
        tag_matches.line_id,
        tag_matches.attempt_id,
        tag_matches.experiment_id,
        tag_matches.attribution_method,
        'billed' as confidence,
        true as fully_attributed,
        1 as weight,
        1.0 as share
    from tag_matches
),

split_slices as (
    -- an instance line split among its hour's pods: each placed pod's split cost over the
    -- hour's split + unused cost; unused capacity and unplaced pods stay unattributed
    select
        split_cost_shares.line_id,
        split_cost_shares.attempt_id,
        split_cost_shares.experiment_id,
        'split_cost' as attribution_method,
        'billed' as confidence,
        sum(split_cost_shares.split_cost) over (partition by split_cost_shares.line_id)
        = split_cost_shares.hour_total as fully_attributed,
        cast(split_cost_shares.split_cost as double) as weight,
        split_cost_shares.split_share as share
    from split_cost_shares
    where split_cost_shares.experiment_id is not null
    qualify split_cost_shares.split_cost > 0
),

all_slices as (
    select * from tag_slices
    union all
    select * from split_slices
    union all
    select * from resource_time_slices
),

slices as (
    -- lines [allocation] exclude names (inference, APIs) are never attributed
    select all_slices.* from all_slices
    left join excluded_lines on all_slices.line_id = excluded_lines.line_id
    where excluded_lines.line_id is null
),

parts as (
    select
        slices.*,
        cost_lines.billed_cost as line_billed_cost,
        cost_lines.effective_cost as line_effective_cost,
        cost_lines.list_cost as line_list_cost,
        cost_lines.net_cost as line_net_cost,
        cast(cost_lines.billed_cost * slices.share as decimal(38, 10)) as billed_part,
        cast(cost_lines.effective_cost * slices.share as decimal(38, 10)) as effective_part,
        cast(cost_lines.list_cost * slices.share as decimal(38, 10)) as list_part,
        cast(cost_lines.net_cost * slices.share as decimal(38, 10)) as net_part
    from slices
    inner join cost_lines on slices.line_id = cost_lines.line_id
),

line_totals as (
    -- one hash aggregate per line rather than windows partitioned by line_id (measured faster
    -- in bench/): the largest slice, ties broken by attempt then experiment, takes the remainder
    select
        parts.line_id,
        arg_min(
            { 'attempt_id': parts.attempt_id, 'experiment_id': parts.experiment_id },
            (-parts.weight, coalesce(parts.attempt_id, ''), coalesce(parts.experiment_id, ''))
        ) as first_slice,
        sum(parts.billed_part) as billed_parts,
        sum(parts.effective_part) as effective_parts,
        sum(parts.list_part) as list_parts,
        sum(parts.net_part) as net_parts
    from parts
    group by parts.line_id
),

totals as (
    select
        parts.*,
        line_totals.billed_parts,
        line_totals.effective_parts,
        line_totals.list_parts,
        line_totals.net_parts,
        case
            -- ids are never empty (telemetry refuses them), so '' stands for NULL here
            when
                coalesce(parts.attempt_id, '') = coalesce(line_totals.first_slice.attempt_id, '')
                and coalesce(parts.experiment_id, '')
                = coalesce(line_totals.first_slice.experiment_id, '')
                then 1
            else 2
        end as slice_rank
    from parts
    inner join line_totals on parts.line_id = line_totals.line_id
),

final as (
    -- when a line is placed whole, its first slice takes the rounding remainder so the
    -- slices sum exactly to the line
    select
        totals.line_id,
        totals.attempt_id,
        totals.experiment_id,
        totals.attribution_method,
        totals.confidence,
        totals.fully_attributed,
        totals.share,
        cast(
            case
                when totals.fully_attributed and totals.slice_rank = 1
                    then totals.line_billed_cost - (totals.billed_parts - totals.billed_part)
                else totals.billed_part
            end as decimal(38, 10)
        ) as billed_cost,
        cast(
            case
                when totals.fully_attributed and totals.slice_rank = 1
                    then
                        totals.line_effective_cost
                        - (totals.effective_parts - totals.effective_part)
                else totals.effective_part
            end as decimal(38, 10)
        ) as effective_cost,
        cast(
            case
                when totals.fully_attributed and totals.slice_rank = 1
                    then totals.line_list_cost - (totals.list_parts - totals.list_part)
                else totals.list_part
            end as decimal(38, 10)
        ) as list_cost,
        cast(
            case
                when totals.fully_attributed and totals.slice_rank = 1
                    then totals.line_net_cost - (totals.net_parts - totals.net_part)
                else totals.net_part
            end as decimal(38, 10)
        ) as net_cost
    from totals
)

select * from final
