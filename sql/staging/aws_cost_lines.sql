-- AWS CUR 2.0 line items as provider-neutral cost lines (FOCUS 1.2 meanings, the four cost bases, DECIMAL(38, 10)).
-- grain: one row per billed line item (line_id); split-cost pod rows are excluded (they re-split instance rows)
-- normalized.cost_lines unions this with the other providers' *_cost_lines views.
with aws_line_items as (
    select * from staging.aws_cur2_line_items
),

billed as (
    -- split cost allocation rows (EKS pods, ECS tasks) re-split instance rows that are already
    -- here; counting both would charge the instance twice
    select aws_line_items.* from aws_line_items
    where coalesce(aws_line_items.operation, '') not in ('EKSPod-EC2', 'ECSTask-EC2')
),

bases as (
    select
        billed.*,
        billed.unblended_cost as billed_cost,
        case
            when billed.line_item_type = 'SavingsPlanNegation' then 0
            else coalesce(billed.public_on_demand_cost, 0)
        end as list_cost,
        case billed.line_item_type
            when 'SavingsPlanCoveredUsage'
                then coalesce(billed.savings_plan_effective_cost, 0)
            when 'SavingsPlanRecurringFee'
                then
                    coalesce(billed.savings_plan_total_commitment_to_date, 0)
                    - coalesce(billed.savings_plan_used_commitment, 0)
            when 'SavingsPlanNegation' then 0
            when 'SavingsPlanUpfrontFee' then 0
            when 'DiscountedUsage' then coalesce(billed.reservation_effective_cost, 0)
            when 'RIFee'
                then
                    coalesce(billed.reservation_unused_amortized_upfront_fee, 0)
                    + coalesce(billed.reservation_unused_recurring_fee, 0)
            when 'Fee'
                then case
                    when coalesce(billed.reservation_arn, '') <> '' then 0
                    else billed.unblended_cost
                end
            else billed.unblended_cost
        end as effective_cost,
        case billed.line_item_type
            when 'SavingsPlanCoveredUsage'
                then coalesce(
                    billed.savings_plan_net_effective_cost, billed.savings_plan_effective_cost, 0
                )
            when 'SavingsPlanRecurringFee'
                then
                    coalesce(billed.savings_plan_total_commitment_to_date, 0)
                    - coalesce(billed.savings_plan_used_commitment, 0)
            when 'SavingsPlanNegation' then 0
            when 'SavingsPlanUpfrontFee' then 0
            when 'DiscountedUsage'
                then coalesce(
                    billed.reservation_net_effective_cost, billed.reservation_effective_cost, 0
                )
            when 'RIFee'
                then coalesce(
                    billed.reservation_net_unused_amortized_upfront_fee,
                    billed.reservation_unused_amortized_upfront_fee,
                    0
                )
                + coalesce(
                    billed.reservation_net_unused_recurring_fee,
                    billed.reservation_unused_recurring_fee,
                    0
                )
            when 'Fee'
                then case
                    when coalesce(billed.reservation_arn, '') <> '' then 0
                    else coalesce(billed.net_unblended_cost, billed.unblended_cost)
                end
            -- the net_ columns of the discounted lines already include these discounts
            when 'EdpDiscount' then 0
            when 'PrivateRateDiscount' then 0
            else coalesce(billed.net_unblended_cost, billed.unblended_cost)
        end as net_cost
    from billed
),

