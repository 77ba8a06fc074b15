-- Training TCO per experiment and billing period by category, comparable with GPU TCO calculators.
-- grain: one row per (experiment_id, billing_period, billing_currency, allocation_model, cost_category)
-- periods: combined (goodput and teams come from attempts that span billing periods)
-- Every category appears (0 when nothing was billed in it). On the bill (effective_cost of the slices
-- placed on the experiment, its attempts or, fully loaded, pooled onto them), from the line profile's
-- classification only (docs/economics.md#the-classification-of-a-cost-line), first match wins:
-- idle_capacity (commitment_status Unused: an unused commitment or reservation), then by cost_class:
-- support, control_plane, networking (network), storage, gpu_compute (accelerator), other_compute
-- (compute), other (anything else: tax, credits, ...). Off the bill: goodput_loss = gpu_compute x
-- (1/G - 1), G the experiment's GPU-hour weighted goodput_used from marts.attempt_goodput; NULL when
-- G is unknown.
-- Beside goodput on the goodput_loss row, the experiment's measured GPU utilisation (marts.gpu_utilisation, same
-- model): mean_utilisation (busy / sampled GPU-hours), busy and idle GPU-hours, utilisation_coverage (sampled /
-- held); NULL when no prometheus source measured its attempts.
with period_slice_sums as (
    select * from allocation.period_slice_sums
),

goodput as (
    select * from marts.attempt_goodput
),

utilisation as (
    select * from marts.gpu_utilisation
),

experiments as (
    select * from staging.experiments
),

categories as (
    select
        unnest([
            'gpu_compute', 'other_compute', 'storage', 'networking', 'control_plane', 'support',
            'idle_capacity', 'other', 'goodput_loss'
        ]) as cost_category,
        unnest([1, 2, 3, 4, 5, 6, 7, 8, 9]) as category_order
),

classified as (
    -- each period's sums classified once, by the models they belong to, before the models are
    -- expanded: a sum of both models meets the categories once; the classification is the lines'
    -- profile's, carried by the sums
    select
        period_slice_sums.allocation_models,
        period_slice_sums.experiment_id,
        period_slice_sums.billing_period,
        period_slice_sums.billing_currency,
        case
            when period_slice_sums.commitment_status = 'Unused' then 'idle_capacity'
            when period_slice_sums.cost_class = 'network' then 'networking'
            when period_slice_sums.cost_class = 'accelerator' then 'gpu_compute'
            when period_slice_sums.cost_class = 'compute' then 'other_compute'
            when period_slice_sums.cost_class in ('support', 'control_plane', 'storage')
                then period_slice_sums.cost_class
            else 'other'
        end as cost_category,
        sum(period_slice_sums.effective_cost) as effective_cost
    from period_slice_sums
    where period_slice_sums.experiment_id is not null
    group by all
),

on_bill as (
    select
        allocation_models.allocation_model,
        classified.experiment_id,
        classified.billing_period,
        classified.billing_currency,
        classified.cost_category,
        sum(classified.effective_cost) as effective_cost
    from classified
    inner join allocation_models() as allocation_models
        on in_allocation_model(classified.allocation_models, allocation_models.allocation_model)
    group by all
),

groups as (
    select distinct
        on_bill.allocation_model,
        on_bill.experiment_id,
        on_bill.billing_period,
        on_bill.billing_currency
    from on_bill
),

experiment_goodput as (
    select
        goodput.allocation_model,
        goodput.experiment_id,
        exact_double_sum(goodput.billed_gpu_hours * goodput.goodput_used)
        / nullif(exact_double_sum(goodput.billed_gpu_hours), 0) as goodput,
        bool_or(goodput.goodput_source = 'modeled_young_daly') as any_modeled
    from goodput
    where goodput.goodput_used is not null and goodput.billed_gpu_hours > 0
    group by goodput.allocation_model, goodput.experiment_id
),

experiment_utilisation as (
    select
        utilisation.allocation_model,
        utilisation.experiment_id,
        exact_double_sum(utilisation.busy_gpu_hours)
        / nullif(exact_double_sum(utilisation.sampled_gpu_hours), 0) as mean_utilisation,
        exact_double_sum(utilisation.busy_gpu_hours) as busy_gpu_hours,
        exact_double_sum(utilisation.idle_gpu_hours) as idle_gpu_hours,
        exact_double_sum(utilisation.sampled_gpu_hours)
        / nullif(exact_double_sum(utilisation.held_gpu_hours), 0) as utilisation_coverage
    from utilisation
    group by utilisation.allocation_model, utilisation.experiment_id
),

final as (
    select
        groups.experiment_id,
        experiments.team,
        groups.billing_period,
        groups.billing_currency,
        groups.allocation_model,
        categories.cost_category,
        categories.category_order,
        categories.cost_category <> 'goodput_loss' as on_bill,
        case
            when categories.cost_category = 'goodput_loss'
                then
                    money(
                        coalesce(gpu.effective_cost, 0)
                        * (1 / nullif(experiment_goodput.goodput, 0) - 1)
                    )
            else money(coalesce(on_bill.effective_cost, 0))
        end as effective_cost,
        case when categories.cost_category = 'goodput_loss' then experiment_goodput.goodput end as goodput,
        case
            when categories.cost_category <> 'goodput_loss' then null
            when experiment_goodput.any_modeled then 'includes_modeled_young_daly'
            when experiment_goodput.goodput is not null then 'measured'
        end as goodput_source,
        case when categories.cost_category = 'goodput_loss' then experiment_utilisation.mean_utilisation end
            as mean_utilisation,
        case when categories.cost_category = 'goodput_loss' then experiment_utilisation.busy_gpu_hours end
            as busy_gpu_hours,
        case when categories.cost_category = 'goodput_loss' then experiment_utilisation.idle_gpu_hours end
            as idle_gpu_hours,
        case when categories.cost_category = 'goodput_loss' then experiment_utilisation.utilisation_coverage end
            as utilisation_coverage
    from groups
    cross join categories
    left join experiments on groups.experiment_id = experiments.experiment_id
    left join on_bill
        on
            groups.allocation_model = on_bill.allocation_model
            and groups.experiment_id = on_bill.experiment_id
            and groups.billing_period = on_bill.billing_period
            and groups.billing_currency = on_bill.billing_currency
            and categories.cost_category = on_bill.cost_category
    left join on_bill as gpu
        on
            groups.allocation_model = gpu.allocation_model
            and groups.experiment_id = gpu.experiment_id
            and groups.billing_period = gpu.billing_period
            and groups.billing_currency = gpu.billing_currency
            and gpu.cost_category = 'gpu_compute'
    left join experiment_goodput
        on
            groups.allocation_model = experiment_goodput.allocation_model
            and groups.experiment_id = experiment_goodput.experiment_id
    left join experiment_utilisation
        on
            groups.allocation_model = experiment_utilisation.allocation_model
            and groups.experiment_id = experiment_utilisation.experiment_id
)

select * from final
