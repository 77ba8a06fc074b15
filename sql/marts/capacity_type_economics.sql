-- Spot against on-demand per capacity type: price, goodput, interruptions, lost work, break-even.
-- grain: one row per (capacity_type, allocation_model)
-- p = cost / billed GPU-hours (effective_cost). G = productive / billed GPU-hours over attempts with
-- measured goodput (goodput_source measured), else the GPU-hour weighted Young/Daly modeled goodput
-- (goodput_source modeled_young_daly). A capacity type pays off against on-demand only if
-- p / p_on_demand < G / G_on_demand; break_even_price_per_gpu_hour = p_on_demand x G / G_on_demand.
-- Interruptions: interrupted events, plus attempts with status interrupted that logged none.
-- Accepted results count in the capacity type of the accepting attempt; the quotient is exact.
with goodput as (
    select * from marts.attempt_goodput
),

outcomes as (
    select * from marts.experiment_outcomes
),

per_type as (
    select
        goodput.capacity_type,
        goodput.allocation_model,
        count(*) as attempts,
        sum(
            case when goodput.interruptions = 0 and goodput.status = 'interrupted' then 1 else goodput.interruptions end
        ) as interruptions,
        money(sum(goodput.cost)) as total_cost,
        exact_double_sum(goodput.billed_gpu_hours) as billed_gpu_hours,
        count(goodput.productive_gpu_hours) as attempts_measured,
        exact_double_sum(goodput.productive_gpu_hours) as productive_gpu_hours,
        exact_double_sum_where(goodput.billed_gpu_hours, goodput.productive_gpu_hours is not null)
            as measured_billed_gpu_hours,
        exact_double_sum(goodput.lost_work_gpu_hours) as lost_work_gpu_hours,
        money(sum(goodput.lost_work_cost)) as lost_work_cost,
        exact_double_sum(goodput.checkpoint_restore_gpu_hours)
            as checkpoint_restore_gpu_hours,
        exact_double_sum(goodput.recovery_gpu_hours) as recovery_gpu_hours,
        exact_double_sum(goodput.billed_gpu_hours * goodput.modeled_goodput)
        / nullif(
            exact_double_sum_where(goodput.billed_gpu_hours, goodput.modeled_goodput is not null),
            0
        )
            as modeled_goodput
    from goodput
    group by goodput.capacity_type, goodput.allocation_model
),

accepted as (
    select
        goodput.capacity_type,
        goodput.allocation_model,
        count(*) as accepted_results,
        cast(avg(cast(outcomes.time_to_target_hours as decimal(38, 18))) as double) as avg_time_to_target_hours
    from outcomes
    inner join goodput
        on
            outcomes.accepting_attempt_id = goodput.attempt_id
            and outcomes.allocation_model = goodput.allocation_model
    where outcomes.accepted
    group by goodput.capacity_type, goodput.allocation_model
),

rates as (
    select
        per_type.*,
        coalesce(accepted.accepted_results, 0) as accepted_results,
        accepted.avg_time_to_target_hours,
        cast(per_type.total_cost * 10000000000 as hugeint) as cost_units,
        per_type.total_cost / nullif(per_type.billed_gpu_hours, 0) as price_per_gpu_hour,
        per_type.productive_gpu_hours / nullif(per_type.measured_billed_gpu_hours, 0) as measured_goodput
    from per_type
    left join accepted
        on
            per_type.capacity_type is not distinct from accepted.capacity_type
            and per_type.allocation_model = accepted.allocation_model
),

with_goodput as (
    select
        rates.*,
        coalesce(rates.measured_goodput, rates.modeled_goodput) as goodput,
        case
            when rates.measured_goodput is not null then 'measured'
            when rates.modeled_goodput is not null then 'modeled_young_daly'
        end as goodput_source
    from rates
),

on_demand as (
    select
        with_goodput.allocation_model,
        with_goodput.price_per_gpu_hour as on_demand_price,
        with_goodput.goodput as on_demand_goodput
    from with_goodput
    where with_goodput.capacity_type = 'on_demand'
),

final as (
    select
        with_goodput.capacity_type,
        with_goodput.allocation_model,
        with_goodput.attempts,
        with_goodput.interruptions,
        with_goodput.total_cost,
        with_goodput.billed_gpu_hours,
        money(with_goodput.price_per_gpu_hour) as price_per_gpu_hour,
        with_goodput.attempts_measured,
        with_goodput.measured_goodput,
        with_goodput.modeled_goodput,
        with_goodput.goodput,
        with_goodput.goodput_source,
        money(with_goodput.price_per_gpu_hour / nullif(with_goodput.goodput, 0))
            as price_per_useful_gpu_hour,
        with_goodput.lost_work_gpu_hours,
        with_goodput.lost_work_cost,
        with_goodput.checkpoint_restore_gpu_hours,
        with_goodput.recovery_gpu_hours,
        with_goodput.accepted_results,
        case
            when with_goodput.accepted_results > 0
                then
                    cast(
                        sign(with_goodput.cost_units)
                        * (
                            (abs(with_goodput.cost_units) * 2 + with_goodput.accepted_results)
                            // (2 * with_goodput.accepted_results)
                        )
                        as decimal(38, 0)
                    )
                    * cast(0.0000000001 as decimal(11, 10))
        end as cost_per_accepted_result,
        case when with_goodput.accepted_results = 0 then 'no_accepted_result' end as no_result_reason,
        with_goodput.avg_time_to_target_hours,
        with_goodput.price_per_gpu_hour / nullif(on_demand.on_demand_price, 0) as price_ratio_to_on_demand,
        with_goodput.goodput / nullif(on_demand.on_demand_goodput, 0) as goodput_ratio_to_on_demand,
        money(
            on_demand.on_demand_price * with_goodput.goodput / nullif(on_demand.on_demand_goodput, 0)
        ) as break_even_price_per_gpu_hour,
        case
            when coalesce(with_goodput.capacity_type, '') <> 'on_demand'
                then
                    with_goodput.price_per_gpu_hour / nullif(on_demand.on_demand_price, 0)
                    < with_goodput.goodput / nullif(on_demand.on_demand_goodput, 0)
        end as pays_off_against_on_demand
    from with_goodput
    left join on_demand on with_goodput.allocation_model = on_demand.allocation_model
)

select * from final
