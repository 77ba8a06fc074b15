-- What is particular to each cost line: billing period, times, resource, quantities, money, tags, its profile's key.
-- grain: one row per billed line item (line_id), every provider
-- materialized: parquet (written once, as the published Parquet, and read by the build through normalized.cost_lines)
-- The text columns with few values in a bill (line_profile_columns: provider, account and currency, category,
-- service, usage type, account names, delivery, ...) are stored once per combination in normalized.cost_line_profiles
-- and named here by profile_key: encoding them on every line cost about half of this table's CPU, and computing them
-- on every line to hash them about 2 CPU s more at 10M lines (docs/performance.md), so the key hashes the source
-- columns they are computed from. normalized.cost_lines joins the two back into the whole line.
-- The attribution tags are read here, once, from the tags map with the configured keys, each source format under
-- its own spelling: CUR lines under the CUR-normalized keys (attempt-id -> user_attempt_id), Google Cloud labels
-- and FOCUS Tags under the keys exactly as configured; a FOCUS 1.3 allocated row's AllocatedTags are looked up over
-- its Tags (attribution_tags: the allocated value wins on a key both hold).
with provider_lines as (
    select * from staging.provider_cost_lines
),

attribution_settings as (
    select * from config.attribution
),

final as (
    select
        provider_lines.line_id,
        provider_lines.source_line,
        provider_lines.billing_period,
        provider_lines.billing_period_start,
        provider_lines.billing_period_end,
        provider_lines.charge_period_start,
        provider_lines.charge_period_end,
        provider_lines.resource_id,
        provider_lines.consumed_quantity,
        provider_lines.usage_seconds,
        bases(provider_lines),  -- noqa: AL03, RF02
        provider_lines.credits_by_type,
        provider_lines.tags,
        first_tag_value(
            attribution_tags(provider_lines.tags, provider_lines.allocated_tags),
            attribution_tag_keys(provider_lines.source_format, attribution_settings, 'attempt')  -- noqa: RF02
        ) as attempt_tag,
        first_tag_value(
            attribution_tags(provider_lines.tags, provider_lines.allocated_tags),
            attribution_tag_keys(provider_lines.source_format, attribution_settings, 'experiment')  -- noqa: RF02
        ) as experiment_tag,
        provider_lines.pricing_quantity,
        provider_lines.list_unit_price,
        provider_lines.contracted_unit_price,
        provider_lines.contracted_cost,
        provider_lines.resource_name,
        provider_lines.commitment_discount_quantity,
        provider_lines.unused_commitment_quantity,
        provider_lines.pricing_currency_list_unit_price,
        provider_lines.pricing_currency_contracted_unit_price,
        provider_lines.pricing_currency_effective_cost,
        -- FOCUS 1.3 split cost allocation (pipeline/dag/allocated_macros.py), NULL on other lines
        focus_allocation_columns(provider_lines),  -- noqa: AL03, RF02
        -- each source's hash of what its profile is computed from (staging.<provider>_cost_lines)
        provider_lines.profile_key
    from provider_lines
    cross join attribution_settings
)

select * from final