final as (
    select
        bases.line_id,
        'aws' as provider,
        bases.source_delivery,
        bases.source_file,
        bases.source_line,
        bases.payer_account_id as billing_account_id,
        bases.payer_account_name as billing_account_name,
        bases.usage_account_id as sub_account_id,
        bases.usage_account_name as sub_account_name,
        strftime(bases.billing_period_start, '%Y-%m') as billing_period,
        bases.billing_period_start,
        bases.billing_period_end,
        bases.usage_start as charge_period_start,
        bases.usage_end as charge_period_end,
        case
            when
                bases.line_item_type in (
                    'Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage', 'SavingsPlanNegation'
                )
                then 'Usage'
            when
                bases.line_item_type in (
                    'Fee', 'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee'
                )
                then 'Purchase'
            when bases.line_item_type = 'Tax' then 'Tax'
            when
                bases.line_item_type in (
                    'Credit', 'BundledDiscount', 'EdpDiscount', 'PrivateRateDiscount'
                )
                then 'Credit'
            else 'Adjustment'
        end as charge_category,
        cast(null as varchar) as charge_class,
        bases.line_item_description as charge_description,
        bases.line_item_type as provider_line_type,
        bases.product_code as service_name,
        bases.sku_id,
        bases.usage_type,
        bases.operation,
        bases.resource_id,
        bases.region_code as region_id,
        bases.availability_zone,
        bases.instance_type,
        bases.pricing_unit,
        case
            when bases.line_item_type = 'Tax' then 'tax'
            when
                bases.line_item_type in (
                    'Credit', 'Refund', 'BundledDiscount', 'EdpDiscount', 'PrivateRateDiscount'
                )
                then 'credit'
            when
                bases.line_item_type in (
                    'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee', 'SavingsPlanNegation'
                )
                or (bases.line_item_type = 'Fee' and coalesce(bases.reservation_arn, '') <> '')
                then 'commitment'
            when bases.usage_type like '%DataTransfer%' or bases.usage_type like '%-Bytes' then 'data_transfer'
            when bases.usage_type like '%Requests-%' then 'storage_operations'
            when
                bases.usage_type like '%EBS:%'
                or bases.usage_type like '%TimedStorage%'
                or bases.product_code in ('AmazonS3', 'AmazonEFS', 'AmazonFSx')
                then 'storage'
            when
                bases.usage_type like '%BoxUsage%'
                or bases.usage_type like '%SpotUsage%'
                or bases.usage_type like '%DedicatedUsage%'
                or bases.usage_type like '%HostUsage%'
                or bases.product_code = 'AmazonSageMaker'
                then 'compute'
            when bases.product_code in ('AmazonEKS', 'AmazonECS', 'AmazonCloudWatch') then 'platform'
            else 'other'
        end as resource_class,
        exact_decimal(bases.usage_amount) as consumed_quantity,
        -- seconds of use inside the charge window: hour-priced usage says how long the
        -- resource ran (per-second billing); anything else is taken to span its window
        case
            when lower(coalesce(bases.pricing_unit, '')) in ('hrs', 'hours', 'hour', 'hr')
                then least(
                    greatest(coalesce(bases.usage_amount, 0), 0) * 3600,
                    epoch(bases.usage_end) - epoch(bases.usage_start)
                )
            else epoch(bases.usage_end) - epoch(bases.usage_start)
        end as usage_seconds,
        bases.currency_code as billing_currency,
        nullif(bases.invoice_id, '') as invoice_id,
        cast(bases.billed_cost as decimal(38, 10)) as billed_cost,
        cast(bases.effective_cost as decimal(38, 10)) as effective_cost,
        cast(bases.list_cost as decimal(38, 10)) as list_cost,
        cast(bases.net_cost as decimal(38, 10)) as net_cost,
        -- CUR carries credits as their own lines, not on the lines they reduce
        cast(null as map (varchar, decimal(38, 10))) as credits_by_type,
        bases.resource_tags as tags,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'aws_cur' as source_format,
        -- FOCUS 1.2 columns the normalized.focus view passes through (docs/focus.md#normalizedfocus)
        'AWS' as provider_name,
        'Amazon Web Services, Inc.' as publisher_name,
        coalesce(nullif(bases.invoicing_entity, ''), nullif(bases.billing_entity, ''), 'Amazon Web Services, Inc.')
            as invoice_issuer_name,
        cast(null as varchar) as service_category,
        case
            when bases.line_item_type in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Usage-Based'
            when bases.line_item_type in ('RIFee', 'SavingsPlanRecurringFee') then 'Recurring'
            else 'One-Time'
        end as charge_frequency,
        case
            when bases.line_item_type in ('Tax', 'Credit', 'Refund') then cast(null as varchar)
            when bases.line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Committed'
            when lower(coalesce(bases.pricing_term, '')) = 'spot' then 'Dynamic'
            when lower(coalesce(bases.pricing_term, '')) = 'ondemand' then 'Standard'
            else 'Other'
        end as pricing_category,
        cast(bases.usage_amount as double) as pricing_quantity,
        nullif(bases.pricing_unit, '') as consumed_unit,
        -- not yet: pricing_public_on_demand_rate is per pricing unit, which the usage amount is not
        -- on every line type, so ListCost = ListUnitPrice x PricingQuantity would not hold
        cast(null as double) as list_unit_price,
        -- not yet: pricing_public_on_demand_rate is per pricing unit, which the usage amount is not
        -- on every line type, so ListCost = ListUnitPrice x PricingQuantity would not hold
        cast(null as double) as contracted_unit_price,
        cast(coalesce(bases.public_on_demand_cost, bases.unblended_cost) as decimal(38, 10)) as contracted_cost,
        case
            when coalesce(bases.savings_plan_arn, '') <> '' then 'Spend'
            when coalesce(bases.reservation_arn, '') <> '' then 'Usage'
        end as commitment_discount_category,
        coalesce(nullif(bases.savings_plan_arn, ''), nullif(bases.reservation_arn, '')) as commitment_discount_id,
        cast(null as varchar) as commitment_discount_name,
        case
            when bases.line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Used'
        end as commitment_discount_status,
        case
            when coalesce(bases.savings_plan_arn, '') <> '' then 'Savings Plan'
            when coalesce(bases.reservation_arn, '') <> '' then 'Reservation'
        end as commitment_discount_type,
        nullif(bases.region_name, '') as region_name,
        cast(null as varchar) as resource_name,
        nullif(bases.product_family, '') as resource_type,
        cast(null as varchar) as sku_price_id
    from bases
)

select * from final
