-- FOCUS file line profiles: the text columns with few values, computed once per combination of their sources.
-- grain: one row per distinct combination of focus_profile_sources (profile_key)
-- A profile's columns are the file's own FOCUS columns, with charge_category and resource_class read as docs/focus.md
-- says, computed once per distinct combination of focus_profile_sources (pipeline/dag/profile_macros.py) rather than on
-- every row; staging.focus_cost_lines names each row's profile by the same key over the same sources.
-- normalized.cost_line_profiles unions this with the other providers' *_line_profiles views.
with focus_line_items as (  -- noqa: ST03
    select * from staging.focus_line_items
),

sources as (
    -- each combination of the sources once, with its key
    select * from focus_keyed_profile_sources(focus_line_items)
),

classified as (
    select
        sources.*,
        case lower(trim(sources.charge_category))
            when 'usage' then 'Usage'
            when 'purchase' then 'Purchase'
            when 'tax' then 'Tax'
            when 'credit' then 'Credit'
            when 'adjustment' then 'Adjustment'
            else sources.charge_category
        end as category,
        focus_unit(sources) as unit,
        lower(coalesce(sources.commitment_discount_status, '')) as commitment_status
    from sources
),

final as (
    select
        classified.profile_key,
        lower(trim(classified.provider_name)) as provider,
        classified.billing_account_id,
        classified.billing_currency,
        classified.source_delivery,
        classified.source_file,
        classified.billing_account_name,
        classified.sub_account_id,
        classified.sub_account_name,
        classified.category as charge_category,
        case
            when lower(trim(classified.charge_class)) = 'correction' then 'Correction'
            else classified.charge_class
        end as charge_class,
        classified.charge_description,
        -- FOCUS has no line item type: the charge category, with the commitment status when set
        case
            when classified.commitment_discount_status is null then classified.category
            else classified.category || ':' || classified.commitment_discount_status
        end as provider_line_type,
        classified.service_name,
        classified.sku_id,
        classified.usage_type,
        classified.operation,
        classified.region_id,
        classified.availability_zone,
        cast(null as varchar) as instance_type,
        classified.pricing_unit,
        case
            when classified.category = 'Tax' then 'tax'
            when classified.category in ('Credit', 'Adjustment') then 'credit'
            when
                classified.commitment_status = 'unused'
                or (
                    classified.category = 'Purchase'
                    and (
                        classified.commitment_discount_id is not null
                        or classified.commitment_discount_category is not null
                    )
                )
                then 'commitment'
            when classified.service_category in ('Compute', 'AI and Machine Learning') then 'compute'
            when classified.service_category = 'Storage'
                then case
                    when
                        classified.unit like '%request%'
                        or classified.unit like '%transaction%'
                        or classified.unit like '%operation%'
                        then 'storage_operations'
                    else 'storage'
                end
            when
                classified.service_category = 'Networking'
                and (classified.unit like '%gb%' or classified.unit like '%byte%' or classified.unit like '%tb%')
                and classified.unit not like '%month%'
                and classified.unit not like '%hour%'
                then 'data_transfer'
            when classified.service_category = 'Management and Governance' then 'platform'
            else 'other'
        end as resource_class,
        nullif(classified.invoice_id, '') as invoice_id,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'focus' as source_format,
        -- FOCUS 1.2 columns passed through as the file has them (docs/focus.md#normalizedfocus)
        classified.provider_name,
        classified.publisher_name,
        classified.invoice_issuer_name,
        classified.service_category,
        classified.charge_frequency,
        classified.pricing_category,
        classified.consumed_unit,
        classified.commitment_discount_category,
        classified.commitment_discount_id,
        classified.commitment_discount_name,
        classified.commitment_discount_status,
        classified.commitment_discount_type,
        classified.region_name,
        classified.resource_type,
        classified.sku_price_id,
        classified.billing_account_type,
        classified.sub_account_type,
        classified.capacity_reservation_id,
        classified.capacity_reservation_status,
        classified.commitment_discount_unit,
        classified.pricing_currency,
        classified.service_subcategory,
        classified.sku_meter,
        classified.sku_price_details
    from classified
)

select * from final
