-- Where each billing period stands per provider and billing account: open, provisional or final.
-- grain: one row per (provider, billing_account_id, billing_period)
-- AWS CUR: final when every line carries bill_invoice_id; otherwise open until the period ends,
-- then provisional. GCP (billing_period is the invoice month): final once the month has ended and
-- no delivery arrived for config.periods.gcp_settle_days days; before that the same as AWS.
-- Join any cost row to it on (provider, billing_account_id, billing_period). usage_until is how far
-- its usage lines reach (normalized.usage_horizons); last_charge_period_end counts month-long lines too.
with profile_line_sums as (
    select * from normalized.profile_line_sums
),

profiles as (
    select * from normalized.cost_line_profiles
),

usage_horizons as (
    select * from normalized.usage_horizons
),

billing_deliveries as (
    select * from staging.billing_deliveries
),

run_clock as (
    select * from staging.run_clock
),

period_settings as (
    select * from config.periods
),

delivery_times as (
    select
        billing_deliveries.provider,
        billing_deliveries.delivery_id,
        max(coalesce(billing_deliveries.delivered_at, billing_deliveries.ingested_at)) as arrived_at
    from billing_deliveries
    group by billing_deliveries.provider, billing_deliveries.delivery_id
),

profile_lines as (
    -- the lines summed per period and profile (normalized.profile_line_sums): the provider, account,
    -- currency, delivery and invoice are the profile's, so the month's lines are never joined to
    -- their profiles
    select
        profile_line_sums.billing_period,
        profile_line_sums.profile_key,
        profile_line_sums.billing_period_start,
        profile_line_sums.billing_period_end,
        profile_line_sums.cost_lines,
        profile_line_sums.first_charge_period_start,
        profile_line_sums.last_charge_period_end,
        profile_line_sums.billed_cost
    from profile_line_sums
),

profile_sums as (
    select
        profiles.provider,
        profiles.billing_account_id,
        profiles.billing_currency,
        profile_lines.*,
        profiles.source_delivery,
        profiles.invoice_id
    from profile_lines
    inner join profiles on profile_lines.profile_key = profiles.profile_key
),

line_deliveries as (
    select distinct
        profile_sums.provider,
        profile_sums.billing_account_id,
        profile_sums.billing_period,
        profile_sums.source_delivery
    from profile_sums
),

period_arrivals as (
    select
        line_deliveries.provider,
        line_deliveries.billing_account_id,
        line_deliveries.billing_period,
        list_sort(list(line_deliveries.source_delivery)) as source_deliveries,
        max(delivery_times.arrived_at) as last_delivered_at
    from line_deliveries
    left join delivery_times
        on
            line_deliveries.provider = delivery_times.provider
            and line_deliveries.source_delivery = delivery_times.delivery_id
    group by line_deliveries.provider, line_deliveries.billing_account_id, line_deliveries.billing_period
),

period_usage as (
    select
        usage_horizons.provider,
        usage_horizons.billing_account_id,
        usage_horizons.billing_period,
        max(usage_horizons.usage_until) as usage_until
    from usage_horizons
    group by usage_horizons.provider, usage_horizons.billing_account_id, usage_horizons.billing_period
),

period_lines as (
    select
        profile_sums.provider,
        profile_sums.billing_account_id,
        profile_sums.billing_period,
        min(profile_sums.billing_period_start) as billing_period_start,
        max(profile_sums.billing_period_end) as billing_period_end,
        min(profile_sums.billing_currency) as billing_currency,
        cast(sum(profile_sums.cost_lines) as bigint) as cost_lines,
        cast(
            coalesce(sum(profile_sums.cost_lines) filter (where profile_sums.invoice_id is not null), 0)
            as bigint
        ) as invoiced_lines,
        count(distinct profile_sums.invoice_id) as invoices,
        min(profile_sums.first_charge_period_start) as first_charge_period_start,
        max(profile_sums.last_charge_period_end) as last_charge_period_end,
        sum(profile_sums.billed_cost) as billed_cost
    from profile_sums
    group by profile_sums.provider, profile_sums.billing_account_id, profile_sums.billing_period
),

statuses as (
    select
        period_lines.*,
        period_arrivals.source_deliveries,
        period_arrivals.last_delivered_at,
        period_usage.usage_until,
        case
            when
                period_lines.provider = 'gcp'
                and run_clock.now >= period_lines.billing_period_end
                and period_arrivals.last_delivered_at
                <= run_clock.now - period_settings.gcp_settle_days * interval '1' day
                then 'final'
            when period_lines.provider <> 'gcp' and period_lines.invoiced_lines = period_lines.cost_lines
                then 'final'
            when run_clock.now < period_lines.billing_period_end then 'open'
            else 'provisional'
        end as period_status,
        case
            when period_lines.provider = 'gcp'
                then
                    'invoice month closed; no rows for ' || cast(period_settings.gcp_settle_days as varchar)
                    || ' days'
            else 'every line carries an invoice id (bill_invoice_id)'
        end as final_rule
    from period_lines
    cross join run_clock
    cross join period_settings
    left join period_arrivals on same_billing_period(period_lines, period_arrivals)  -- noqa: RF02
    left join period_usage on same_billing_period(period_lines, period_usage)  -- noqa: RF02
),

final as (
    select
        statuses.provider,
        statuses.billing_account_id,
        statuses.billing_period,
        statuses.billing_period_start,
        statuses.billing_period_end,
        statuses.billing_currency,
        statuses.period_status,
        statuses.period_status = 'final' as is_final,
        statuses.final_rule,
        statuses.cost_lines,
        statuses.invoiced_lines,
        statuses.invoices,
        statuses.first_charge_period_start,
        statuses.last_charge_period_end,
        statuses.usage_until,
        statuses.source_deliveries,
        statuses.last_delivered_at,
        money(statuses.billed_cost) as billed_cost
    from statuses
)

select * from final
