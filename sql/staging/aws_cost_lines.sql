-- AWS CUR 2.0 line items as provider-neutral cost lines (FOCUS 1.2 meanings, the four cost bases, DECIMAL(38, 10)).
-- grain: one row per billed line item (line_id); split-cost pod rows are excluded (they re-split instance rows)
-- normalized.cost_lines unions this with the other providers' *_cost_lines views. Each line names its profile (the text
-- columns with few values: provider, account, currency, category, service, usage type, ...) by profile_key, a hash of
-- the columns staging.aws_line_profiles computes them from (aws_profile_key, pipeline/dag/profile_macros.py), never
-- computing them itself.
with billed as (
    select * from staging.aws_billed_line_items
),

amortized as (
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
        end as effective_cost
    from billed
),

bases as (
    -- net of discounts: the net_ columns where CUR has them; the Savings Plan fee, negation and
    -- upfront lines are amortized the same either way
    select
        amortized.*,
        case amortized.line_item_type
            when 'SavingsPlanCoveredUsage'
                then coalesce(
                    amortized.savings_plan_net_effective_cost, amortized.savings_plan_effective_cost, 0
                )
            when 'DiscountedUsage'
                then coalesce(
                    amortized.reservation_net_effective_cost, amortized.reservation_effective_cost, 0
                )
            when 'RIFee'
                then coalesce(
                    amortized.reservation_net_unused_amortized_upfront_fee,
                    amortized.reservation_unused_amortized_upfront_fee,
                    0
                )
                + coalesce(
                    amortized.reservation_net_unused_recurring_fee,
                    amortized.reservation_unused_recurring_fee,
                    0
                )
            when 'Fee'
                then case
                    when coalesce(amortized.reservation_arn, '') <> '' then 0
                    else coalesce(amortized.net_unblended_cost, amortized.unblended_cost)
                end
            -- the net_ columns of the discounted lines already include these discounts
            when 'EdpDiscount' then 0
            when 'PrivateRateDiscount' then 0
            when 'SavingsPlanRecurringFee' then amortized.effective_cost
            when 'SavingsPlanNegation' then amortized.effective_cost
            when 'SavingsPlanUpfrontFee' then amortized.effective_cost
            else coalesce(amortized.net_unblended_cost, amortized.unblended_cost)
        end as net_cost
    from amortized
),

final as (
    select
        bases.line_id,
        bases.source_line,
        bases.billing_period,
        bases.billing_period_start,
        bases.billing_period_end,
        bases.usage_start as charge_period_start,
        bases.usage_end as charge_period_end,
        bases.resource_id,
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
        money_bases(bases),  -- noqa: AL03
        -- CUR carries credits as their own lines, not on the lines they reduce
        cast(null as map (varchar, decimal(38, 10))) as credits_by_type,
        bases.resource_tags as tags,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'aws_cur' as source_format,
        cast(bases.usage_amount as double) as pricing_quantity,
        -- not yet: pricing_public_on_demand_rate is per pricing unit, which the usage amount is not
        -- on every line type, so ListCost = ListUnitPrice x PricingQuantity would not hold
        cast(null as double) as list_unit_price,
        -- not yet: pricing_public_on_demand_rate is per pricing unit, which the usage amount is not
        -- on every line type, so ListCost = ListUnitPrice x PricingQuantity would not hold
        cast(null as double) as contracted_unit_price,
        money(coalesce(bases.public_on_demand_cost, bases.unblended_cost)) as contracted_cost,
        cast(null as varchar) as resource_name,
        aws_profile_key(bases) as profile_key
    from bases
)

select * from final
