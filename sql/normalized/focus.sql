-- Cost lines as a FOCUS 1.2 Cost and Usage dataset: every Mandatory column, every Conditional column a source has.
-- grain: one row per cost line (line_id), exactly the rows of normalized.cost_lines
-- FOCUS columns come first in alphabetical order, then the x_ columns (the spec asks custom
-- columns to follow). Provider, publisher and invoice issuer names come from the data; FOCUS files'
-- ContractedCost, unit prices and commitment columns pass through. Google Cloud's BilledCost
-- includes its credits (cost + credits, the invoice), as Google's own FOCUS view has it. See
-- docs/data-dictionary.md#normalizedfocus for each mapping and the columns a source cannot provide.
-- materialized: view (a renaming of normalized.cost_lines: computed when read, never written)
with cost_lines as (
    select * from normalized.cost_lines
),

-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
final as (
    select
        nullif(cost_lines.availability_zone, '') as AvailabilityZone,
        case
            when cost_lines.source_format = 'gcp_billing_export' then cost_lines.net_cost
            else cost_lines.billed_cost
        end as BilledCost,
        cost_lines.billing_account_id as BillingAccountId,
        cost_lines.billing_account_name as BillingAccountName,
        cost_lines.billing_currency as BillingCurrency,
        cost_lines.billing_period_end as BillingPeriodEnd,
        cost_lines.billing_period_start as BillingPeriodStart,
        cost_lines.charge_category as ChargeCategory,
        cost_lines.charge_class as ChargeClass,
        cost_lines.charge_description as ChargeDescription,
        cost_lines.charge_frequency as ChargeFrequency,
        cost_lines.charge_period_end as ChargePeriodEnd,
        cost_lines.charge_period_start as ChargePeriodStart,
        nullif(cost_lines.commitment_discount_category, '') as CommitmentDiscountCategory,
        nullif(cost_lines.commitment_discount_id, '') as CommitmentDiscountId,
        nullif(cost_lines.commitment_discount_name, '') as CommitmentDiscountName,
        nullif(cost_lines.commitment_discount_status, '') as CommitmentDiscountStatus,
        nullif(cost_lines.commitment_discount_type, '') as CommitmentDiscountType,
        -- FOCUS: consumed quantity and unit describe usage only; null on other categories. The
        -- unit is the usage's own (GCP usage.unit, FOCUS ConsumedUnit), not the pricing unit
        case
            when cost_lines.charge_category = 'Usage' then cost_lines.consumed_quantity
        end as ConsumedQuantity,
        case
            when cost_lines.charge_category = 'Usage' then nullif(cost_lines.consumed_unit, '')
        end as ConsumedUnit,
        -- FOCUS files: as delivered; AWS: the public on-demand cost of usage (AWS writes
        -- negotiated discounts as their own Credit lines); GCP: cost at list
        coalesce(cost_lines.contracted_cost, cost_lines.list_cost) as ContractedCost,
        cost_lines.contracted_unit_price as ContractedUnitPrice,
        cost_lines.effective_cost as EffectiveCost,
        cost_lines.invoice_id as InvoiceId,
        coalesce(nullif(cost_lines.invoice_issuer_name, ''), cost_lines.provider) as InvoiceIssuerName,
        cost_lines.list_cost as ListCost,
        cost_lines.list_unit_price as ListUnitPrice,
        -- FOCUS: PricingCategory is null on tax
        case
            when cost_lines.charge_category <> 'Tax' then nullif(cost_lines.pricing_category, '')
        end as PricingCategory,
        cost_lines.pricing_quantity as PricingQuantity,
        nullif(cost_lines.pricing_unit, '') as PricingUnit,
        coalesce(nullif(cost_lines.provider_name, ''), cost_lines.provider) as ProviderName,
        coalesce(
            nullif(cost_lines.publisher_name, ''), nullif(cost_lines.provider_name, ''), cost_lines.provider
        ) as PublisherName,
        nullif(cost_lines.region_id, '') as RegionId,
        nullif(cost_lines.region_name, '') as RegionName,
        cost_lines.resource_id as ResourceId,
        nullif(cost_lines.resource_name, '') as ResourceName,
        nullif(cost_lines.resource_type, '') as ResourceType,
        -- AWS and GCP exports have no service category: it follows the line's resource class
        coalesce(
            nullif(cost_lines.service_category, ''),
            case
                when cost_lines.resource_class in ('compute', 'gpu', 'unused_reservation', 'commitment') then 'Compute'
                when cost_lines.resource_class in ('storage', 'storage_operations') then 'Storage'
                when cost_lines.resource_class = 'data_transfer' then 'Networking'
                when cost_lines.resource_class = 'platform' then 'Management and Governance'
                else 'Other'
            end
        ) as ServiceCategory,
        cost_lines.service_name as ServiceName,
        nullif(cost_lines.sku_id, '') as SkuId,
        nullif(cost_lines.sku_price_id, '') as SkuPriceId,
        cost_lines.sub_account_id as SubAccountId,
        cost_lines.sub_account_name as SubAccountName,
        -- FOCUS Tags is a JSON object; a line without tags has none (NULL, not {})
        case when cardinality(cost_lines.tags) > 0 then to_json(cost_lines.tags) end as Tags,
        cost_lines.attempt_tag as x_AttemptTag,
        cost_lines.experiment_tag as x_ExperimentTag,
        cost_lines.line_id as x_LineId,
        cost_lines.provider_line_type as x_ProviderLineType,
        cost_lines.source_delivery as x_SourceDelivery,
        cost_lines.source_format as x_SourceFormat
    from cost_lines
)
-- noqa: enable=CP02

select * from final
