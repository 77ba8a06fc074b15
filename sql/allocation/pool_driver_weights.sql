-- Each pool's candidate attempts per spread window, weighted by the pool's driver, with their share of the window.
-- grain: one row per (pool_order, window_start, window_end, attempt_id) candidate
-- A candidate is an eligible attempt that ran during the window; queue time (submitted, not started) never counts.
-- Weights per driver: gpu_seconds = seconds in the window x gpu_count; cpu_memory_requested = the attempt's
-- share of the window's requested vCPU-seconds plus its share of requested GiB-seconds (attempt_resources);
-- attempt_count = 1 when the attempt started in the window; even = 1; cost_weighted = the attempt's
-- attributed cost, in the pool's basis, of lines charged in the window. Only weights above 0 get a share.
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
with cost_lines as (
    select
        cost_lines.line_id,
        line_windows(cost_lines)  -- noqa: AL03
    from normalized.cost_line_facts as cost_lines
),

pool_eligible_attempts as (
    select * from allocation.pool_eligible_attempts
),

line_attributions as (
    select * from attribution.line_attributions
),

attempts as (
    select
        attempts.attempt_id,
        attempts.experiment_id,
        attempts.started_at,
        attempts.ended_at,
        attempts.gpu_count
    from staging.attempts as attempts
    where attempts.started_at is not null
),

resource_requests as (
    select
        attempt_resources.attempt_id,
        attempt_resources.started_at,
        attempt_resources.ended_at,
        attempt_resources.vcpu_count,
        attempt_resources.memory_gib
    from staging.attempt_resources as attempt_resources
    where attempt_resources.vcpu_count > 0 or attempt_resources.memory_gib > 0
),

pool_windows as (
    select distinct
        pooled_lines.pool_order,
        pooled_lines.pool_name,
        pooled_lines.driver,
        pooled_lines.basis,
        pooled_lines.window_start,
        pooled_lines.window_end
    from allocation.pooled_lines as pooled_lines
),

window_hours as (
    -- the hours (since the epoch) a window starts and ends in
    select
        pool_windows.*,
        epoch_us(pool_windows.window_start) // 3600000000 as first_hour,
        (epoch_us(pool_windows.window_end) - 1) // 3600000000 as last_hour
    from pool_windows
),

pool_hours as (
    -- the hours a pool's windows span: an attempt's hours are listed only inside them
    select
        window_hours.pool_order,
        min(window_hours.first_hour) as first_hour,
        max(window_hours.last_hour) as last_hour
    from window_hours
    group by window_hours.pool_order
),

pool_attempts as (
    -- each eligible attempt with the hours it runs in, inside its pool's windows (a running
    -- attempt runs to the last of them)
    select
        pool_eligible_attempts.pool_order,
        attempts.attempt_id,
        attempts.experiment_id,
        attempts.started_at,
        attempts.ended_at,
        attempts.gpu_count,
        epoch_us(attempts.started_at) // 3600000000 as first_hour,
        least(
            coalesce((epoch_us(attempts.ended_at) - 1) // 3600000000, pool_hours.last_hour),
            pool_hours.last_hour
        ) as last_hour,
        greatest(epoch_us(attempts.started_at) // 3600000000, pool_hours.first_hour) as from_hour
    from pool_eligible_attempts
    inner join attempts on pool_eligible_attempts.attempt_id = attempts.attempt_id
    inner join pool_hours on pool_eligible_attempts.pool_order = pool_hours.pool_order
),

attempt_hours as (
    -- each attempt once per hour it is looked up in
    select
        pool_attempts.*,
        unnest(range(pool_attempts.from_hour, pool_attempts.last_hour + 1, 1)) as hour
    from pool_attempts
),

window_later_hours as (
    -- each window once per hour after its first
    select
        window_hours.*,
        unnest(range(window_hours.first_hour + 1, window_hours.last_hour + 1, 1)) as hour
    from window_hours
),

window_meets_attempt as (
    -- a window and an attempt that overlap meet at the later of their first hours, once: in
    -- the window's first hour when the attempt started in it or before (the attempt's hours are
    -- listed), else in the attempt's first hour (the window's later hours are listed). Equal
    -- hours join on a hash, instead of every attempt meeting every window of its pool.
    select
        window_hours.pool_order,
        window_hours.pool_name,
        window_hours.driver,
        window_hours.basis,
        window_hours.window_start,
        window_hours.window_end,
        attempt_hours.attempt_id,
        attempt_hours.experiment_id,
        attempt_hours.started_at,
        attempt_hours.ended_at,
        attempt_hours.gpu_count
    from attempt_hours
    inner join window_hours
        on
            attempt_hours.pool_order = window_hours.pool_order
            and attempt_hours.hour = window_hours.first_hour
    union all
    select
        window_later_hours.pool_order,
        window_later_hours.pool_name,
        window_later_hours.driver,
        window_later_hours.basis,
        window_later_hours.window_start,
        window_later_hours.window_end,
        pool_attempts.attempt_id,
        pool_attempts.experiment_id,
        pool_attempts.started_at,
        pool_attempts.ended_at,
        pool_attempts.gpu_count
    from window_later_hours
    inner join pool_attempts
        on
            window_later_hours.pool_order = pool_attempts.pool_order
            and window_later_hours.hour = pool_attempts.first_hour
),

