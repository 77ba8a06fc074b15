-- Measured GPU utilisation of each attempt beside its billed accelerator cost: the idle share of that cost.
-- grain: one row per (attempt_id, allocation_model), for every attempt a prometheus source measured
-- periods: combined (an attempt's GPU cost adds up every billing period it ran in)
-- Held GPU-hours: gpu_count x [started_at, ended_at) of the attempt_resources rows the source measured (those
-- gpu_usage names; an empty count, start or end is the attempt's), an open one held until the run clock.
-- Sampled GPU-hours: the seconds samples cover (coverage = sampled / held: no sample is not zero). Busy GPU-hours
-- weigh them by utilisation;
-- idle GPU-hours are the sampled ones below idle_below percent. Accelerator cost: the attempt's effective_cost on
-- the lines the profile classifies cost_class = 'accelerator' (docs/economics.md#the-classification-of-a-cost-line:
-- a GPU SKU, or a machine whose price includes GPUs, on every provider) under each model; idle_cost and
-- unsampled_cost are its shares by idle and by unsampled GPU-hours of the held ones, rounded to 10 places, and
-- active_cost (sampled GPU-hours at or above the threshold) takes the rest: the three sum exactly to the cost.
with usage as (
    select * from staging.gpu_usage
),

attempts as (
    select * from staging.attempts
),

attempt_resources as (
    select * from staging.attempt_resources
),

run_clock as (
    select * from staging.run_clock
),

period_slice_sums as (
    select * from allocation.period_slice_sums
),

measured_resources as (
    select distinct
        usage.attempt_id,
        usage.resource_id
    from usage
),

held as (
    select
        attempt_resources.attempt_id,
        exact_double_sum(
            coalesce(attempt_resources.gpu_count, attempts.gpu_count)
            * (
                epoch_us(coalesce(attempt_resources.ended_at, attempts.ended_at, run_clock.now))
                - epoch_us(coalesce(attempt_resources.started_at, attempts.started_at))
            )
            / 3600000000.0
        ) as held_gpu_hours
    from attempt_resources
    inner join measured_resources
        on
            attempt_resources.attempt_id = measured_resources.attempt_id
            and attempt_resources.resource_id = measured_resources.resource_id
    inner join attempts on attempt_resources.attempt_id = attempts.attempt_id
    cross join run_clock
    where
        coalesce(attempt_resources.gpu_count, attempts.gpu_count) > 0
        and coalesce(attempt_resources.started_at, attempts.started_at) is not null
    group by attempt_resources.attempt_id
),

measured as (
    select
        usage.attempt_id,
        min(usage.method) as method,
        min(usage.metric) as metric,
        min(usage.idle_below) as idle_below,
        exact_double_sum(usage.sampled_gpu_seconds) / 3600.0 as sampled_gpu_hours,
        exact_double_sum(usage.busy_gpu_seconds) / 3600.0 as busy_gpu_hours,
        coalesce(exact_double_sum_where(usage.sampled_gpu_seconds, usage.state = 'idle'), 0) / 3600.0
            as idle_gpu_hours,
        count(*) filter (where usage.state = 'idle') as idle_windows,
        cast(sum(usage.samples) as bigint) as samples
    from usage
    group by usage.attempt_id
),

accelerator_slices as (
    -- the slices of accelerator lines (each period's sums), added once per stored model before the
    -- models are expanded
    select
        period_slice_sums.allocation_models,
        period_slice_sums.attempt_id,
        sum(period_slice_sums.effective_cost) as effective_cost,
        min(period_slice_sums.billing_currency) as billing_currency
    from period_slice_sums
    inner join measured on period_slice_sums.attempt_id = measured.attempt_id
    where period_slice_sums.cost_class = 'accelerator'
    group by period_slice_sums.allocation_models, period_slice_sums.attempt_id
),

model_costs as (
    select
        allocation_models.allocation_model,
        accelerator_slices.attempt_id,
        sum(accelerator_slices.effective_cost) as accelerator_cost,
        min(accelerator_slices.billing_currency) as billing_currency
    from accelerator_slices
    inner join allocation_models() as allocation_models
        on in_allocation_model(accelerator_slices.allocation_models, allocation_models.allocation_model)
    group by allocation_models.allocation_model, accelerator_slices.attempt_id
),

shares as (
    select
        measured.*,
        attempts.experiment_id,
        allocation_models.allocation_model,
        coalesce(held.held_gpu_hours, 0) as held_gpu_hours,
        model_costs.billing_currency,
        coalesce(model_costs.accelerator_cost, 0) as accelerator_cost,
        coalesce(measured.idle_gpu_hours / nullif(held.held_gpu_hours, 0), 0) as idle_share,
        coalesce(
            greatest(held.held_gpu_hours - measured.sampled_gpu_hours, 0) / nullif(held.held_gpu_hours, 0), 0
        ) as unsampled_share
    from measured
    inner join attempts on measured.attempt_id = attempts.attempt_id
    cross join allocation_models() as allocation_models
    left join held on measured.attempt_id = held.attempt_id
    left join model_costs
        on
            measured.attempt_id = model_costs.attempt_id
            and allocation_models.allocation_model = model_costs.allocation_model
),

rounded as (
    select
        shares.*,
        money(shares.accelerator_cost * shares.idle_share) as idle_cost,
        money(shares.accelerator_cost * shares.unsampled_share) as unsampled_cost
    from shares
),

final as (
    select
        rounded.attempt_id,
        rounded.experiment_id,
        rounded.allocation_model,
        'prometheus_' || rounded.method as method,
        rounded.metric,
        rounded.idle_below,
        rounded.held_gpu_hours,
        rounded.sampled_gpu_hours,
        rounded.sampled_gpu_hours / nullif(rounded.held_gpu_hours, 0) as coverage,
        rounded.busy_gpu_hours,
        rounded.idle_gpu_hours,
        rounded.busy_gpu_hours / nullif(rounded.sampled_gpu_hours, 0) as mean_utilisation,
        rounded.idle_windows,
        rounded.samples,
        'effective_cost' as cost_basis,
        rounded.billing_currency,
        money(rounded.accelerator_cost) as accelerator_cost,
        rounded.idle_cost,
        rounded.unsampled_cost,
        money(rounded.accelerator_cost - rounded.idle_cost - rounded.unsampled_cost) as active_cost
    from rounded
)

select * from final
