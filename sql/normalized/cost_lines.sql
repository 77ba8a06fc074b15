-- Provider-neutral cost lines with FOCUS 1.2 meanings and the four cost bases, money DECIMAL(38, 10).
-- grain: one row per billed line item (line_id), every provider
-- materialized: parquet (written once, as the published Parquet, and read by the build through a view:
-- storing its 43 text columns as a DuckDB table cost more CPU than computing and writing the Parquet)
-- Each provider's staging.<provider>_cost_lines view emits these columns in this order; line ids are
-- disjoint by construction (each source owns a range: AWS CUR 2.0 ids are below 2^56, the Google
-- Cloud billing export's start at 2^56, FOCUS files' at 2 * 2^56).
-- The attribution tags are read here, once, from the tags map with the configured keys, each source
-- format under its own spelling: CUR lines under the CUR-normalized keys (attempt-id ->
-- user_attempt_id), Google Cloud labels and FOCUS Tags under the keys exactly as configured.
with aws_cost_lines as (
    select * from staging.aws_cost_lines
),

gcp_cost_lines as (
    select * from staging.gcp_cost_lines
),

focus_cost_lines as (
    select * from staging.focus_cost_lines
),

attribution_settings as (
    select * from config.attribution
),

provider_lines as (
    select * from aws_cost_lines
    union all
    select * from gcp_cost_lines
    union all
    select * from focus_cost_lines
),

final as (
    select
        provider_lines.line_id,
        provider_lines.provider,
        provider_lines.source_delivery,
        provider_lines.source_file,
        provider_lines.source_line,
        provider_lines.billing_account_id,
        provider_lines.billing_account_name,
        provider_lines.sub_account_id,
        provider_lines.sub_account_name,
        provider_lines.billing_period,
        provider_lines.billing_period_start,
        provider_lines.billing_period_end,
        provider_lines.charge_period_start,
        provider_lines.charge_period_end,
        provider_lines.charge_category,
        provider_lines.charge_class,
        provider_lines.charge_description,
        provider_lines.provider_line_type,
        provider_lines.service_name,
        provider_lines.sku_id,
        provider_lines.usage_type,
        provider_lines.operation,
        provider_lines.resource_id,
        provider_lines.region_id,
        provider_lines.availability_zone,
        provider_lines.instance_type,
        provider_lines.pricing_unit,
        provider_lines.resource_class,
        provider_lines.consumed_quantity,
        provider_lines.usage_seconds,
        provider_lines.billing_currency,
        provider_lines.invoice_id,
        provider_lines.billed_cost,
        provider_lines.effective_cost,
        provider_lines.list_cost,
        provider_lines.net_cost,
        provider_lines.credits_by_type,
        provider_lines.tags,
        list_filter(
            list_transform(
                case
                    when provider_lines.source_format = 'aws_cur' then attribution_settings.attempt_tag_keys
                    else attribution_settings.attempt_label_keys
                end,
                lambda tag_key: provider_lines.tags[tag_key]  -- noqa: RF02
            ),
            lambda tag_value: coalesce(tag_value, '') <> ''  -- noqa: RF02
        )[1] as attempt_tag,
        list_filter(
            list_transform(
                case
                    when provider_lines.source_format = 'aws_cur' then attribution_settings.experiment_tag_keys
                    else attribution_settings.experiment_label_keys
                end,
                lambda tag_key: provider_lines.tags[tag_key]  -- noqa: RF02
            ),
            lambda tag_value: coalesce(tag_value, '') <> ''  -- noqa: RF02
        )[1] as experiment_tag,
        provider_lines.source_format,
        provider_lines.provider_name,
        provider_lines.publisher_name,
        provider_lines.invoice_issuer_name,
        provider_lines.service_category,
        provider_lines.charge_frequency,
        provider_lines.pricing_category,
        provider_lines.pricing_quantity,
        provider_lines.consumed_unit,
        provider_lines.list_unit_price,
        provider_lines.contracted_unit_price,
        provider_lines.contracted_cost,
        provider_lines.commitment_discount_category,
        provider_lines.commitment_discount_id,
        provider_lines.commitment_discount_name,
        provider_lines.commitment_discount_status,
        provider_lines.commitment_discount_type,
        provider_lines.region_name,
        provider_lines.resource_name,
        provider_lines.resource_type,
        provider_lines.sku_price_id
    from provider_lines
    cross join attribution_settings
)

select * from final
