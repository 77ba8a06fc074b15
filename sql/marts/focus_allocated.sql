-- Runcost's allocation as a FOCUS 1.3 split-cost dataset: each normalized.focus charge split into its line's slices.
-- grain: one row per (x_AllocationModel, x_LineId, x_ProviderLineType, AllocatedMethodId, AllocatedResourceId,
-- AllocatedTags, x_UnallocatedReason): a slice of allocation.model_slices on each FOCUS row of its line
-- materialized: view (the slices of allocation.model_slices joined to normalized.focus: computed when read, never
-- written; a table would repeat some 70 FOCUS columns per slice, more than the warehouse holds at 100M lines)
-- Every FOCUS column is the origin row's as normalized.focus publishes it, but its cost columns (BilledCost,
-- EffectiveCost, ListCost, ContractedCost, PricingCurrencyEffectiveCost), which are the slice's: a FOCUS amount is
-- one of its line's four bases (or 0) on almost every row, and the slice takes its own amount in that basis, so the
-- slices sum exactly to the origin (focus_cost_sources); an amount no basis equals (a delivered ContractedCost) is
-- split by the slice's ratio of its line, the slice of the largest amount taking the rounding remainder: those
-- columns of the few origin rows that may have one are split once, in allocation.focus_ratio_splits, and taken
-- from it. checks.slices_sum_to_line checks the sums in a basis, checks.focus_allocated_sums_to_origin those split
-- by ratio (per model and period). Quantities and unit prices stay the origin's; AllocatedMethodDetails gives the
-- slice's ratio and its driver's quantity.
-- FOCUS names are PascalCase by specification; DuckDB keeps an alias's case as written
-- noqa: disable=CP02
with focus as (
    select * from normalized.focus
),

model_slices as (
    select * from allocation.model_slices
),

splits as (
    select * from allocation.focus_ratio_splits
),

line_facts as (
    select
        cost_line_facts.line_id,
        cost_line_facts.usage_seconds,
        line_bases(cost_line_facts)  -- noqa: AL03, RF02
    from normalized.cost_line_facts as cost_line_facts
),

pools as (
    select * from config.pools
),

origins as (
    select
        focus.*,
        line_facts.usage_seconds,
        line_costs(line_facts)  -- noqa: AL03, RF02
    from focus
    inner join line_facts on focus.x_LineId = line_facts.line_id
),

sourced as (
    -- each FOCUS row with the basis of its line each cost column equals
    select
        origins.*,
        focus_cost_sources(origins)  -- noqa: AL03, RF02
    from origins
),

sliced as (
    -- each slice on each FOCUS row of its line
    select
        sourced.*,
        model_slices.allocation_model,
        model_slices.allocation_kind,
        model_slices.attempt_id,
        model_slices.experiment_id,
        model_slices.attribution_method,
        model_slices.pool_name,
        model_slices.unallocated_reason,
        model_slices.share,
        pools.driver,
        bases(model_slices),  -- noqa: AL03, RF02
        -- the slice's ratio of its line in the first basis the line has, for an amount no basis equals
        slice_ratio_of_line(model_slices, sourced) as line_ratio  -- noqa: RF02
    from sourced
    inner join model_slices on sourced.x_LineId = model_slices.line_id
    left join pools on model_slices.pool_name = pools.pool_name
),

parts as (
    select
        sliced.*,
        focus_slice_costs(sliced)  -- noqa: AL03, RF02
    from sliced
),

rested as (
    -- the candidate rows' slices take their ratio-split columns, rounding remainders placed, from
    -- allocation.focus_ratio_splits
    select
        parts.*,
        focus_costs_from_splits(parts, splits)  -- noqa: AL03, RF02
    from parts
    left join splits
        on
            parts.allocation_model = splits.allocation_model
            and parts.x_LineId = splits.x_LineId
            and parts.x_ProviderLineType is not distinct from splits.x_ProviderLineType
            and parts.allocation_kind = splits.allocation_kind
            and parts.attribution_method is not distinct from splits.attribution_method
            and parts.attempt_id is not distinct from splits.attempt_id
            and parts.experiment_id is not distinct from splits.experiment_id
            and parts.unallocated_reason is not distinct from splits.unallocated_reason
),

described as (
    select
        rested.*,
        -- the slice's fraction of the origin row, in its first cost column that is not 0
        case
            when rested.BilledCost <> 0 then rested.allocated_billed / rested.BilledCost
            when rested.EffectiveCost <> 0 then rested.allocated_effective / rested.EffectiveCost
            when rested.ListCost <> 0 then rested.allocated_list / rested.ListCost
            when rested.ContractedCost <> 0 then rested.allocated_contracted / rested.ContractedCost
            else rested.share
        end as allocated_ratio,
        -- the driver: the resource's seconds in the window for resource+time, the pool's driver,
        -- the charge's own usage for a billed placement (tag, split cost); nothing when unallocated
        case
            when rested.allocation_kind = 'unallocated' then null
            when rested.attribution_method = 'resource_time' then 'Seconds'
            when rested.attribution_method = 'pool' then rested.driver
            else rested.ConsumedUnit
        end as usage_unit,
        case
            when rested.allocation_kind = 'unallocated' then null
            when rested.attribution_method = 'resource_time' then rested.usage_seconds * rested.share
            when rested.attribution_method = 'pool' then null
            else rested.ConsumedQuantity * rested.line_ratio
        end as usage_quantity
    from rested
),

