-- Every attempt has exactly one row per model in marts.attempt_costs (zero is a value, not a missing row).
-- grain: one row per (attempt_id, allocation_model) missing or duplicated
with attempts as (
    select * from staging.attempts
),

attempt_costs as (
    select * from marts.attempt_costs
),

allocation_models as (
    select unnest(['marginal', 'fully_loaded']) as allocation_model
),

expected as (
    select
        attempts.attempt_id,
        allocation_models.allocation_model
    from attempts
    cross join allocation_models
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
    left join counted
        on
            expected.attempt_id = counted.attempt_id
            and expected.allocation_model = counted.allocation_model
    where coalesce(counted.occurrences, 0) <> 1
)

select * from final
