-- Where the money nobody took went, by reason and service (fully loaded model, effective cost).
select
    billing_period,
    unallocated_reason,
    service_name,
    sum(effective_cost) as effective_cost
from marts.unallocated_costs
where allocation_model = 'fully_loaded'
group by billing_period, unallocated_reason, service_name
order by effective_cost desc
