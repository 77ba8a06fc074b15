-- Google Cloud billing export rows as provider-neutral cost lines (FOCUS 1.2 meanings, four cost bases, exact).
-- grain: one row per export row (line_id); billing_period is the invoice month, never the usage month
-- normalized.cost_lines unions this with the other providers' *_cost_lines views (docs/gcp.md). Each line names its
-- profile (the text columns with few values: provider, account, currency, category, service, ...) by profile_key, a
-- hash of the columns staging.gcp_line_profiles computes them from (gcp_profile_key, pipeline/dag/profile_macros.py).
with gcp_line_items as (
    select * from staging.gcp_billing_line_items
),

bases as (
    select
        gcp_line_items.*,
        gcp_line_items.cost as billed_cost,
        -- the usage price: cost less the credits that set it (sustained use, committed use,
        -- fee offsets, free tier, subscription benefits); commitment fees are their own rows
        gcp_line_items.cost
        + gcp_line_items.credit_sustained_usage_discount
        + gcp_line_items.credit_committed_usage_discount
        + gcp_line_items.credit_committed_usage_discount_dollar_base
        + gcp_line_items.credit_fee_utilization_offset
        + gcp_line_items.credit_free_tier
        + gcp_line_items.credit_subscription_benefit as effective_cost,
        -- cost_at_list is missing from tables created before 2023-06-29 and on some
        -- tax and adjustment rows: list cost is then the cost itself
        coalesce(gcp_line_items.cost_at_list, gcp_line_items.cost) as list_cost,
        gcp_line_items.cost + gcp_line_items.credits_total as net_cost,
        gcp_line_items.usage_amount_in_pricing_units as pricing_quantity
    from gcp_line_items
),

label_sets as (
    -- each distinct label list's tags once, joined to its rows: made on every row, the map cost
    -- 3.4 CPU s per 2M rows of three or four labels, against 1.6.
    -- GKE cost allocation: a pod label k8s-label/<key> is also readable as <key>, unless the
    -- row carries a label <key> of its own (the plain label wins)
    select
        distinct_labels.label_entries,
        map_from_entries(list_concat(
            distinct_labels.label_entries,
            list_transform(
                list_filter(
                    distinct_labels.label_entries,
                    lambda e: starts_with(e.key, 'k8s-label/')  -- noqa: RF02
                    and not list_contains(
                        list_transform(distinct_labels.label_entries, lambda f: f.key),  -- noqa: RF02
                        substr(e.key, 11)  -- noqa: RF02
                    )
                ),
                lambda e: { 'key': substr(e.key, 11), 'value': e.value }  -- noqa: RF02
            )
        )) as attribution_tags
    from (select distinct gcp_line_items.label_entries from gcp_line_items) as distinct_labels
),

invoice_periods as (
    -- each invoice month's period once, joined to its rows: read through the Pacific time zone's
    -- calendar on every row, the start and end cost about 2.5 CPU s per 10M rows. A left join: a row
    -- is never dropped, and one without an invoice month (which
    -- ingest refuses, from files and from BigQuery) keeps a NULL period, as when each row computed its own.
    select
        invoice_months.invoice_month,
        substr(invoice_months.invoice_month, 1, 4) || '-' || substr(invoice_months.invoice_month, 5, 2)
            as billing_period,
        -- invoice months start at midnight Pacific time
        timezone(
            'America/Los_Angeles', cast(strptime(invoice_months.invoice_month || '01', '%Y%m%d') as timestamp)
        ) as billing_period_start,
        timezone(
            'America/Los_Angeles',
            cast(strptime(invoice_months.invoice_month || '01', '%Y%m%d') as timestamp) + interval 1 month
        ) as billing_period_end
    from (select distinct gcp_line_items.invoice_month from gcp_line_items) as invoice_months
),

