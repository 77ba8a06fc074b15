-- Every attempt has exactly one row per model in marts.attempt_costs (zero is a value, not a missing row).
-- grain: one row per (attempt_id, allocation_model) missing or duplicated
with attempts as (
    select * from staging.attempts
),

attempt_costs as (
    select * from marts.attempt_costs
),

expected as (
    select
        attempts.attempt_id,
        allocation_models.allocation_model
    from attempts
    cross join allocation_models() as allocation_models
),

counted as (
    select
        attempt_costs.attempt_id,
        attempt_costs.allocation_model,
        count(*) as occurrences
    from attempt_costs
    group by attempt_costs.attempt_id, attempt_costs.allocation_model
),

final as (
    select
        expected.attempt_id,
        expected.allocation_model,
        coalesce(counted.occurrences, 0) as occurrences
    from expected
    left join counted on same_row_and_model(expected, counted, 'attempt_id')  -- noqa: RF02
    where coalesce(counted.occurrences, 0) <> 1
)

select * from final
