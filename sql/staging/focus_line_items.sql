-- FOCUS rows of the current delivery of each billing period: renamed to snake_case and typed, no joins.
-- grain: one row per (source_delivery, source_file, source_line)
-- raw.focus_billing holds every FOCUS 1.0-1.3 column under its current name (NULL where the file had
-- none); money is exact DECIMAL(38, 18) text-parsed at ingest, cast here to the house DECIMAL(38, 10).
with source as (
    select * from raw.focus_billing
),

-- FOCUS column names are PascalCase by specification
-- noqa: disable=CP02
renamed as (
    select
        line_id_of(2, source.file_index, source.source_line) as line_id,
        source.export_name as source_name,
        source.delivery_id as source_delivery,
        source.source_file,
        source.source_line,
        source.ProviderName as provider_name,
        source.PublisherName as publisher_name,
        source.InvoiceIssuerName as invoice_issuer_name,
        source.BillingAccountId as billing_account_id,
        source.BillingAccountName as billing_account_name,
        source.SubAccountId as sub_account_id,
        source.SubAccountName as sub_account_name,
        source.InvoiceId as invoice_id,
        source.BillingCurrency as billing_currency,
        source.BillingPeriodStart as billing_period_start,
        source.BillingPeriodEnd as billing_period_end,
        source.ChargePeriodStart as charge_period_start,
        source.ChargePeriodEnd as charge_period_end,
        source.ChargeCategory as charge_category,
        source.ChargeClass as charge_class,
        source.ChargeDescription as charge_description,
        source.ChargeFrequency as charge_frequency,
        source.CommitmentDiscountId as commitment_discount_id,
        source.CommitmentDiscountCategory as commitment_discount_category,
        source.CommitmentDiscountStatus as commitment_discount_status,
        source.CommitmentDiscountName as commitment_discount_name,
        source.CommitmentDiscountType as commitment_discount_type,
        money(source.ListUnitPrice) as list_unit_price,
        money(source.ContractedUnitPrice) as contracted_unit_price,
        source.PricingCategory as pricing_category,
        source.ServiceName as service_name,
        source.ServiceCategory as service_category,
        source.ServiceSubcategory as service_subcategory,
        source.SkuId as sku_id,
        source.SkuPriceId as sku_price_id,
        nullif(trim(source.ResourceId), '') as resource_id,
        source.ResourceName as resource_name,
        source.ResourceType as resource_type,
        source.RegionId as region_id,
        source.RegionName as region_name,
        source.AvailabilityZone as availability_zone,
        source.PricingUnit as pricing_unit,
        source.ConsumedUnit as consumed_unit,
        source.x_UsageType as usage_type,
        source.x_Operation as operation,
        source.x_ServiceCode as service_code,
        source.Tags as tags_json,
        -- FOCUS 1.3: the provider's split cost allocation (AllocatedTags is JSON text like Tags)
        source.AllocatedMethodId as allocated_method_id,
        source.AllocatedMethodDetails as allocated_method_details,
        nullif(trim(source.AllocatedResourceId), '') as allocated_resource_id,
        source.AllocatedResourceName as allocated_resource_name,
        source.AllocatedTags as allocated_tags_json,
        source.ServiceProviderName as service_provider_name,
        source.HostProviderName as host_provider_name,
        source.ContractApplied as contract_applied,
        source.BillingAccountType as billing_account_type,
        source.SubAccountType as sub_account_type,
        source.CapacityReservationId as capacity_reservation_id,
        source.CapacityReservationStatus as capacity_reservation_status,
        source.CommitmentDiscountUnit as commitment_discount_unit,
        source.PricingCurrency as pricing_currency,
        source.SkuMeter as sku_meter,
        source.SkuPriceDetails as sku_price_details,
        cast(source.CommitmentDiscountQuantity as decimal(38, 10)) as commitment_discount_quantity,
        money(source.PricingCurrencyListUnitPrice) as pricing_currency_list_unit_price,
        money(source.PricingCurrencyContractedUnitPrice) as pricing_currency_contracted_unit_price,
        money(source.PricingCurrencyEffectiveCost) as pricing_currency_effective_cost,
        cast(source.ConsumedQuantity as decimal(38, 10)) as consumed_quantity,
        cast(source.PricingQuantity as decimal(38, 10)) as pricing_quantity,
        money(source.BilledCost) as billed_cost,
        money(source.EffectiveCost) as effective_cost,
        money(source.ListCost) as list_cost,
        money(source.ContractedCost) as contracted_cost
    from source
),
-- noqa: enable=CP02

final as (
    select * from renamed
)

select * from final
