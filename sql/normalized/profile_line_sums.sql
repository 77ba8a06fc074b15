-- The month's lines summed per billing period and profile: counts, bounds, the four bases, their checksums.
-- grain: one row per (billing_period, profile_key)
-- materialized: intermediate (a step of the build, never published: the few thousand sums of the lines that
-- normalized.billing_periods, marts.reconciliation and checks.slices_sum_to_line read)
-- The lines are read once for the three instead of once by each. A profile names
-- the line's provider, account, currency, delivery and invoice, so the sums are per profile, never per line. The
-- checksums (macro line_checksums) weigh each line's cost by its line's weight, as allocation.profile_slice_sums does.
with cost_line_facts as (
    select * from normalized.cost_line_facts
),

final as (
    select
        cost_line_facts.billing_period,
        cost_line_facts.profile_key,
        count(*) as cost_lines,
        min(cost_line_facts.billing_period_start) as billing_period_start,
        max(cost_line_facts.billing_period_end) as billing_period_end,
        min(cost_line_facts.charge_period_start) as first_charge_period_start,
        max(cost_line_facts.charge_period_end) as last_charge_period_end,
        sum_bases(cost_line_facts),  -- noqa: AL03
        line_checksums(cost_line_facts)  -- noqa: AL03
    from cost_line_facts
    group by cost_line_facts.billing_period, cost_line_facts.profile_key
)

select * from final
