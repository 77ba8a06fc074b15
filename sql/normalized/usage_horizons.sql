-- How far the bill reaches in usage: the last charge_period_end of the lines that describe use over time.
-- grain: one row per (provider, billing_account_id, billing_period, sub_account_id, resource_id)
-- A usage line (charge_category 'Usage') whose charge window is at most a day says the bill has
-- reached its end. Lines whose window is the billing period (tax, credits, fees, RI fees,
-- refunds, subscriptions, and usage billed monthly) are written at the first delivery of the
-- month with the period's end, so they say nothing about how far usage is billed; taking them
-- would stop every estimate of the account until the month ends. resource_id is NULL for the
-- lines without one (they count for the account). Rule per provider: docs/operations.md.
with cost_lines as (
    select * from normalized.cost_lines
),

usage_lines as (
    select
        cost_lines.provider,
        cost_lines.billing_account_id,
        cost_lines.billing_period,
        cost_lines.sub_account_id,
        nullif(cost_lines.resource_id, '') as resource_id,
        cost_lines.charge_period_end
    from cost_lines
    where
        cost_lines.charge_category = 'Usage'
        and cost_lines.charge_period_end > cost_lines.charge_period_start
        -- a day in microseconds: adding an interval to a TIMESTAMPTZ goes through the time-zone
        -- calendar, 0.8 of this model's 1.3 CPU s at 10M lines
        and epoch_us(cost_lines.charge_period_end) - epoch_us(cost_lines.charge_period_start) <= 86400000000
),

final as (
    select
        usage_lines.provider,
        usage_lines.billing_account_id,
        usage_lines.billing_period,
        usage_lines.sub_account_id,
        usage_lines.resource_id,
        max(usage_lines.charge_period_end) as usage_until,
        count(*) as usage_lines
    from usage_lines
    group by all
)

select * from final
