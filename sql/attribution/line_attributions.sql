-- Attributed slices of cost lines in each basis: whole lines by tag, by pods' split cost, by resource and time.
-- grain: one row per (line_id, attempt_id, experiment_id) attributed slice
-- Computed once for both allocation models. Lines meet the resource+time windows in one equi-join on the
-- window; each line's slices, their sum and its rounding remainder are computed inside the line's row
-- (lists), so no join or aggregate is keyed by line_id.
-- Built in resource-hash passes (in_resource_partition, pipeline/dag/partitions.py): each pass joins the lines
-- of one slice of the resources to that slice's windows, so the join's build side (the windows with their
-- holder lists) is a slice of the month's; the slices placed by tag and by split cost, which no resource
-- splits, are computed whole in the first pass (in_first_pass).
-- materialized: parquet (written once, in passes, as the published Parquet: allocation.cost_slices is the view of
-- these attributed slices with allocation.unattributed_slices, so they are not written a second time)
-- pass inputs: attribution.resource_time_overlaps (written in the same passes: each pass reads its own file of the
-- windows, not every pass's)
-- joins: as written (each join has the lines on its left and builds its table on the right: the windows, the
-- tag-placed, split or excluded lines' ids; so the slices come out in the lines' order, in one pass or many)
with cost_lines as (
    select
        cost_lines.line_id,
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        cost_lines.usage_seconds,
        bases(cost_lines),  -- noqa: AL03
        cost_lines.billing_period,
        cost_lines.profile_key
    from normalized.cost_line_facts as cost_lines
),

tag_matches as (
    select * from attribution.tag_matches
),

held_windows as (
    select resource_time_overlaps.*
    from attribution.resource_time_overlaps as resource_time_overlaps
    where in_resource_partition(resource_time_overlaps.resource_id)
),

split_cost_shares as (
    select * from attribution.split_cost_shares
),

excluded_lines as (
    -- lines [allocation] exclude names (inference, APIs) are never attributed
    select * from attribution.excluded_lines
),

split_lines as (
    -- instance lines their pods' split cost places come before resource and time
    select distinct split_cost_shares.line_id from split_cost_shares
),

tag_slices as (
    -- a tag places the whole line: one slice, the line's own cost
    select
        tag_matches.line_id,
        tag_matches.attempt_id,
        tag_matches.experiment_id,
        tag_matches.attribution_method,
        'billed' as confidence,
        true as fully_attributed,
        cast(1.0 as double) as share,
        bases(cost_lines),  -- noqa: AL03, RF02
        cost_lines.billing_period,
        cost_lines.profile_key
    from cost_lines
    inner join tag_matches on cost_lines.line_id = tag_matches.line_id
    anti join excluded_lines on cost_lines.line_id = excluded_lines.line_id
    where in_first_pass()
),

split_parts as (
    -- an instance line split among its hour's pods: each placed pod's split cost over the
    -- hour's split + unused cost; unused capacity and unplaced pods stay unattributed
    select
        split_cost_shares.line_id,
        split_cost_shares.attempt_id,
        split_cost_shares.experiment_id,
        sum(split_cost_shares.split_cost) over (partition by split_cost_shares.line_id)
        = split_cost_shares.hour_total as fully_attributed,
        split_cost_shares.split_share as share,
        row_number() over (
            partition by split_cost_shares.line_id
            order by
                split_cost_shares.split_cost desc,
                coalesce(split_cost_shares.attempt_id, '') asc,
                coalesce(split_cost_shares.experiment_id, '') asc
        ) as slice_rank
    from split_cost_shares
    where split_cost_shares.experiment_id is not null and in_first_pass()
    qualify split_cost_shares.split_cost > 0
),

split_rounded as (
    select
        split_parts.*,
        line_bases(cost_lines),  -- noqa: AL03, RF02
        cost_lines.billing_period,
        cost_lines.profile_key,
        shared_parts(cost_lines, split_parts.share)  -- noqa: AL03, RF02
    from cost_lines
    inner join split_parts on cost_lines.line_id = split_parts.line_id
    anti join excluded_lines on cost_lines.line_id = excluded_lines.line_id
),

split_totals as (
    select
        split_rounded.*,
        sum_parts_by_line(split_rounded)  -- noqa: AL03
    from split_rounded
),

held_lines as (
    -- untagged, unsplit lines of a held resource, with their window's holders:
    -- share_i = overlap_i / max(active, sum of overlaps): attempts one after another each get
    -- their seconds of the line's active time; when held seconds exceed it (attempts sharing
    -- the resource at once) the line is placed whole, split by seconds held
    select
        cost_lines.*,
        held_windows.total_overlap_us >= cost_lines.usage_seconds * 1000000 as fully_attributed,
        greatest(cost_lines.usage_seconds * 1000000, held_windows.total_overlap_us) as held_us,
        held_windows.holders
    from cost_lines
    inner join held_windows
        on
            cost_lines.resource_id = held_windows.resource_id
            and same_charge_period(cost_lines, held_windows)  -- noqa: RF02
    anti join tag_matches on cost_lines.line_id = tag_matches.line_id
    anti join split_lines on cost_lines.line_id = split_lines.line_id
    anti join excluded_lines on cost_lines.line_id = excluded_lines.line_id
    where in_resource_partition(cost_lines.resource_id)
),

