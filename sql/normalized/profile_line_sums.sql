-- The month's lines summed per billing period and profile: counts, bounds, the four bases, their checksums.
-- grain: one row per (billing_period, profile_key)
-- materialized: intermediate (a step of the build, never published: the few thousand sums of the lines that
-- normalized.billing_periods, marts.reconciliation and checks.slices_sum_to_line read)
-- The lines are read once for the three instead of once by each (docs/performance.md, session 31). A profile names
-- the line's provider, account, currency, delivery and invoice, so the sums are per profile, never per line. The
-- checksums weigh each line's cost by line_weight(line_id), as allocation.profile_slice_sums weighs its slices.
with cost_line_facts as (
    select * from normalized.cost_line_facts
),

weighted_lines as (
    select
        cost_line_facts.*,
        line_weight(cost_line_facts.line_id) as line_weight
    from cost_line_facts
),

final as (
    select
        weighted_lines.billing_period,
        weighted_lines.profile_key,
        count(*) as cost_lines,
        min(weighted_lines.billing_period_start) as billing_period_start,
        max(weighted_lines.billing_period_end) as billing_period_end,
        min(weighted_lines.charge_period_start) as first_charge_period_start,
        max(weighted_lines.charge_period_end) as last_charge_period_end,
        sum(weighted_lines.billed_cost) as billed_cost,
        sum(weighted_lines.effective_cost) as effective_cost,
        sum(weighted_lines.list_cost) as list_cost,
        sum(weighted_lines.net_cost) as net_cost,
        sum(weighted_lines.billed_cost * weighted_lines.line_weight) as billed_checksum,
        sum(weighted_lines.effective_cost * weighted_lines.line_weight) as effective_checksum,
        sum(weighted_lines.list_cost * weighted_lines.line_weight) as list_checksum,
        sum(weighted_lines.net_cost * weighted_lines.line_weight) as net_checksum
    from weighted_lines
    group by weighted_lines.billing_period, weighted_lines.profile_key
)

select * from final