rendered as (
    select
        described.*,
        'runcost:' || described.allocation_model || ':'
        || case
            when described.allocation_kind = 'unallocated' then 'unallocated'
            when described.attribution_method = 'pool' then coalesce(described.driver, 'pool')
            else described.attribution_method
        end
        || coalesce(':' || described.pool_name, '') as method_id,
        -- JSON text, its numbers at the money type's 10 places (DuckDB's json() writes them shortest)
        coalesce(cast(exact_decimal(described.allocated_ratio) as varchar), 'null') as ratio_text,
        coalesce(cast(exact_decimal(described.usage_quantity) as varchar), 'null') as quantity_text,
        coalesce(
            '"' || replace(replace(described.usage_unit, '\', '\\'), '"', '\"') || '"', 'null'
        ) as unit_text
    from described
),

final as (
    select
        json(
            '{"Elements":[{"AllocatedRatio":' || rendered.ratio_text
            || ',"UsageUnit":' || rendered.unit_text
            || ',"UsageQuantity":' || rendered.quantity_text || '}]'
            || coalesce(',"x_UnallocatedReason":"' || rendered.unallocated_reason || '"', '')
            || '}'
        ) as AllocatedMethodDetails,
        rendered.method_id as AllocatedMethodId,
        rendered.attempt_id as AllocatedResourceId,
        case
            when rendered.attempt_id is not null
                then to_json(
                    map(['x_experiment_id', 'x_attempt_id'], [rendered.experiment_id, rendered.attempt_id])
                )
            when rendered.experiment_id is not null
                then to_json(map(['x_experiment_id'], [rendered.experiment_id]))
        end as AllocatedTags,
        rendered.AvailabilityZone,
        rendered.allocated_billed as BilledCost,
        rendered.BillingAccountId,
        rendered.BillingAccountName,
        rendered.BillingAccountType,
        rendered.BillingCurrency,
        rendered.BillingPeriodEnd,
        rendered.BillingPeriodStart,
        rendered.CapacityReservationId,
        rendered.CapacityReservationStatus,
        rendered.ChargeCategory,
        rendered.ChargeClass,
        rendered.ChargeDescription,
        rendered.ChargeFrequency,
        rendered.ChargePeriodEnd,
        rendered.ChargePeriodStart,
        rendered.CommitmentDiscountCategory,
        rendered.CommitmentDiscountId,
        rendered.CommitmentDiscountName,
        rendered.CommitmentDiscountQuantity,
        rendered.CommitmentDiscountStatus,
        rendered.CommitmentDiscountType,
        rendered.CommitmentDiscountUnit,
        rendered.ConsumedQuantity,
        rendered.ConsumedUnit,
        rendered.ContractApplied,
        rendered.allocated_contracted as ContractedCost,
        rendered.ContractedUnitPrice,
        rendered.allocated_effective as EffectiveCost,
        rendered.HostProviderName,
        rendered.InvoiceId,
        rendered.InvoiceIssuerName,
        rendered.allocated_list as ListCost,
        rendered.ListUnitPrice,
        rendered.PricingCategory,
        rendered.PricingCurrency,
        rendered.PricingCurrencyContractedUnitPrice,
        rendered.allocated_pricing_effective as PricingCurrencyEffectiveCost,
        rendered.PricingCurrencyListUnitPrice,
        rendered.PricingQuantity,
        rendered.PricingUnit,
        rendered.ProviderName,
        rendered.PublisherName,
        rendered.RegionId,
        rendered.RegionName,
        rendered.ResourceId,
        rendered.ResourceName,
        rendered.ResourceType,
        rendered.ServiceCategory,
        rendered.ServiceName,
        rendered.ServiceProviderName,
        rendered.ServiceSubcategory,
        rendered.SkuId,
        rendered.SkuMeter,
        rendered.SkuPriceDetails,
        rendered.SkuPriceId,
        rendered.SubAccountId,
        rendered.SubAccountName,
        rendered.SubAccountType,
        rendered.Tags,
        rendered.allocation_model as x_AllocationModel,
        rendered.x_AttemptTag,
        rendered.x_ExperimentTag,
        rendered.x_LineId,
        rendered.x_ProviderLineType,
        rendered.x_SourceDelivery,
        rendered.x_SourceFormat,
        rendered.unallocated_reason as x_UnallocatedReason
    from rendered
)

-- noqa: enable=CP02
select * from final
