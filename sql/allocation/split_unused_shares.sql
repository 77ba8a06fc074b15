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
        cost_lines.billed_cost,
        cost_lines.effective_cost,
        cost_lines.list_cost,
        cost_lines.net_cost,
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
        sum(line_attributions.billed_cost) as billed_cost,
        sum(line_attributions.effective_cost) as effective_cost,
        sum(line_attributions.list_cost) as list_cost,
        sum(line_attributions.net_cost) as net_cost
    from attribution.line_attributions as line_attributions
    where line_attributions.attribution_method = 'split_cost' and not line_attributions.fully_attributed
    group by line_attributions.line_id
),

remainders as (
    -- the line's rest once its split slices are taken
    select
        cost_lines.line_id,
        cast(cost_lines.billed_cost - coalesce(split_slices.billed_cost, 0) as decimal(38, 10)) as billed_cost,
        cast(
            cost_lines.effective_cost - coalesce(split_slices.effective_cost, 0) as decimal(38, 10)
        ) as effective_cost,
        cast(cost_lines.list_cost - coalesce(split_slices.list_cost, 0) as decimal(38, 10)) as list_cost,
        cast(cost_lines.net_cost - coalesce(split_slices.net_cost, 0) as decimal(38, 10)) as net_cost
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
        remainders.billed_cost as rest_billed_cost,
        remainders.effective_cost as rest_effective_cost,
        remainders.list_cost as rest_list_cost,
        remainders.net_cost as rest_net_cost,
        cast(cost_lines.billed_cost * split_cost_shares.unused_share as decimal(38, 10)) as billed_part,
        cast(
            cost_lines.effective_cost * split_cost_shares.unused_share as decimal(38, 10)
        ) as effective_part,
        cast(cost_lines.list_cost * split_cost_shares.unused_share as decimal(38, 10)) as list_part,
        cast(cost_lines.net_cost * split_cost_shares.unused_share as decimal(38, 10)) as net_part,
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
        sum(idle.billed_part) over (partition by idle.line_id) as billed_parts,
        sum(idle.effective_part) over (partition by idle.line_id) as effective_parts,
        sum(idle.list_part) over (partition by idle.line_id) as list_parts,
        sum(idle.net_part) over (partition by idle.line_id) as net_parts
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
        first_slice_takes_rest(
            not totals.has_unplaced_pods and totals.slice_rank = 1,
            totals.rest_billed_cost,
            totals.billed_parts,
            totals.billed_part
        ) as billed_cost,
        first_slice_takes_rest(
            not totals.has_unplaced_pods and totals.slice_rank = 1,
            totals.rest_effective_cost,
            totals.effective_parts,
            totals.effective_part
        ) as effective_cost,
        first_slice_takes_rest(
            not totals.has_unplaced_pods and totals.slice_rank = 1,
            totals.rest_list_cost,
            totals.list_parts,
            totals.list_part
        ) as list_cost,
        first_slice_takes_rest(
            not totals.has_unplaced_pods and totals.slice_rank = 1,
            totals.rest_net_cost,
            totals.net_parts,
            totals.net_part
        ) as net_cost,
        totals.billing_period,
        totals.profile_key
    from totals
)

select * from final
