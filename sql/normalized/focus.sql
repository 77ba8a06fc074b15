-- Cost lines under FOCUS 1.2 Cost and Usage column names, runcost's own columns as x_ extensions.
-- grain: one row per cost line (line_id), exactly the rows of normalized.cost_lines
-- FOCUS columns come first in alphabetical order, then the x_ columns (the spec asks custom
-- columns to follow). See docs/data-dictionary.md#normalizedfocus for each mapping and the gaps.
-- materialized: view (a renaming of normalized.cost_lines: computed when read, never written)
with cost_lines as (
    select * from normalized.cost_lines
),

-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
final as (
    select
        nullif(cost_lines.availability_zone, '') as AvailabilityZone,
        cost_lines.billed_cost as BilledCost,
        cost_lines.billing_account_id as BillingAccountId,
        cost_lines.billing_account_name as BillingAccountName,
        cost_lines.billing_currency as BillingCurrency,
        cost_lines.billing_period_end as BillingPeriodEnd,
        cost_lines.billing_period_start as BillingPeriodStart,
        cost_lines.charge_category as ChargeCategory,
        cost_lines.charge_class as ChargeClass,
        cost_lines.charge_description as ChargeDescription,
        cost_lines.charge_period_end as ChargePeriodEnd,
        cost_lines.charge_period_start as ChargePeriodStart,
        -- FOCUS: consumed quantity and unit describe usage only; null on other categories
        case
            when cost_lines.charge_category = 'Usage' then cost_lines.consumed_quantity
        end as ConsumedQuantity,
        case
            when cost_lines.charge_category = 'Usage' then nullif(cost_lines.pricing_unit, '')
        end as ConsumedUnit,
        -- FOCUS: contracted cost is list cost when no negotiated rate applies. AWS bills usage
        -- at the public rate and writes negotiated discounts (EdpDiscount, PrivateRateDiscount)
        -- as Credit lines, so usage takes its list cost and every other line (purchases are
        -- bought at the contracted price; credits, tax) its billed cost: summed, ContractedCost
        -- is list cost net of negotiated discounts, before commitment discounts
        case
            when cost_lines.charge_category = 'Usage' then cost_lines.list_cost
            else cost_lines.billed_cost
        end as ContractedCost,
        cost_lines.effective_cost as EffectiveCost,
        cost_lines.invoice_id as InvoiceId,
        case
            when cost_lines.provider = 'aws' then 'Amazon Web Services, Inc.'
            else cost_lines.provider
        end as InvoiceIssuerName,
        cost_lines.list_cost as ListCost,
        nullif(cost_lines.pricing_unit, '') as PricingUnit,
        case
            when cost_lines.provider = 'aws' then 'AWS'
            else cost_lines.provider
        end as ProviderName,
        case
            when cost_lines.provider = 'aws' then 'Amazon Web Services, Inc.'
            else cost_lines.provider
        end as PublisherName,
        nullif(cost_lines.region_id, '') as RegionId,
        cost_lines.resource_id as ResourceId,
        cost_lines.service_name as ServiceName,
        nullif(cost_lines.sku_id, '') as SkuId,
        cost_lines.sub_account_id as SubAccountId,
        cost_lines.sub_account_name as SubAccountName,
        -- FOCUS Tags is a JSON object; a line without tags has none (NULL, not {})
        case when cardinality(cost_lines.tags) > 0 then to_json(cost_lines.tags) end as Tags,
        cost_lines.attempt_tag as x_AttemptTag,
        cost_lines.experiment_tag as x_ExperimentTag,
        cost_lines.line_id as x_LineId,
        cost_lines.provider_line_type as x_ProviderLineType,
        cost_lines.source_delivery as x_SourceDelivery
    from cost_lines
)
-- noqa: enable=CP02

select * from final
