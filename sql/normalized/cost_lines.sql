-- Provider-neutral cost lines with FOCUS 1.2 meanings and the four cost bases, money DECIMAL(38, 10).
-- grain: one row per billed line item (line_id), every provider
-- materialized: view (normalized.cost_line_facts joined to normalized.cost_line_profiles: computed when read, never
-- written; each line's few-valued text columns are stored once per profile, docs/performance.md)
-- The whole line: what is particular to it (normalized.cost_line_facts) and its profile's text columns
-- (normalized.cost_line_profiles), in the order docs/data-dictionary.md lists them.
with facts as (
    select * from normalized.cost_line_facts
),

profiles as (
    select * from normalized.cost_line_profiles
),

final as (
    select
        facts.line_id,
        profiles.provider,
        profiles.source_delivery,
        profiles.source_file,
        facts.source_line,
        profiles.billing_account_id,
        profiles.billing_account_name,
        profiles.sub_account_id,
        profiles.sub_account_name,
        facts.billing_period,
        facts.billing_period_start,
        facts.billing_period_end,
        facts.charge_period_start,
        facts.charge_period_end,
        profiles.charge_category,
        profiles.charge_class,
        profiles.charge_description,
        profiles.provider_line_type,
        profiles.service_name,
        profiles.sku_id,
        profiles.usage_type,
        profiles.operation,
        facts.resource_id,
        profiles.region_id,
        profiles.availability_zone,
        profiles.instance_type,
        profiles.pricing_unit,
        profiles.resource_class,
        facts.consumed_quantity,
        facts.usage_seconds,
        profiles.billing_currency,
        profiles.invoice_id,
        bases(facts),  -- noqa: AL03, RF02
        facts.credits_by_type,
        facts.tags,
        facts.attempt_tag,
        facts.experiment_tag,
        profiles.source_format,
        profiles.provider_name,
        profiles.publisher_name,
        profiles.invoice_issuer_name,
        profiles.service_category,
        profiles.charge_frequency,
        profiles.pricing_category,
        facts.pricing_quantity,
        profiles.consumed_unit,
        facts.list_unit_price,
        facts.contracted_unit_price,
        facts.contracted_cost,
        profiles.commitment_discount_category,
        profiles.commitment_discount_id,
        profiles.commitment_discount_name,
        profiles.commitment_discount_status,
        profiles.commitment_discount_type,
        profiles.region_name,
        facts.resource_name,
        profiles.resource_type,
        profiles.sku_price_id,
        profiles.billing_account_type,
        profiles.sub_account_type,
        profiles.capacity_reservation_id,
        profiles.capacity_reservation_status,
        facts.commitment_discount_quantity,
        facts.unused_commitment_quantity,
        profiles.commitment_discount_unit,
        profiles.pricing_currency,
        facts.pricing_currency_list_unit_price,
        facts.pricing_currency_contracted_unit_price,
        facts.pricing_currency_effective_cost,
        profiles.service_subcategory,
        profiles.sku_meter,
        profiles.sku_price_details,
        focus_allocation_columns(facts)  -- noqa: AL03, RF02
    from facts
    inner join profiles on facts.profile_key = profiles.profile_key
)

select * from final
