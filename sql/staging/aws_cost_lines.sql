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
        end as net_cost,
        -- CUR's rates are text, read exactly (to 18 places, rounded to the money type's 10); an
        -- empty or unreadable rate is no rate
        money(try_cast(nullif(trim(amortized.public_on_demand_rate), '') as decimal(38, 18))) as public_rate,
        money(try_cast(nullif(trim(amortized.unblended_rate), '') as decimal(38, 18))) as charged_rate,
        money(try_cast(nullif(trim(amortized.net_unblended_rate), '') as decimal(38, 18))) as net_rate
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
        exact_decimal(bases.usage_amount) as pricing_quantity,
        -- FOCUS unit prices, per pricing unit as CUR's rates are (text, parsed exactly): list is
        -- the public on-demand rate, else the rate charged (fees, usage without a public price);
        -- a Savings Plan negation only takes back covered usage's charge, at no price of its own
        money(
            case
                when bases.line_item_type = 'SavingsPlanNegation' then 0
                when bases.line_item_type in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage')
                    then coalesce(bases.public_rate, bases.charged_rate)
                when bases.line_item_type in ('Fee', 'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee')
                    then bases.charged_rate
            end
        ) as list_unit_price,
        -- contracted: the rate charged before commitment discounts, net of negotiated discounts
        -- when CUR has the net rate; reservation-covered usage is charged 0, so its public rate
        money(
            case
                when bases.line_item_type = 'SavingsPlanNegation' then 0
                when bases.line_item_type = 'DiscountedUsage' then coalesce(bases.public_rate, bases.charged_rate)
                when bases.line_item_type in ('Usage', 'SavingsPlanCoveredUsage')
                    then coalesce(bases.net_rate, bases.charged_rate, bases.public_rate)
                when bases.line_item_type in ('Fee', 'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee')
                    then bases.charged_rate
            end
        ) as contracted_unit_price,
        -- the cost at that contracted rate; every line without a price (tax, credits, refunds,
        -- discounts) is its own charge, so its contracted cost is what it bills
        money(case
            when bases.line_item_type = 'SavingsPlanNegation' then 0
            when bases.line_item_type = 'DiscountedUsage'
                then coalesce(bases.public_on_demand_cost, bases.unblended_cost)
            when bases.line_item_type in ('Usage', 'SavingsPlanCoveredUsage') and bases.net_rate is not null
                then coalesce(bases.net_unblended_cost, bases.unblended_cost)
            when
                bases.line_item_type in ('Usage', 'SavingsPlanCoveredUsage')
                and bases.charged_rate is null
                and bases.public_rate is not null
                then coalesce(bases.public_on_demand_cost, bases.unblended_cost)
            else bases.unblended_cost
        end) as contracted_cost,
        -- FOCUS CommitmentDiscountQuantity: Savings Plans in the billing currency (the spend
        -- covered, or the commitment of the fee's hour), reservations in hours
        case
            when bases.line_item_type = 'SavingsPlanCoveredUsage'
                then coalesce(bases.savings_plan_effective_cost, 0)
            when bases.line_item_type = 'SavingsPlanNegation' then 0
            when bases.line_item_type = 'SavingsPlanRecurringFee'
                then coalesce(bases.savings_plan_total_commitment_to_date, 0)
            when bases.line_item_type = 'SavingsPlanUpfrontFee' then bases.unblended_cost
            when
                bases.line_item_type in ('DiscountedUsage', 'RIFee')
                or (bases.line_item_type = 'Fee' and coalesce(bases.reservation_arn, '') <> '')
                then exact_decimal(bases.usage_amount)
        end as commitment_discount_quantity,
        -- what a commitment fee's hour or month left unused, for its own FOCUS row (normalized.focus): a
        -- Savings Plan's unused commitment in the billing currency, a reservation's unused hours
        case
            when bases.line_item_type = 'SavingsPlanRecurringFee' then bases.effective_cost
            when bases.line_item_type = 'RIFee' then coalesce(bases.reservation_unused_quantity, 0)
        end as unused_commitment_quantity,
        -- CUR's prices are in the billing currency: normalized.focus repeats them for PricingCurrency
        money(null) as pricing_currency_list_unit_price,
        money(null) as pricing_currency_contracted_unit_price,
        money(null) as pricing_currency_effective_cost,
        cast(null as varchar) as resource_name,
        -- FOCUS 1.3 split cost allocation: a FOCUS file's rows only
        no_focus_allocation(),  -- noqa: AL03
        aws_profile_key(bases) as profile_key
    from bases
)

select * from final
