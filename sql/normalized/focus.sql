-- Cost lines as a FOCUS 1.2 Cost and Usage dataset: the 57 FOCUS 1.2 columns and 1.3's, then runcost's x_ columns.
-- grain: one row per cost line (line_id), plus one row per AWS commitment fee line with an unused part
-- The FOCUS columns come first in alphabetical order, then the x_ columns (the spec asks custom columns to follow).
-- FOCUS files pass their delivered columns through; AWS CUR 2.0 and the Google Cloud export are mapped to the
-- FOCUS 1.2 rules docs/focus.md#the-focus-12-rules-runcost-guarantees lists, each checked on every scenario world by
-- tests/e2e/test_focus_conformance.py. An AWS commitment fee (Savings Plan or reservation) is a Purchase of
-- EffectiveCost 0; the part of the commitment it did not use, which normalized.cost_lines amortizes onto the fee
-- line, is its own Usage row with CommitmentDiscountStatus 'Unused' (same x_LineId, BilledCost 0).
-- The FOCUS 1.3 columns (AllocatedMethodId, AllocatedMethodDetails, AllocatedResourceId, AllocatedResourceName,
-- AllocatedTags, ContractApplied, HostProviderName, ServiceProviderName) are a 1.3 file's as delivered, NULL on every
-- other line; an allocated row keeps its own ResourceId (the origin charge's), whatever resource it was allocated to.
-- materialized: view (computed from normalized.cost_lines when read, never written)
with cost_lines as (
    select * from normalized.cost_lines
),

lines as (
    select
        cost_lines.*,
        nullif(cost_lines.commitment_discount_id, '') is not null as has_commitment,
        -- an AWS Savings Plan or reservation fee: FOCUS has it pay for usage to come
        (
            cost_lines.source_format = 'aws_cur'
            and cost_lines.charge_category = 'Purchase'
            and nullif(cost_lines.commitment_discount_id, '') is not null
        ) as is_commitment_fee
    from cost_lines
),

charges as (
    -- each cost line as it is; an AWS commitment fee a Purchase of no effective cost
    select
        lines.*,
        false as is_unused_commitment,
        lines.charge_category as row_category,
        lines.charge_frequency as row_frequency,
        lines.pricing_category as row_pricing_category,
        lines.commitment_discount_status as row_commitment_status,
        lines.provider_line_type as row_line_type,
        lines.billed_cost as row_billed_cost,
        lines.net_cost as row_net_cost,
        case when lines.is_commitment_fee then money(0) else lines.effective_cost end as row_effective_cost,
        lines.list_cost as row_list_cost,
        lines.contracted_cost as row_contracted_cost,
        lines.list_unit_price as row_list_unit_price,
        lines.contracted_unit_price as row_contracted_unit_price,
        lines.commitment_discount_quantity as row_commitment_quantity
    from lines
),

unused_commitments as (
    -- the unused part of each AWS commitment fee line (the effective cost normalized.cost_lines
    -- amortizes onto it): Usage of the commitment, billed nothing, priced at 0
    select
        lines.*,
        true as is_unused_commitment,
        'Usage' as row_category,
        'Usage-Based' as row_frequency,
        'Committed' as row_pricing_category,
        'Unused' as row_commitment_status,
        lines.provider_line_type || ':Unused' as row_line_type,
        money(0) as row_billed_cost,
        money(0) as row_net_cost,
        lines.effective_cost as row_effective_cost,
        money(0) as row_list_cost,
        money(0) as row_contracted_cost,
        money(0) as row_list_unit_price,
        money(0) as row_contracted_unit_price,
        lines.unused_commitment_quantity as row_commitment_quantity
    from lines
    where lines.is_commitment_fee and lines.effective_cost <> 0
),

focus_lines as (
    select * from charges
    union all
    select * from unused_commitments
),

mapped as (
    select
        focus_lines.*,
        focus_lines.row_category in ('Usage', 'Purchase') as is_priced,
        -- Google Cloud's invoice is cost plus every credit, on the row the credits reduce, and
        -- so is its effective cost (promotions included)
        case
            when focus_lines.source_format = 'gcp_billing_export' then focus_lines.row_net_cost
            else focus_lines.row_billed_cost
        end as focus_billed_cost,
        case
            when focus_lines.source_format = 'gcp_billing_export' then focus_lines.row_net_cost
            else focus_lines.row_effective_cost
        end as focus_effective_cost,
        coalesce(nullif(focus_lines.pricing_currency, ''), focus_lines.billing_currency) as focus_pricing_currency,
        coalesce(nullif(focus_lines.service_category, ''), 'Other') as focus_service_category
    from focus_lines
),

priced as (
    select
        mapped.*,
        case
            when mapped.source_format = 'focus' then mapped.row_list_cost
            when mapped.is_unused_commitment then mapped.row_list_cost
            -- a charge of no price (tax, credits, refunds, adjustments) is listed at what it bills
            when not mapped.is_priced then mapped.focus_billed_cost
            -- CUR has no public price on fees and on some usage: the list is the rate it was charged
            when
                mapped.source_format = 'aws_cur'
                and (
                    mapped.row_category = 'Purchase'
                    or (
                        mapped.row_list_cost = 0
                        and mapped.row_billed_cost <> 0
                        and mapped.row_line_type <> 'SavingsPlanNegation'
                    )
                )
                then mapped.row_billed_cost
            else mapped.row_list_cost
        end as focus_list_cost,
        case
            -- a file without ContractedCost (before FOCUS 1.0): the list, the spec's default price
            when mapped.source_format = 'focus' then coalesce(mapped.row_contracted_cost, mapped.row_list_cost)
            when not mapped.is_priced then mapped.focus_billed_cost
            else mapped.row_contracted_cost
        end as focus_contracted_cost,
        -- unit prices and the pricing quantity are null on tax; AWS and GCP price usage and purchases only
        case
            when mapped.row_category = 'Tax' then null
            when mapped.source_format <> 'focus' and not mapped.is_priced then null
            else mapped.row_list_unit_price
        end as focus_list_unit_price,
        case
            when mapped.row_category = 'Tax' then null
            when mapped.source_format <> 'focus' and not mapped.is_priced then null
            else mapped.row_contracted_unit_price
        end as focus_contracted_unit_price,
        case when mapped.row_category <> 'Tax' then mapped.pricing_quantity end as focus_pricing_quantity,
        case
            when mapped.is_unused_commitment then mapped.row_commitment_quantity
            when mapped.is_priced and mapped.has_commitment then mapped.row_commitment_quantity
        end as focus_commitment_quantity
    from mapped
),

-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
final as (
    select
        case
            when nullif(priced.allocated_method_details, '') is not null then json(priced.allocated_method_details)
        end as AllocatedMethodDetails,
        nullif(priced.allocated_method_id, '') as AllocatedMethodId,
        priced.allocated_resource_id as AllocatedResourceId,
        nullif(priced.allocated_resource_name, '') as AllocatedResourceName,
        case when priced.allocated_tags is not null then to_json(priced.allocated_tags) end as AllocatedTags,
        nullif(priced.availability_zone, '') as AvailabilityZone,
        priced.focus_billed_cost as BilledCost,
        priced.billing_account_id as BillingAccountId,
        priced.billing_account_name as BillingAccountName,
        -- a file without BillingAccountType or SubAccountType names the kind generically
        case
            when priced.billing_account_id is not null
                then coalesce(nullif(priced.billing_account_type, ''), 'Billing Account')
        end as BillingAccountType,
        priced.billing_currency as BillingCurrency,
        priced.billing_period_end as BillingPeriodEnd,
        priced.billing_period_start as BillingPeriodStart,
        nullif(priced.capacity_reservation_id, '') as CapacityReservationId,
        case
            when nullif(priced.capacity_reservation_id, '') is not null
                then nullif(priced.capacity_reservation_status, '')
        end as CapacityReservationStatus,
        priced.row_category as ChargeCategory,
        priced.charge_class as ChargeClass,
        priced.charge_description as ChargeDescription,
        -- the spec's spelling, whatever the case the source wrote
        case lower(trim(priced.row_frequency))
            when 'usage-based' then 'Usage-Based'
            when 'recurring' then 'Recurring'
            when 'one-time' then 'One-Time'
            else nullif(priced.row_frequency, '')
        end as ChargeFrequency,
        priced.charge_period_end as ChargePeriodEnd,
        priced.charge_period_start as ChargePeriodStart,
        case when priced.has_commitment then nullif(priced.commitment_discount_category, '') end
            as CommitmentDiscountCategory,
        nullif(priced.commitment_discount_id, '') as CommitmentDiscountId,
        case when priced.has_commitment then nullif(priced.commitment_discount_name, '') end
            as CommitmentDiscountName,
        priced.focus_commitment_quantity as CommitmentDiscountQuantity,
        -- usage under a commitment is Used (an AWS negation takes back covered usage's charge)
        case
            when not priced.has_commitment then null
            when priced.row_category = 'Usage'
                then coalesce(nullif(priced.row_commitment_status, ''), 'Used')
            else nullif(priced.row_commitment_status, '')
        end as CommitmentDiscountStatus,
        case when priced.has_commitment then nullif(priced.commitment_discount_type, '') end
            as CommitmentDiscountType,
        case
            when priced.focus_commitment_quantity is not null then nullif(priced.commitment_discount_unit, '')
        end as CommitmentDiscountUnit,
        -- consumed quantity and unit describe usage only, and not a commitment's unused part
        case
            when priced.row_category = 'Usage' and not priced.is_unused_commitment then priced.consumed_quantity
        end as ConsumedQuantity,
        case
            when priced.row_category = 'Usage' and not priced.is_unused_commitment
                then nullif(priced.consumed_unit, '')
        end as ConsumedUnit,
        case when nullif(priced.contract_applied, '') is not null then json(priced.contract_applied) end
            as ContractApplied,
        priced.focus_contracted_cost as ContractedCost,
        priced.focus_contracted_unit_price as ContractedUnitPrice,
        priced.focus_effective_cost as EffectiveCost,
        nullif(priced.host_provider_name, '') as HostProviderName,
        priced.invoice_id as InvoiceId,
        coalesce(nullif(priced.invoice_issuer_name, ''), priced.provider) as InvoiceIssuerName,
        priced.focus_list_cost as ListCost,
        priced.focus_list_unit_price as ListUnitPrice,
        case when priced.row_category <> 'Tax' then nullif(priced.row_pricing_category, '') end as PricingCategory,
        priced.focus_pricing_currency as PricingCurrency,
        -- a source priced in its billing currency repeats the billing-currency prices
        coalesce(
            case when priced.source_format = 'focus' then priced.pricing_currency_contracted_unit_price end,
            case
                when priced.focus_pricing_currency = priced.billing_currency then priced.focus_contracted_unit_price
            end
        ) as PricingCurrencyContractedUnitPrice,
        coalesce(
            case when priced.source_format = 'focus' then priced.pricing_currency_effective_cost end,
            case when priced.focus_pricing_currency = priced.billing_currency then priced.focus_effective_cost end
        ) as PricingCurrencyEffectiveCost,
        coalesce(
            case when priced.source_format = 'focus' then priced.pricing_currency_list_unit_price end,
            case when priced.focus_pricing_currency = priced.billing_currency then priced.focus_list_unit_price end
        ) as PricingCurrencyListUnitPrice,
        priced.focus_pricing_quantity as PricingQuantity,
        nullif(priced.pricing_unit, '') as PricingUnit,
        coalesce(nullif(priced.provider_name, ''), priced.provider) as ProviderName,
        coalesce(
            nullif(priced.publisher_name, ''), nullif(priced.provider_name, ''), priced.provider
        ) as PublisherName,
        nullif(priced.region_id, '') as RegionId,
        nullif(priced.region_name, '') as RegionName,
        -- an allocated row's resource_id is the resource it was allocated to, its ResourceId the origin's
        case
            when priced.allocated_resource_id is not null then priced.origin_resource_id else priced.resource_id
        end as ResourceId,
        nullif(priced.resource_name, '') as ResourceName,
        nullif(priced.resource_type, '') as ResourceType,
        priced.focus_service_category as ServiceCategory,
        priced.service_name as ServiceName,
        nullif(priced.service_provider_name, '') as ServiceProviderName,
        -- a source without a subcategory: the category's own catch-all, an allowed value of each
        coalesce(
            nullif(priced.service_subcategory, ''), 'Other (' || priced.focus_service_category || ')'
        ) as ServiceSubcategory,
        nullif(priced.sku_id, '') as SkuId,
        case when nullif(priced.sku_id, '') is not null then nullif(priced.sku_meter, '') end as SkuMeter,
        case
            when nullif(priced.sku_price_id, '') is not null then json(nullif(priced.sku_price_details, ''))
        end as SkuPriceDetails,
        nullif(priced.sku_price_id, '') as SkuPriceId,
        priced.sub_account_id as SubAccountId,
        priced.sub_account_name as SubAccountName,
        case
            when priced.sub_account_id is not null
                then coalesce(nullif(priced.sub_account_type, ''), 'Sub Account')
        end as SubAccountType,
        -- FOCUS Tags is a JSON object; a line without tags has none (NULL, not {})
        case when cardinality(priced.tags) > 0 then to_json(priced.tags) end as Tags,
        priced.attempt_tag as x_AttemptTag,
        priced.experiment_tag as x_ExperimentTag,
        priced.line_id as x_LineId,
        priced.row_line_type as x_ProviderLineType,
        priced.source_delivery as x_SourceDelivery,
        priced.source_format as x_SourceFormat
    from priced
)
-- noqa: enable=CP02

select * from final
