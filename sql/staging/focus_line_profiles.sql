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

tested as (
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
        lower(coalesce(sources.commitment_discount_status, '')) as commitment_status,
        -- the instance type: SkuPriceDetails' InstanceType, else an AWS usage type's (BoxUsage:p4d.24xlarge)
        coalesce(
            nullif(regexp_extract(coalesce(sources.sku_price_details, ''), '"InstanceType" *: *"([^"]+)"', 1), ''),
            nullif(regexp_extract(coalesce(sources.usage_type, ''), 'Usage:([a-z0-9]+\.[a-z0-9]+)$', 1), '')
        ) as sku_instance_type,
        -- the GPUs SkuPriceDetails names (GpuCount)
        cast(
            nullif(regexp_extract(coalesce(sources.sku_price_details, ''), '"GpuCount" *: *"?([0-9]+)', 1), '')
            as integer
        ) as sku_gpu_count,
        lower(
            concat_ws(
                ' ',
                sources.sku_meter,
                sources.resource_type,
                sources.service_subcategory,
                sources.charge_description,
                sources.usage_type
            )
        ) as text
    from sources
),

classified as (
    -- what the row pays for (cost_class, docs/economics.md#the-classification-of-a-cost-line), first rule that applies
    select
        tested.*,
        case
            when
                tested.service_subcategory = 'Support'
                or lower(coalesce(tested.service_name, '')) like '%support%'
                then 'support'
            when
                tested.sku_gpu_count > 0
                or aws_accelerator_instance(tested.sku_instance_type)
                or regexp_matches(tested.text, '(\bgpu\b|nvidia)')
                then 'accelerator'
            when
                tested.service_subcategory = 'Containers'
                or lower(coalesce(tested.service_name, '')) like '%kubernetes%'
                then 'control_plane'
            when tested.service_category = 'Networking' then 'network'
            when tested.service_category = 'Storage' then 'storage'
            when tested.service_category in ('Compute', 'AI and Machine Learning') then 'compute'
            else 'other'
        end as cost_class
    from tested
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
        classified.sku_instance_type as instance_type,
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
        classified.sku_price_details,
        classified.cost_class,
        case
            when classified.cost_class = 'storage'
                then case
                    when
                        classified.service_subcategory = 'Block Storage'
                        or classified.text like '%disk%'
                        or classified.text like '%volume%'
                        then 'disk'
                    when
                        classified.unit like '%request%'
                        or classified.unit like '%transaction%'
                        or classified.unit like '%operation%'
                        then cast(null as varchar)
                    else 'stored_data'
                end
            -- a machine's running time: usage of compute or accelerators in hours
            when
                classified.cost_class in ('accelerator', 'compute')
                and classified.category = 'Usage'
                and classified.unit like '%hour%'
                then 'instance'
        end as usage_kind,
        case
            when classified.cost_class = 'accelerator'
                then
                    coalesce(
                        aws_gpu_model(classified.sku_instance_type),
                        named_gpu_model(classified.charge_description),
                        named_gpu_model(classified.sku_meter)
                    )
        end as gpu_model,
        classified.sku_gpu_count as gpu_count,
        case classified.commitment_status when 'used' then 'Used' when 'unused' then 'Unused' end as commitment_status
    from classified
)

select * from final
