-- The slices placed on attempts and experiments, summed per billing period: what the marts spanning periods read.
-- grain: one row per (billing_period, allocation_models, attempt_id, experiment_id, allocation_kind,
-- attribution_method, provider, billing_account_id, billing_currency, cost_class, commitment_status)
-- materialized: table (published, one Parquet folder per billing_period: a period's few sums per attempt and
-- line class, so a mart spanning periods combines each period's sums instead of re-reading its slices)
-- marts.attempt_costs, marts.experiment_costs, marts.tco_breakdown, marts.gpu_utilisation and
-- checks.one_currency_per_attempt read these sums, never allocation.cost_slices: an attempt running over two
-- months has rows in both. Every slice with an attempt or an experiment is summed once, by the models it belongs
-- to (allocation_models: 'both', 'marginal' or 'fully_loaded'); the readers expand the models. Its line's
-- provider, account and currency are its profile's, as in allocation.cost_slices; cost_class and
-- commitment_status are the profile's classification (docs/economics.md#the-classification-of-a-cost-line).
-- The sums are exact: the four bases are DECIMAL(38, 10) sums of the slices.
with cost_slices as (
    select * from allocation.cost_slices
),

profiles as (
    select * from normalized.cost_line_profiles
),

final as (
    select
        cost_slices.billing_period,
        cost_slices.allocation_models,
        cost_slices.attempt_id,
        cost_slices.experiment_id,
        cost_slices.allocation_kind,
        cost_slices.attribution_method,
        cost_slices.provider,
        cost_slices.billing_account_id,
        cost_slices.billing_currency,
        profiles.cost_class,
        profiles.commitment_status,
        count(*) as cost_slices,
        money_sum_bases(cost_slices)  -- noqa: AL03
    from cost_slices
    left join profiles on cost_slices.profile_key = profiles.profile_key
    where cost_slices.attempt_id is not null or cost_slices.experiment_id is not null
    group by all
)

select * from final
