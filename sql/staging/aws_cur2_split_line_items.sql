-- AWS split cost allocation rows (EKS pods, ECS tasks) of the current deliveries: renamed and typed, no joins.
-- grain: one row per split row (source_delivery, source_file, source_line) whose operation is EKSPod-EC2 or ECSTask-EC2
-- These rows re-split instance rows that are already in the bill; they are read only to attribute them.
-- Money arrives as DOUBLE: it is cast through its shortest round-trip text, because a direct
-- DOUBLE to DECIMAL cast multiplies in floating point and gets large amounts wrong at 1e-10.
with source as (
    select * from raw.aws_cur2
),

renamed as (
    select
        line_id_of(0, source.file_index, source.source_line) as split_line_id,
        source.delivery_id as source_delivery,
        source.source_file,
        source.source_line,
        source.bill_payer_account_id as payer_account_id,
        source.line_item_usage_account_id as usage_account_id,
        -- the period the file was delivered for, as staging.aws_cur2_line_items reads it
        source.delivery_period as billing_period,
        source.line_item_usage_start_date as usage_start,
        source.line_item_usage_end_date as usage_end,
        source.line_item_operation as operation,
        source.line_item_usage_type as usage_type,
        nullif(trim(source.line_item_resource_id), '') as resource_id,
        nullif(trim(source.split_line_item_parent_resource_id), '') as split_parent_resource_id,
        source.line_item_currency_code as currency_code,
        source.resource_tags,
        source.split_line_item_reserved_usage as split_reserved_usage,
        source.split_line_item_actual_usage as split_actual_usage,
        source.split_line_item_split_usage as split_usage,
        source.split_line_item_split_usage_ratio as split_usage_ratio,
        exact_decimal(source.split_line_item_split_cost) as split_cost,
        exact_decimal(source.split_line_item_unused_cost) as unused_cost,
        exact_decimal(source.split_line_item_net_split_cost) as net_split_cost,
        exact_decimal(source.split_line_item_net_unused_cost) as net_unused_cost,
        exact_decimal(source.split_line_item_public_on_demand_split_cost)
            as public_on_demand_split_cost,
        exact_decimal(source.split_line_item_public_on_demand_unused_cost)
            as public_on_demand_unused_cost
    from source
    where source.line_item_operation in ('EKSPod-EC2', 'ECSTask-EC2')
),

final as (
    select * from renamed
)

select * from final