candidates as (
    select
        window_meets_attempt.*,
        epoch_us(
            least(
                window_meets_attempt.window_end,
                coalesce(window_meets_attempt.ended_at, window_meets_attempt.window_end)
            )
        )
        - epoch_us(greatest(window_meets_attempt.window_start, window_meets_attempt.started_at)) as overlap_us
    from window_meets_attempt
    where
        window_meets_attempt.started_at < window_meets_attempt.window_end
        and coalesce(window_meets_attempt.ended_at, window_meets_attempt.window_end) > window_meets_attempt.window_start
),

held_requests as (
    -- microseconds each resource row of a candidate was held inside the window; a row without
    -- times holds for the attempt's own interval
    select
        pool_window(candidates),  -- noqa: AL03, RF02
        candidates.attempt_id,
        -- exact decimals, so the sums (and the shares) do not depend on summation order
        cast(resource_requests.vcpu_count as decimal(38, 6)) as vcpu_count,
        cast(resource_requests.memory_gib as decimal(38, 6)) as memory_gib,
        greatest(
            epoch_us(
                least(
                    candidates.window_end,
                    coalesce(resource_requests.ended_at, candidates.ended_at, candidates.window_end)
                )
            )
            - epoch_us(
                greatest(
                    candidates.window_start,
                    coalesce(resource_requests.started_at, candidates.started_at)
                )
            ),
            0
        ) as held_us
    from candidates
    inner join resource_requests on candidates.attempt_id = resource_requests.attempt_id
    where candidates.driver = 'cpu_memory_requested'
),

requested as (
    -- vCPU- and GiB-microseconds each candidate requested inside the window
    select
        pool_window(held_requests),  -- noqa: AL03
        held_requests.attempt_id,
        sum(held_requests.held_us * coalesce(held_requests.vcpu_count, 0)) as vcpu_us,
        sum(held_requests.held_us * coalesce(held_requests.memory_gib, 0)) as memory_us
    from held_requests
    group by all
),

request_totals as (
    select
        pool_window(requested),  -- noqa: AL03
        sum(requested.vcpu_us) as vcpu_us,
        sum(requested.memory_us) as memory_us
    from requested
    group by pool_window(requested)
),

cost_weighted_attempts as (
    -- only a cost_weighted pool reads the attempts' line costs: without one, nothing is joined
    select distinct candidates.attempt_id
    from candidates
    where candidates.driver = 'cost_weighted'
),

cost_weighted_slices as (
    -- the marginal slices of those attempts (none without a cost_weighted pool)
    select
        line_attributions.line_id,
        line_attributions.attempt_id,
        bases(line_attributions)  -- noqa: AL03, RF02
    from line_attributions
    semi join cost_weighted_attempts on line_attributions.attempt_id = cost_weighted_attempts.attempt_id
),

