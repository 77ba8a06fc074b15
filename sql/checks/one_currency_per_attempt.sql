-- An attempt's cost is summed in one currency: no attempt draws slices from lines billed in two currencies.
-- grain: one row per (allocation_model, attempt_id) with more than one billing currency
-- periods: combined (an attempt's slices of every billing period)
with period_slice_sums as (
    select * from allocation.period_slice_sums
),

mixed_attempts as (
    -- attempts whose slices, of any model, are in more than one currency: only these can break the
    -- rule under a model, so only their slices are read again per model
    select period_slice_sums.attempt_id
    from period_slice_sums
    where period_slice_sums.attempt_id is not null
    group by period_slice_sums.attempt_id
    having min(period_slice_sums.billing_currency) <> max(period_slice_sums.billing_currency)
),

stored_currencies as (
    -- each period's sums read once, by the models they belong to, before the models are expanded
    select distinct
        period_slice_sums.allocation_models,
        period_slice_sums.attempt_id,
        period_slice_sums.billing_currency
    from period_slice_sums
    semi join mixed_attempts on period_slice_sums.attempt_id = mixed_attempts.attempt_id
),

final as (
    select
        allocation_models.allocation_model,
        stored_currencies.attempt_id,
        count(distinct stored_currencies.billing_currency) as currencies
    from stored_currencies
    inner join allocation_models() as allocation_models
        on in_allocation_model(stored_currencies.allocation_models, allocation_models.allocation_model)
    group by allocation_models.allocation_model, stored_currencies.attempt_id
    having count(distinct stored_currencies.billing_currency) > 1
)

select * from final
