-- Google Cloud billing export line profiles: the few-valued text columns, computed once per combination of sources.
-- grain: one row per distinct combination of gcp_profile_sources (profile_key)
-- A profile's columns (FOCUS 1.2 meanings: category, service, resource class, ...) are computed from the export's
-- source columns and per-row tests in gcp_profile_sources (pipeline/dag/profile_macros.py), once per distinct
-- combination rather than on every row; staging.gcp_cost_lines names each row's profile by the same key over the same
-- sources.
-- normalized.cost_line_profiles unions this with the other providers' *_line_profiles views (docs/gcp.md).
with gcp_line_items as (  -- noqa: ST03
    select * from staging.gcp_billing_line_items
),

sources as (
    -- each combination of the sources once, with its key
    select * from gcp_keyed_profile_sources(gcp_line_items)
),

gpu_skus as (
    -- accelerator SKUs known by id; any other SKU whose description names a GPU is one too
    select gpu_sku_list.sku_id
    from (values ('88B8-C3ED-03F0')) as gpu_sku_list (sku_id)
),

tested as (
    select
        sources.*,
        gpu_skus.sku_id is not null
        or regexp_matches(
            lower(coalesce(sources.sku_description, '')), '(nvidia|tesla|\bgpu\b)'
        ) as is_gpu_sku,
        lower(coalesce(sources.sku_description, '')) like 'commitment%' as is_commitment_fee,
        lower(coalesce(sources.sku_description, '')) as sku_text,
        -- an accelerator-optimized machine family (A2, A3, A4, G2: the GPUs come with the machine type), from the
        -- machine type, else from the SKU ("A2 Instance Core running in ...", "Commitment v1: A2 Cpu in ...")
        coalesce(
            nullif(regexp_extract(lower(coalesce(sources.machine_spec, '')), '^(a2|a3|a4|g2)-', 1), ''),
            nullif(regexp_extract(lower(coalesce(sources.sku_description, '')), '(^|: )(a2|a3|a4|g2) ', 2), '')
        ) as accelerator_family
    from sources
    left join gpu_skus on sources.sku_id = gpu_skus.sku_id
),

