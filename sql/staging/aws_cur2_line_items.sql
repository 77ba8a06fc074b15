-- AWS CUR 2.0 line items of the current delivery of each billing period: renamed and typed, no joins.
-- grain: one row per (source_delivery, source_file, source_line)
-- Money arrives as DOUBLE: exact_decimal (pipeline/dag/macros.py) reads it through its shortest round-trip text,
-- because a direct DOUBLE to DECIMAL cast multiplies in floating point and gets large amounts wrong at 1e-10.
with source as (
    select * from raw.aws_cur2
),

renamed as (
    select
        line_id_of(0, source.file_index, source.source_line) as line_id,
        source.delivery_id as source_delivery,
        source.source_file,
        source.source_line,
        source.bill_payer_account_id as payer_account_id,
        source.bill_payer_account_name as payer_account_name,
        source.line_item_usage_account_id as usage_account_id,
        source.line_item_usage_account_name as usage_account_name,
        source.bill_invoice_id as invoice_id,
        source.bill_billing_entity as billing_entity,
        -- the period the file was delivered for ('YYYY-MM'), which ingest checked every line's
        -- bill_billing_period_start_date against: one value per file, not a timestamp formatted per line
        source.delivery_period as billing_period,
        source.bill_billing_period_start_date as billing_period_start,
        source.bill_billing_period_end_date as billing_period_end,
        source.line_item_line_item_type as line_item_type,
        source.line_item_line_item_description as line_item_description,
        source.line_item_usage_start_date as usage_start,
        source.line_item_usage_end_date as usage_end,
        source.line_item_product_code as product_code,
        source.line_item_usage_type as usage_type,
        source.line_item_operation as operation,
        nullif(trim(source.line_item_resource_id), '') as resource_id,
        source.line_item_availability_zone as availability_zone,
        source.product_region_code as region_code,
        source.product_instance_type as instance_type,
        source.product_sku as sku_id,
        source.pricing_unit,
        source.bill_invoicing_entity as invoicing_entity,
        source.line_item_legal_entity as legal_entity,
        source.pricing_currency,
        source.pricing_term,
        source.product['region'] as region_name,
        source.product_product_family as product_family,
        source.savings_plan_savings_plan_a_r_n as savings_plan_arn,
        source.pricing_public_on_demand_rate as public_on_demand_rate,
        source.line_item_unblended_rate as unblended_rate,
        source.line_item_net_unblended_rate as net_unblended_rate,
        source.line_item_currency_code as currency_code,
        source.line_item_usage_amount as usage_amount,
        source.resource_tags,
        source.split_line_item_parent_resource_id as split_parent_resource_id,
        source.reservation_reservation_a_r_n as reservation_arn,
        exact_decimal(source.line_item_unblended_cost) as unblended_cost,
        exact_decimal(source.line_item_net_unblended_cost) as net_unblended_cost,
        exact_decimal(source.pricing_public_on_demand_cost) as public_on_demand_cost,
        exact_decimal(source.savings_plan_savings_plan_effective_cost)
            as savings_plan_effective_cost,
        exact_decimal(source.savings_plan_net_savings_plan_effective_cost)
            as savings_plan_net_effective_cost,
        exact_decimal(source.savings_plan_total_commitment_to_date)
            as savings_plan_total_commitment_to_date,
        exact_decimal(source.savings_plan_used_commitment) as savings_plan_used_commitment,
        exact_decimal(source.reservation_effective_cost) as reservation_effective_cost,
        exact_decimal(source.reservation_net_effective_cost)
            as reservation_net_effective_cost,
        exact_decimal(source.reservation_unused_amortized_upfront_fee_for_billing_period)
            as reservation_unused_amortized_upfront_fee,
        exact_decimal(source.reservation_net_unused_amortized_upfront_fee_for_billing_period)
            as reservation_net_unused_amortized_upfront_fee,
        exact_decimal(source.reservation_unused_recurring_fee)
            as reservation_unused_recurring_fee,
        exact_decimal(source.reservation_net_unused_recurring_fee)
            as reservation_net_unused_recurring_fee,
        exact_decimal(source.reservation_unused_quantity) as reservation_unused_quantity
    from source
),

final as (
    select * from renamed
)

select * from final
