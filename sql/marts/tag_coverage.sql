-- How much of the bill carries the attempt or experiment tag, per account and service (effective_cost basis).
-- grain: one row per (provider, billing_period, billing_account_id, sub_account_id, service_name, billing_currency,
--   source_format)
-- attempt_tag_keys and experiment_tag_keys are the keys the lines were searched under: CUR-normalized
-- for AWS CUR lines, as configured for Google Cloud labels and FOCUS Tags.
-- A line counts as tagged when its tag has a non-empty value, known to telemetry or not. Split cost
-- rows are not in the bill, so pod labels do not count here: only tags on the billed lines do.
-- Only lines that can carry a resource's tags count: usage, and discounts on a resource (which
-- mirror its usage lines). Tax, purchases and account-level credits carry none, and an untagged
-- account credit would push a share above 1.
with cost_lines as (
    select * from normalized.cost_lines
),

attribution_settings as (
    select * from config.attribution
),

usage_lines as (
    select cost_lines.* from cost_lines
    where
        cost_lines.charge_category = 'Usage'
        or (cost_lines.charge_category = 'Credit' and cost_lines.resource_id is not null)
),

grouped as (
    select
        usage_lines.provider,
        usage_lines.billing_period,
        usage_lines.billing_account_id,
        usage_lines.sub_account_id,
        usage_lines.service_name,
        usage_lines.billing_currency,
        usage_lines.source_format,
        count(*) as cost_lines,
        count(*) filter (where usage_lines.attempt_tag is not null) as attempt_tagged_lines,
        count(*) filter (where usage_lines.experiment_tag is not null) as experiment_tagged_lines,
        sum(usage_lines.effective_cost) as total_cost,
        coalesce(
            sum(usage_lines.effective_cost) filter (where usage_lines.attempt_tag is not null), 0
        ) as attempt_tagged_cost,
        coalesce(
            sum(usage_lines.effective_cost) filter (where usage_lines.experiment_tag is not null), 0
        ) as experiment_tagged_cost
    from usage_lines
    group by all
),

final as (
    select
        grouped.provider,
        grouped.billing_period,
        grouped.billing_account_id,
        grouped.sub_account_id,
        grouped.service_name,
        grouped.billing_currency,
        grouped.cost_lines,
        grouped.attempt_tagged_lines,
        grouped.experiment_tagged_lines,
        money(grouped.total_cost) as total_cost,
        money(grouped.attempt_tagged_cost) as attempt_tagged_cost,
        money(grouped.experiment_tagged_cost) as experiment_tagged_cost,
        cast(
            grouped.attempt_tagged_cost / nullif(grouped.total_cost, 0) as decimal(38, 10)
        ) as attempt_tagged_share,
        cast(
            grouped.experiment_tagged_cost / nullif(grouped.total_cost, 0) as decimal(38, 10)
        ) as experiment_tagged_share,
        grouped.source_format,
        attribution_tag_keys(grouped.source_format, attribution_settings, 'attempt') as attempt_tag_keys,  -- noqa: RF02
        attribution_tag_keys(grouped.source_format, attribution_settings, 'experiment')  -- noqa: RF02
            as experiment_tag_keys
    from grouped
    cross join attribution_settings
)

select * from final