final as (
    select
        bases.line_id,
        bases.source_line,
        invoice_periods.billing_period,
        invoice_periods.billing_period_start,
        invoice_periods.billing_period_end,
        bases.usage_start as charge_period_start,
        bases.usage_end as charge_period_end,
        bases.resource_short_name as resource_id,
        bases.usage_amount as consumed_quantity,
        -- seconds the resource ran inside the row's window: time-unit usage (seconds, hours) says
        -- how long, bounded by the window; other units (byte-seconds, bytes) span the window
        case
            when lower(coalesce(bases.usage_unit, '')) in ('seconds', 'second', 's')
                then least(
                    greatest(coalesce(cast(bases.usage_amount as double), 0), 0),
                    epoch(bases.usage_end) - epoch(bases.usage_start)
                )
            when lower(coalesce(bases.usage_unit, '')) in ('hours', 'hour', 'h')
                then least(
                    greatest(coalesce(cast(bases.usage_amount as double), 0), 0) * 3600,
                    epoch(bases.usage_end) - epoch(bases.usage_start)
                )
            else epoch(bases.usage_end) - epoch(bases.usage_start)
        end as usage_seconds,
        money_bases(bases),  -- noqa: AL03, RF02
        -- a row without credits has none by type: the empty map, a constant made once
        case
            when array_length(bases.credit_entries) = 0
                then map_from_entries(
                    list_filter([{ 'key': 'OTHER', 'value': money(0) }], lambda e: e.value <> 0)  -- noqa: RF01, RF02
                )
            else map_from_entries(list_filter([
                { 'key': 'SUSTAINED_USAGE_DISCOUNT', 'value': bases.credit_sustained_usage_discount },
                { 'key': 'COMMITTED_USAGE_DISCOUNT', 'value': bases.credit_committed_usage_discount },
                {
                    'key': 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE',
                    'value': bases.credit_committed_usage_discount_dollar_base
                },
                { 'key': 'FEE_UTILIZATION_OFFSET', 'value': bases.credit_fee_utilization_offset },
                { 'key': 'DISCOUNT', 'value': bases.credit_discount },
                { 'key': 'FREE_TIER', 'value': bases.credit_free_tier },
                { 'key': 'PROMOTION', 'value': bases.credit_promotion },
                { 'key': 'RESELLER_MARGIN', 'value': bases.credit_reseller_margin },
                { 'key': 'SUBSCRIPTION_BENEFIT', 'value': bases.credit_subscription_benefit },
                { 'key': 'OTHER', 'value': bases.credit_other }
            ], lambda e: e.value <> 0))  -- noqa: RF01, RF02
        end as credits_by_type,
        label_sets.attribution_tags as tags,
        -- which format's tag-key spelling applies (pipeline/config/tags.py)
        'gcp_billing_export' as source_format,
        bases.pricing_quantity,
        -- the export has no unit prices: each is its cost per pricing unit (list: cost at list;
        -- contracted: cost, the negotiated price before credits), rounded to 10 places; a row of
        -- no quantity has a price only when it costs nothing
        case
            when bases.pricing_quantity <> 0
                then money(cast(bases.list_cost as double) / cast(bases.pricing_quantity as double))
            when bases.list_cost = 0 then money(0)
        end as list_unit_price,
        case
            when bases.pricing_quantity <> 0
                then money(cast(bases.cost as double) / cast(bases.pricing_quantity as double))
            when bases.cost = 0 then money(0)
        end as contracted_unit_price,
        -- contracted cost: cost is at the account's negotiated price, before every credit
        bases.cost as contracted_cost,
        -- the export names no commitment on its rows
        money(null) as commitment_discount_quantity,
        money(null) as unused_commitment_quantity,
        -- costs are in the billing currency: normalized.focus repeats them for PricingCurrency
        money(null) as pricing_currency_list_unit_price,
        money(null) as pricing_currency_contracted_unit_price,
        money(null) as pricing_currency_effective_cost,
        bases.resource_name,
        -- FOCUS 1.3 split cost allocation: a FOCUS file's rows only
        no_focus_allocation(),  -- noqa: AL03
        gcp_profile_key(bases) as profile_key  -- noqa: RF02
    from bases
    left join invoice_periods on bases.invoice_month = invoice_periods.invoice_month
    -- every row's list is among the distinct lists (the view makes a missing list empty)
    left join label_sets on bases.label_entries = label_sets.label_entries
)

select * from final