held_parts as (
    select
        held_lines.line_id,
        held_lines.fully_attributed,
        held_lines.billing_period,
        held_lines.profile_key,
        bases(held_lines),  -- noqa: AL03
        list_transform(
            held_lines.holders,
            lambda holder: {
                'attempt_id': holder.attempt_id,
                'experiment_id': holder.experiment_id,
                'slice_rank': holder.slice_rank,
                'share': holder.overlap_us / held_lines.held_us,
                'billed_part': money(
                    held_lines.billed_cost * (holder.overlap_us / held_lines.held_us)
                ),
                'effective_part': money(
                    held_lines.effective_cost * (holder.overlap_us / held_lines.held_us)
                ),
                'list_part': money(
                    held_lines.list_cost * (holder.overlap_us / held_lines.held_us)
                ),
                'net_part': money(
                    held_lines.net_cost * (holder.overlap_us / held_lines.held_us)
                )
            }
        ) as parts
    from held_lines
),

held_sums as (
    select
        held_parts.*,
        list_sum(list_transform(held_parts.parts, lambda part: part.billed_part)) as billed_parts,
        list_sum(
            list_transform(held_parts.parts, lambda part: part.effective_part)
        ) as effective_parts,
        list_sum(list_transform(held_parts.parts, lambda part: part.list_part)) as list_parts,
        list_sum(list_transform(held_parts.parts, lambda part: part.net_part)) as net_parts
    from held_parts
),

held_slices as (
    select
        held_sums.line_id,
        held_sums.fully_attributed,
        held_sums.billing_period,
        held_sums.profile_key,
        line_bases(held_sums),  -- noqa: AL03
        parts_totals(held_sums),  -- noqa: AL03
        unnest(held_sums.parts) as part
    from held_sums
),

rounded as (
    select
        split_totals.line_id,
        split_totals.attempt_id,
        split_totals.experiment_id,
        'split_cost' as attribution_method,
        'billed' as confidence,
        split_totals.fully_attributed,
        split_totals.share,
        split_totals.slice_rank,
        line_costs(split_totals),  -- noqa: AL03
        parts(split_totals),  -- noqa: AL03
        parts_totals(split_totals),  -- noqa: AL03
        split_totals.billing_period,
        split_totals.profile_key
    from split_totals
    union all
    select
        held_slices.line_id,
        held_slices.part.attempt_id,
        held_slices.part.experiment_id,
        'resource_time' as attribution_method,
        'estimated' as confidence,
        held_slices.fully_attributed,
        held_slices.part.share,
        held_slices.part.slice_rank,
        line_costs(held_slices),  -- noqa: AL03
        parts(held_slices.part),  -- noqa: AL03
        parts_totals(held_slices),  -- noqa: AL03
        held_slices.billing_period,
        held_slices.profile_key
    from held_slices
),

shared_slices as (
    -- when a line is placed whole, its first slice takes the rounding remainder so the
    -- slices sum exactly to the line
    select
        rounded.line_id,
        rounded.attempt_id,
        rounded.experiment_id,
        rounded.attribution_method,
        rounded.confidence,
        rounded.fully_attributed,
        rounded.share,
        slices_taking_rest(  -- noqa: AL03
            rounded.fully_attributed and rounded.slice_rank = 1, rounded, 'line'
        ),
        rounded.billing_period,
        rounded.profile_key
    from rounded
),

final as (
    select * from tag_slices
    union all
    select * from shared_slices
)

select * from final
