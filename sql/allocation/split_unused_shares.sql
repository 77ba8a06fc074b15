-- The idle pool of split instance lines: each placed pod's unused cost share of the line (fully loaded model).
-- grain: one row per (line_id, attempt_id, experiment_id) with unused cost
-- AWS spreads an instance-hour's unused capacity over its pods (split_line_item_unused_cost); the fully
-- loaded model follows it. When every pod of the hour is placed, the slices take the line's whole rest: the line
-- less its split slices (attribution.line_attributions), which allocation.line_remainders then leaves out.
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
with split_cost_shares as (
    select * from attribution.split_cost_shares
),

cost_lines as (
    -- the lines not wholly placed (attribution.unplaced_lines): a split line whose pods' split cost
    -- takes all of it has no idle capacity
    select
        cost_lines.line_id,
        bases(cost_lines),  -- noqa: AL03
        cost_lines.billing_period,
        cost_lines.profile_key
    from attribution.unplaced_lines as cost_lines
),

excluded_lines as (
    -- lines [allocation] exclude names have no idle pool: their rest stays theirs
    select * from attribution.excluded_lines
),

split_slices as (
    -- what the placed pods' split slices of a line placed only in part add up to
    select
        line_attributions.line_id,
        sum_bases(line_attributions)  -- noqa: AL03
    from attribution.line_attributions as line_attributions
    where line_attributions.attribution_method = 'split_cost' and not line_attributions.fully_attributed
    group by line_attributions.line_id
),

remainders as (
    -- the line's rest once its split slices are taken
    select
        cost_lines.line_id,
        subtracted_bases(cost_lines, split_slices)  -- noqa: AL03, RF02
    from cost_lines
    semi join split_cost_shares on cost_lines.line_id = split_cost_shares.line_id
    left join split_slices on cost_lines.line_id = split_slices.line_id
    anti join excluded_lines on cost_lines.line_id = excluded_lines.line_id
),

idle as (
    select
        split_cost_shares.line_id,
        split_cost_shares.attempt_id,
        split_cost_shares.experiment_id,
        split_cost_shares.unused_share as share,
        split_cost_shares.has_unplaced_pods,
        cost_lines.billing_period,
        cost_lines.profile_key,
        bases_named(remainders, 'rest'),  -- noqa: AL03, RF02
        shared_parts(cost_lines, split_cost_shares.unused_share),  -- noqa: AL03, RF02
        row_number() over (
            partition by split_cost_shares.line_id
            order by
                split_cost_shares.unused_cost desc,
                split_cost_shares.attempt_id asc,
                split_cost_shares.experiment_id asc
        ) as slice_rank
    from split_cost_shares
    inner join remainders on split_cost_shares.line_id = remainders.line_id
    inner join cost_lines on split_cost_shares.line_id = cost_lines.line_id
    where
        split_cost_shares.experiment_id is not null
        and split_cost_shares.unused_cost > 0
),

totals as (
    select
        idle.*,
        sum_parts_by_line(idle)  -- noqa: AL03
    from idle
),

final as (
    -- with no unplaced pod the line's rest is all idle capacity: the first slice takes the
    -- rounding remainder so the slices sum exactly to it
    select
        totals.line_id,
        totals.attempt_id,
        totals.experiment_id,
        totals.share,
        slices_taking_rest(  -- noqa: AL03
            not totals.has_unplaced_pods and totals.slice_rank = 1, totals, 'rest'
        ),
        totals.billing_period,
        totals.profile_key
    from totals
)

select * from final