weighted_lines as (
    -- the charge windows of those slices' lines, found with a semi join whose hash table holds
    -- the slices: joined to the slices directly, DuckDB built its hash table on every line of
    -- the month (10M lines: 1.0 s, and at 50M a table of 50M rows) even with no slice to join;
    -- now a bill without cost_weighted pools reads a few thousand lines here
    select
        cost_lines.line_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end
    from cost_lines
    semi join cost_weighted_slices on cost_lines.line_id = cost_weighted_slices.line_id
),

attempt_line_costs as (
    select
        cost_weighted_slices.attempt_id,
        weighted_lines.charge_period_start,
        weighted_lines.charge_period_end,
        bases(cost_weighted_slices)  -- noqa: AL03, RF02
    from cost_weighted_slices
    inner join weighted_lines on cost_weighted_slices.line_id = weighted_lines.line_id
),

attributed_costs as (
    -- cost_weighted: each candidate's attributed cost, in the pool's basis, of the lines
    -- charged inside the window (the marginal model's slices)
    select
        pool_window(candidates),  -- noqa: AL03, RF02
        candidates.attempt_id,
        sum(
            case candidates.basis
                when 'billed_cost' then attempt_line_costs.billed_cost
                when 'list_cost' then attempt_line_costs.list_cost
                when 'net_cost' then attempt_line_costs.net_cost
                else attempt_line_costs.effective_cost
            end
        ) as attributed_cost
    from candidates
    inner join attempt_line_costs
        on
            candidates.attempt_id = attempt_line_costs.attempt_id
            and candidates.window_end > attempt_line_costs.charge_period_start
            and candidates.window_start < attempt_line_costs.charge_period_end
    where candidates.driver = 'cost_weighted'
    group by all
),

weighted as (
    select
        candidates.pool_order,
        candidates.pool_name,
        candidates.driver,
        candidates.window_start,
        candidates.window_end,
        candidates.attempt_id,
        candidates.experiment_id,
        -- weights are DECIMAL: summed exactly, the same shares on every run
        cast(
            case candidates.driver
                when 'gpu_seconds'
                    then
                        cast(candidates.overlap_us * coalesce(candidates.gpu_count, 0) as decimal(38, 0))
                        * cast(0.000001 as decimal(38, 6))
                when 'cpu_memory_requested'
                    then
                        coalesce(requested.vcpu_us / nullif(request_totals.vcpu_us, 0), 0)
                        + coalesce(requested.memory_us / nullif(request_totals.memory_us, 0), 0)
                when 'attempt_count'
                    then case when candidates.started_at >= candidates.window_start then 1 else 0 end
                when 'cost_weighted' then coalesce(attributed_costs.attributed_cost, 0)
                else 1
            end as decimal(38, 12)
        ) as weight
    from candidates
    left join requested
        on
            same_pool_window(candidates, requested)  -- noqa: RF02
            and candidates.attempt_id = requested.attempt_id
    left join request_totals on same_pool_window(candidates, request_totals)  -- noqa: RF02
    left join attributed_costs
        on
            same_pool_window(candidates, attributed_costs)  -- noqa: RF02
            and candidates.attempt_id = attributed_costs.attempt_id
),

window_totals as (
    -- the largest weight (ties: smallest attempt_id) takes each line's rounding remainder
    select
        pool_window(weighted),  -- noqa: AL03
        sum(weighted.weight) filter (where weighted.weight > 0) as total_weight,
        arg_min(weighted.attempt_id, (-weighted.weight, weighted.attempt_id)) filter (
            where weighted.weight > 0
        ) as first_attempt_id
    from weighted
    group by pool_window(weighted)
),

final as (
    select
        weighted.pool_order,
        weighted.pool_name,
        weighted.driver,
        weighted.window_start,
        weighted.window_end,
        weighted.attempt_id,
        weighted.experiment_id,
        weighted.weight,
        case
            when weighted.weight > 0 then weighted.weight / window_totals.total_weight
        end as share,
        coalesce(weighted.attempt_id = window_totals.first_attempt_id, false) as takes_remainder
    from weighted
    inner join window_totals on same_pool_window(weighted, window_totals)  -- noqa: RF02
)

select * from final
