-- A FOCUS 1.3 origin charge is not in the bill beside the allocated rows that replace it.
-- grain: one row per FOCUS row of no AllocatedMethodId that is the origin of allocated rows beside it
-- FOCUS 1.3 split cost allocation replaces an origin charge with allocated rows that carry its dimensions and sum
-- exactly to its costs, and runcost reads each row as a cost line of its own: a file that kept the origin row as
-- well would bill it twice. The origin is a row without AllocatedMethodId whose ResourceId, charge window, billing
-- account, SkuPriceId and charge category are the allocated rows' and whose BilledCost is their sum. Only lines with
-- an AllocatedMethodId are grouped, and only the lines of their resources and windows looked at, so a bill without
-- allocated rows costs a scan of two columns.
with cost_line_facts as (
    select * from normalized.cost_line_facts
),

cost_line_profiles as (
    select * from normalized.cost_line_profiles
),

allocated_lines as (
    select
        -- the origin's ResourceId: an allocated row's resource_id may be the resource it was allocated to
        coalesce(cost_line_facts.origin_resource_id, cost_line_facts.resource_id) as resource_id,
        cost_line_facts.charge_period_start,
        cost_line_facts.charge_period_end,
        cost_line_facts.billed_cost,
        cost_line_facts.profile_key
    from cost_line_facts
    where cost_line_facts.allocated_method_id is not null
),

allocations as (
    select
        allocated_lines.resource_id,
        allocated_lines.charge_period_start,
        allocated_lines.charge_period_end,
        cost_line_profiles.billing_account_id,
        cost_line_profiles.sku_price_id,
        cost_line_profiles.charge_category,
        count(*) as allocated_rows,
        sum(allocated_lines.billed_cost) as allocated_billed_cost
    from allocated_lines
    inner join cost_line_profiles on allocated_lines.profile_key = cost_line_profiles.profile_key
    where allocated_lines.resource_id is not null
    group by all
),

candidates as (
    -- unallocated lines of an allocated resource and window
    select
        cost_line_facts.line_id,
        cost_line_facts.source_line,
        cost_line_facts.resource_id,
        cost_line_facts.charge_period_start,
        cost_line_facts.charge_period_end,
        cost_line_facts.billed_cost,
        cost_line_facts.profile_key
    from cost_line_facts
    semi join allocations
        on
            cost_line_facts.resource_id = allocations.resource_id
            and same_charge_period(cost_line_facts, allocations)  -- noqa: RF02
    where cost_line_facts.allocated_method_id is null
),

final as (
    select
        candidates.line_id,
        cost_line_profiles.source_file,
        candidates.source_line + 1 as source_row,
        candidates.resource_id,
        candidates.charge_period_start,
        candidates.charge_period_end,
        candidates.billed_cost,
        allocations.allocated_rows
    from candidates
    inner join cost_line_profiles on candidates.profile_key = cost_line_profiles.profile_key
    inner join allocations
        on
            candidates.resource_id = allocations.resource_id
            and same_charge_period(candidates, allocations)  -- noqa: RF02
            and cost_line_profiles.billing_account_id is not distinct from allocations.billing_account_id
            and cost_line_profiles.sku_price_id is not distinct from allocations.sku_price_id
            and cost_line_profiles.charge_category = allocations.charge_category
    where candidates.billed_cost = allocations.allocated_billed_cost
)

select * from final
