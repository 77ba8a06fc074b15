-- The cost lines attribution did not place whole: every line but those whose slices sum to it.
-- grain: one row per line_id not wholly attributed
-- materialized: intermediate (a step of the build, never published: allocation.line_remainders computes the rests
-- from it, and allocation.split_unused_shares the split lines' idle capacity)
-- A step of its own so that the anti join's table of the wholly placed lines' ids is not held in
-- one query beside allocation.line_remainders' table of the partly placed lines' sums: at the
-- memory per line of a 100M-line bill at 4GB, the two together spilled or ran out of memory
--. Carries the columns the rests are computed from, and the line's
-- resource and window, which the rests carry on to the waste findings.
with cost_lines as (
    select * from normalized.cost_line_facts
),

wholly_placed as (
    select line_attributions.line_id
    from attribution.line_attributions as line_attributions
    where line_attributions.fully_attributed
),

final as (
    select
        cost_lines.line_id,
        cost_lines.attempt_tag,
        cost_lines.experiment_tag,
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        bases(cost_lines),  -- noqa: AL03, RF02
        cost_lines.billing_period,
        cost_lines.profile_key
    from cost_lines
    anti join wholly_placed on cost_lines.line_id = wholly_placed.line_id
)

select * from final
