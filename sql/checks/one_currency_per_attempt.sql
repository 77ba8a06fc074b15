-- An attempt's cost is summed in one currency: no attempt draws slices from lines billed in two currencies.
-- grain: one row per (allocation_model, attempt_id) with more than one billing currency
with cost_slices as (
    select * from allocation.cost_slices
),

mixed_attempts as (
    -- attempts whose slices, of any model, are in more than one currency: only these can break the
    -- rule under a model, so only their slices are read again per model
    select cost_slices.attempt_id
    from cost_slices
    where cost_slices.attempt_id is not null
    group by cost_slices.attempt_id
    having min(cost_slices.billing_currency) <> max(cost_slices.billing_currency)
),

stored_currencies as (
    -- each stored slice read once, by the models it belongs to, before the models are expanded
    select distinct
        cost_slices.allocation_models,
        cost_slices.attempt_id,
        cost_slices.billing_currency
    from cost_slices
    semi join mixed_attempts on cost_slices.attempt_id = mixed_attempts.attempt_id
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
