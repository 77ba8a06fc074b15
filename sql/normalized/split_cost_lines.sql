-- Split cost allocation rows (EKS pods, ECS tasks) with the pod's attempt and experiment tags; never part of the bill.
-- grain: one row per split row (split_line_id)
-- Each row re-splits a parent instance's cost lines of the same hour; attribution uses it to place them.
with split_items as (
    select * from staging.aws_cur2_split_line_items
),

attribution_settings as (
    select * from config.attribution
),

final as (
    select
        split_items.split_line_id,
        'aws' as provider,
        split_items.source_delivery,
        split_items.source_file,
        split_items.source_line,
        split_items.payer_account_id as billing_account_id,
        split_items.usage_account_id as sub_account_id,
        split_items.billing_period,
        split_items.usage_start as charge_period_start,
        split_items.usage_end as charge_period_end,
        split_items.operation,
        split_items.usage_type,
        split_items.resource_id as pod_resource_id,
        split_items.split_parent_resource_id as parent_resource_id,
        split_items.currency_code as billing_currency,
        split_items.split_reserved_usage,
        split_items.split_actual_usage,
        split_items.split_usage,
        split_items.split_usage_ratio,
        coalesce(split_items.split_cost, 0) as split_cost,
        coalesce(split_items.unused_cost, 0) as unused_cost,
        split_items.net_split_cost,
        split_items.net_unused_cost,
        split_items.public_on_demand_split_cost,
        split_items.public_on_demand_unused_cost,
        split_items.resource_tags as tags,
        first_tag_value(split_items.resource_tags, attribution_settings.attempt_tag_keys) as attempt_tag,
        first_tag_value(split_items.resource_tags, attribution_settings.experiment_tag_keys) as experiment_tag
    from split_items
    cross join attribution_settings
)

select * from final