classified as (
    -- what the row pays for (cost_class, docs/gcp.md#the-classification-of-a-row), first rule that applies
    select
        tested.*,
        case
            when tested.cost_type in ('tax', 'rounding_error') then 'other'
            when
                tested.cost_type = 'adjustment'
                and coalesce(tested.adjustment_type, '') not in (
                    'USAGE_CORRECTION', 'PRICE_CORRECTION', 'METADATA_CORRECTION'
                )
                then 'other'
            when tested.is_gpu_sku or tested.accelerator_family is not null then 'accelerator'
            when tested.service_description = 'Support' then 'support'
            when
                tested.service_description = 'Kubernetes Engine'
                and tested.sku_text like '%kubernetes cluster%'
                then 'control_plane'
            when
                tested.sku_text like '%egress%'
                or tested.sku_text like '%data transfer%'
                or tested.sku_text like 'network %'
                or tested.sku_text like '%ip charge%'
                or gcp_service_category(tested.service_description) = 'Networking'
                then 'network'
            when
                tested.sku_text like '%pd capacity%'
                or tested.sku_text like '%pd iops%'
                or tested.sku_text like '%hyperdisk%'
                or tested.sku_text like '%snapshot%'
                or tested.sku_text like '%local ssd%'
                or gcp_service_category(tested.service_description) = 'Storage'
                then 'storage'
            when
                tested.service_description in ('Compute Engine', 'Kubernetes Engine')
                or gcp_service_category(tested.service_description) = 'Compute'
                then 'compute'
            else 'other'
        end as cost_class,
        tested.sku_text like '%preemptible%' or tested.sku_text like '%spot %' as is_spot
    from tested
),

final as (
    select
        classified.profile_key,
        'gcp' as provider,
        classified.billing_account_id,
        classified.currency as billing_currency,
        classified.source_delivery,
        classified.source_file,
        cast(null as varchar) as billing_account_name,
        classified.project_id as sub_account_id,
        classified.project_name as sub_account_name,
        case
            when classified.cost_type = 'tax' then 'Tax'
            when classified.cost_type in ('adjustment', 'rounding_error') then 'Adjustment'
            when classified.is_commitment_fee then 'Purchase'
            else 'Usage'
        end as charge_category,
        case when classified.adjustment_id is not null or classified.adjustment_type is not null then 'Correction' end
            as charge_class,
        classified.sku_description as charge_description,
        classified.cost_type as provider_line_type,
        classified.service_description as service_name,
        classified.sku_id,
        cast(null as varchar) as usage_type,
        cast(null as varchar) as operation,
        classified.location_region as region_id,
        classified.location_zone as availability_zone,
        classified.machine_spec as instance_type,
        classified.usage_pricing_unit as pricing_unit,
        case
            when classified.cost_type = 'tax' then 'tax'
            when classified.cost_type = 'rounding_error' then 'other'
            when
                classified.cost_type = 'adjustment'
                and coalesce(classified.adjustment_type, '') not in (
                    'USAGE_CORRECTION', 'PRICE_CORRECTION', 'METADATA_CORRECTION'
                )
                then case when classified.is_credit_like then 'credit' else 'other' end
            when classified.is_unused_reservation then 'unused_reservation'
            when classified.is_commitment_fee then 'commitment'
            when classified.is_gpu_sku then 'gpu'
            when
                classified.sku_text like '%egress%'
                or classified.sku_text like '%data transfer%'
                or classified.sku_text like 'network %'
                then 'data_transfer'
            when classified.sku_text like '%operations%' then 'storage_operations'
            when
                classified.sku_text like '%pd capacity%'
                or classified.sku_text like '%pd snapshot%'
                or classified.sku_text like '%local ssd%'
                or classified.sku_text like '%storage%'
                then 'storage'
            when
                classified.sku_text like '%instance core%'
                or classified.sku_text like '%instance ram%'
                or classified.sku_text like '% core running%'
                or classified.sku_text like '% ram running%'
                or classified.service_description = 'Compute Engine'
                then 'compute'
            when classified.service_description in ('Kubernetes Engine', 'Cloud Monitoring', 'Cloud Logging')
                then 'platform'
            else 'other'
        end as resource_class,
        cast(null as varchar) as invoice_id,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'gcp_billing_export' as source_format,
        -- FOCUS 1.2 columns the normalized.focus view passes through (docs/focus.md#normalizedfocus)
        'Google Cloud' as provider_name,
        coalesce(nullif(classified.seller_name, ''), 'Google Cloud') as publisher_name,
        'Google Cloud' as invoice_issuer_name,
        -- the service's FOCUS category (pipeline/dag/service_categories.py)
        gcp_service_category(classified.service_description) as service_category,
        case when classified.cost_type = 'regular' then 'Usage-Based' else 'One-Time' end as charge_frequency,
        case
            when classified.cost_type = 'tax' then cast(null as varchar)
            when classified.has_committed_use_discount then 'Committed'
            -- Spot and preemptible VMs' SKUs ("Spot Preemptible N1 Predefined Instance Core ...")
            when classified.is_spot then 'Dynamic'
            else 'Standard'
        end as pricing_category,
        classified.usage_unit as consumed_unit,
        cast(null as varchar) as commitment_discount_category,
        cast(null as varchar) as commitment_discount_id,
        cast(null as varchar) as commitment_discount_name,
        cast(null as varchar) as commitment_discount_status,
        cast(null as varchar) as commitment_discount_type,
        cast(null as varchar) as region_name,
        cast(null as varchar) as resource_type,
        cast(null as varchar) as sku_price_id,
        case when classified.billing_account_id is not null then 'Billing Account' end as billing_account_type,
        case when classified.project_id is not null then 'Project' end as sub_account_type,
        cast(null as varchar) as capacity_reservation_id,
        cast(null as varchar) as capacity_reservation_status,
        cast(null as varchar) as commitment_discount_unit,
        -- costs, and so the unit prices derived from them, are in the billing currency
        classified.currency as pricing_currency,
        gcp_service_subcategory(classified.service_description) as service_subcategory,
        case when classified.sku_id is not null then classified.sku_description end as sku_meter,
        cast(null as varchar) as sku_price_details,
        classified.cost_class,
        case
            -- a Local SSD lives and dies with its VM: neither a disk left behind nor stored data
            when
                classified.is_commitment_fee
                or classified.cost_class not in ('accelerator', 'compute', 'storage')
                or classified.sku_text like '%local ssd%'
                then cast(null as varchar)
            -- a persistent disk bills while it exists, attached to a VM or not
            when
                classified.sku_text like '%pd capacity%'
                or classified.sku_text like '%pd iops%'
                or classified.sku_text like '%hyperdisk%'
                then 'disk'
            when
                classified.sku_text like '%snapshot%'
                or (classified.cost_class = 'storage' and classified.usage_pricing_unit like '%month%')
                then 'stored_data'
            -- a VM's running time: its core, RAM and GPU SKUs
            when
                classified.is_gpu_sku
                or classified.sku_text like '%instance core%'
                or classified.sku_text like '%instance ram%'
                or classified.sku_text like '% core running%'
                or classified.sku_text like '% ram running%'
                then 'instance'
        end as usage_kind,
        case
            when classified.is_gpu_sku then named_gpu_model(classified.sku_description)
            when classified.accelerator_family = 'a2' and lower(classified.machine_spec) like 'a2-ultragpu%'
                then 'A100 80GB'
            when classified.accelerator_family = 'a2' then 'A100'
            when classified.accelerator_family = 'a3' then 'H100'
            when classified.accelerator_family = 'a4' then 'B200'
            when classified.accelerator_family = 'g2' then 'L4'
        end as gpu_model,
        -- the GPUs of an accelerator-optimized machine type: a2-highgpu-2g has 2, g2-standard-48 has 4
        case
            when classified.accelerator_family in ('a2', 'a3', 'a4')
                then cast(nullif(regexp_extract(lower(classified.machine_spec), '-([0-9]+)g$', 1), '') as integer)
            when classified.accelerator_family = 'g2' and classified.machine_spec is not null
                then case regexp_extract(lower(classified.machine_spec), '-([0-9]+)$', 1)
                    when '24' then 2
                    when '48' then 4
                    when '96' then 8
                    else 1
                end
        end as gpu_count,
        case
            when classified.is_unused_reservation then 'Unused'
            when classified.has_committed_use_discount then 'Used'
        end as commitment_status
    from classified
)

select * from final
