-- AWS CUR 2.0 line profiles: the text columns with few values in a bill, computed once per combination of sources.
-- grain: one row per distinct combination of aws_profile_sources (profile_key)
-- A profile's columns (FOCUS 1.2 meanings: category, service, resource class, ...) are computed from the line items'
-- source columns in aws_profile_sources (pipeline/dag/profile_macros.py), once per distinct combination rather than on
-- every line; staging.aws_cost_lines names each line's profile by the same key over the same sources.
-- normalized.cost_line_profiles unions this with the other providers' *_line_profiles views.
with billed as (  -- noqa: ST03
    select * from staging.aws_billed_line_items
),

sources as (
    -- each combination of the sources once, with its key
    select * from aws_keyed_profile_sources(billed)
),

final as (
    select
        sources.profile_key,
        'aws' as provider,
        sources.payer_account_id as billing_account_id,
        sources.currency_code as billing_currency,
        sources.source_delivery,
        sources.source_file,
        sources.payer_account_name as billing_account_name,
        sources.usage_account_id as sub_account_id,
        sources.usage_account_name as sub_account_name,
        case
            when
                sources.line_item_type in (
                    'Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage', 'SavingsPlanNegation'
                )
                then 'Usage'
            when
                sources.line_item_type in (
                    'Fee', 'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee'
                )
                then 'Purchase'
            when sources.line_item_type = 'Tax' then 'Tax'
            when
                sources.line_item_type in (
                    'Credit', 'BundledDiscount', 'EdpDiscount', 'PrivateRateDiscount'
                )
                then 'Credit'
            else 'Adjustment'
        end as charge_category,
        cast(null as varchar) as charge_class,
        sources.line_item_description as charge_description,
        sources.line_item_type as provider_line_type,
        sources.product_code as service_name,
        sources.sku_id,
        sources.usage_type,
        sources.operation,
        sources.region_code as region_id,
        sources.availability_zone,
        sources.instance_type,
        sources.pricing_unit,
        case
            when sources.line_item_type = 'Tax' then 'tax'
            when
                sources.line_item_type in (
                    'Credit', 'Refund', 'BundledDiscount', 'EdpDiscount', 'PrivateRateDiscount'
                )
                then 'credit'
            when
                sources.line_item_type in (
                    'RIFee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee', 'SavingsPlanNegation'
                )
                or (sources.line_item_type = 'Fee' and coalesce(sources.reservation_arn, '') <> '')
                then 'commitment'
            when sources.usage_type like '%DataTransfer%' or sources.usage_type like '%-Bytes' then 'data_transfer'
            when sources.usage_type like '%Requests-%' then 'storage_operations'
            when
                sources.usage_type like '%EBS:%'
                or sources.usage_type like '%TimedStorage%'
                or sources.product_code in ('AmazonS3', 'AmazonEFS', 'AmazonFSx')
                then 'storage'
            when
                sources.usage_type like '%BoxUsage%'
                or sources.usage_type like '%SpotUsage%'
                or sources.usage_type like '%DedicatedUsage%'
                or sources.usage_type like '%HostUsage%'
                or sources.product_code = 'AmazonSageMaker'
                then 'compute'
            when sources.product_code in ('AmazonEKS', 'AmazonECS', 'AmazonCloudWatch') then 'platform'
            else 'other'
        end as resource_class,
        nullif(sources.invoice_id, '') as invoice_id,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'aws_cur' as source_format,
        -- FOCUS 1.2 columns the normalized.focus view passes through (docs/focus.md#normalizedfocus)
        'AWS' as provider_name,
        -- the seller of record: a Marketplace vendor (Red Hat, ...) on its lines, else an AWS entity
        coalesce(nullif(sources.legal_entity, ''), 'Amazon Web Services, Inc.') as publisher_name,
        coalesce(nullif(sources.invoicing_entity, ''), nullif(sources.billing_entity, ''), 'Amazon Web Services, Inc.')
            as invoice_issuer_name,
        -- the product code's FOCUS category (pipeline/dag/service_categories.py)
        aws_service_category(sources.product_code) as service_category,
        case
            when sources.line_item_type in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Usage-Based'
            when sources.line_item_type in ('RIFee', 'SavingsPlanRecurringFee') then 'Recurring'
            else 'One-Time'
        end as charge_frequency,
        case
            when sources.line_item_type in ('Tax', 'Credit', 'Refund') then cast(null as varchar)
            when sources.line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Committed'
            when lower(coalesce(sources.pricing_term, '')) = 'spot' then 'Dynamic'
            when lower(coalesce(sources.pricing_term, '')) = 'ondemand' then 'Standard'
            else 'Other'
        end as pricing_category,
        nullif(sources.pricing_unit, '') as consumed_unit,
        case
            when coalesce(sources.savings_plan_arn, '') <> '' then 'Spend'
            when coalesce(sources.reservation_arn, '') <> '' then 'Usage'
        end as commitment_discount_category,
        coalesce(nullif(sources.savings_plan_arn, ''), nullif(sources.reservation_arn, '')) as commitment_discount_id,
        cast(null as varchar) as commitment_discount_name,
        case
            when sources.line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Used'
        end as commitment_discount_status,
        case
            when coalesce(sources.savings_plan_arn, '') <> '' then 'Savings Plan'
            when coalesce(sources.reservation_arn, '') <> '' then 'Reservation'
        end as commitment_discount_type,
        nullif(sources.region_name, '') as region_name,
        nullif(sources.product_family, '') as resource_type,
        cast(null as varchar) as sku_price_id,
        case when nullif(sources.payer_account_id, '') is not null then 'Payer Account' end as billing_account_type,
        case when nullif(sources.usage_account_id, '') is not null then 'Usage Account' end as sub_account_type,
        cast(null as varchar) as capacity_reservation_id,
        cast(null as varchar) as capacity_reservation_status,
        -- the unit of CommitmentDiscountQuantity (staging.aws_cost_lines)
        case
            when coalesce(sources.savings_plan_arn, '') <> '' then sources.currency_code
            when coalesce(sources.reservation_arn, '') <> '' then 'Hours'
        end as commitment_discount_unit,
        coalesce(nullif(sources.pricing_currency, ''), sources.currency_code) as pricing_currency,
        aws_service_subcategory(sources.product_code) as service_subcategory,
        -- what AWS meters the SKU by
        case when nullif(sources.sku_id, '') is not null then nullif(sources.usage_type, '') end as sku_meter,
        cast(null as varchar) as sku_price_details,
        -- runcost's classification (docs/economics.md#the-classification-of-a-cost-line), from the product code, usage
        -- type and instance type; first rule that applies
        case
            when sources.product_code like 'AWSSupport%' or sources.product_code = 'AWSDeveloperSupport' then 'support'
            when sources.product_code in ('AmazonEKS', 'AmazonECS') then 'control_plane'
            when
                sources.usage_type like '%DataTransfer%'
                or sources.usage_type like '%-Bytes%'
                or sources.product_code in ('AWSDataTransfer', 'AmazonVPC')
                then 'network'
            when
                sources.usage_type like '%EBS:%'
                or sources.product_code in ('AmazonS3', 'AmazonEFS', 'AmazonFSx')
                then 'storage'
            when aws_accelerator_instance(sources.instance_type) then 'accelerator'
            when sources.instance_type <> '' then 'compute'
            else 'other'
        end as cost_class,
        case
            -- a volume bills while it exists, attached to an instance or not
            when sources.usage_type like '%EBS:Volume%' then 'disk'
            -- data kept apart from any instance: S3, EFS and FSx storage, snapshots
            when sources.usage_type like '%TimedStorage%' or sources.usage_type like '%EBS:Snapshot%' then 'stored_data'
            when
                sources.usage_type like '%Usage:%'
                and sources.usage_type not like '%EBS:%'
                and sources.instance_type <> ''
                then 'instance'
        end as usage_kind,
        aws_gpu_model(sources.instance_type) as gpu_model,
        cast(null as integer) as gpu_count,
        case
            -- a commitment fee's effective cost is its unused part (docs/data-dictionary.md#normalizedcost_lines)
            when sources.line_item_type in ('SavingsPlanRecurringFee', 'RIFee') then 'Unused'
            when sources.line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Used'
        end as commitment_status
    from sources
)

select * from final
