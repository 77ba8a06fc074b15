-- Waste findings (read-only): idle volumes and instances, GPUs waiting on data or idle, stale checkpoints.
-- grain: one row per (finding_type, subject_id)
-- periods: combined (a finding adds up its subject's lines of every billing period)
-- Amounts are effective_cost. idle_hours weighs each line's window by the unplaced share of it.
-- evidence_line_ids: each finding's line ids, each once, ascending; collected per finding and then deduplicated and
-- sorted inside the list (list_sort(list_distinct(list(...)))), not with list(distinct ... order by ...), which
-- DuckDB computes through a hash table of every (finding, line) pair: at 50M lines 4.4 of the mart's 13 CPU s.
-- Each rule reads the line profile's classification (docs/economics.md#the-classification-of-a-cost-line), the same
-- on every provider: usage_kind disk, instance or stored_data, cost_class accelerator.
-- unattached_volume: a disk (an EBS volume, a persistent disk; or any line of a vol- resource) whose unattributed
--   (marginal) cost spans more than config.economics.waste_idle_hours; confidence high when telemetry knows the
--   disk (outside_any_attempt), medium when it never appears in attempt_resources.
-- idle_instance: instance usage billed while no attempt held it: high (outside_any_attempt),
--   medium (unknown_attempt_tag), low (no_matching_attempt: may not be training at all).
-- gpu_waiting_on_data: attempts with data_wait events; amount = the attempt's accelerator cost x
--   waited seconds / attempt seconds; medium.
-- stale_checkpoint_storage: stored data (S3, Cloud Storage, snapshots) of resources the attempts held, and
--   stored data tagged to an experiment, charged more than stale_checkpoint_days after the last attempt
--   holding it (or of the experiment) ended: medium (resource link), high (experiment tag).
-- gpu_idle: attempts whose measured GPUs idled (marts.gpu_utilisation, marginal): amount = its idle_cost, idle_hours
--   its idle GPU-hours; evidence_windows the idle windows of telemetry.gpu_usage (resource, start, end, GPUs idle
--   through it), ascending. Confidence follows coverage, one step lower matched by host (the host's GPUs are shared
--   among the attempts on it, not told apart): by pod high at coverage 0.9 or more, medium at 0.5, else low; by host
--   medium at 0.9, else low. evidence_windows is NULL for every other finding.
with model_slices as (
    -- the slices without the line's dimensions: each use below joins the lines or their profiles once
    select * from allocation.model_slices
),

remainders as (
    select * from allocation.line_remainders
),

split_idle as (
    select * from allocation.split_unused_shares
),

cost_lines as (
    -- the lines' own columns (resource, times, cost): their usage type is their profile's
    select * from normalized.cost_line_facts
),

profiles as (
    select * from normalized.cost_line_profiles
),

attempts as (
    select * from staging.attempts
),

attempt_resources as (
    select * from staging.attempt_resources
),

events as (
    select * from staging.attempt_events
),

settings as (
    select * from config.economics
),

utilisation as (
    select * from marts.gpu_utilisation
),

usage as (
    select * from staging.gpu_usage
),

usage_kinds as (
    -- what each finding asks of a line's usage, per profile: the rules below read these flags (and the
    -- line's currency, which is its profile's)
    select
        profiles.profile_key,
        profiles.billing_currency,
        coalesce(profiles.usage_kind = 'disk', false) as volume_usage,
        coalesce(profiles.usage_kind = 'instance', false) as instance_usage,
        coalesce(profiles.usage_kind = 'stored_data', false) as storage_usage
    from profiles
),

finding_usages as (
    select
        usage_kinds.*,
        usage_kinds.volume_usage or usage_kinds.instance_usage or usage_kinds.storage_usage as finding_usage
    from usage_kinds
),

unplaced_rests as (
    -- the marginal model's unallocated slices, as allocation.unattributed_slices stores them: each
    -- line's rest (allocation.line_remainders) and an instance line's split idle capacity in one
    -- slice. The rests carry their line's resource, window and cost, so the month's lines never
    -- meet them on line_id (a hash table that spilled at the memory per line of a 100M-line bill);
    -- only the few split lines do
    select
        remainders.line_id,
        remainders.unallocated_reason,
        remainders.resource_id,
        remainders.charge_period_start,
        remainders.charge_period_end,
        remainders.billing_period,
        remainders.effective_cost,
        remainders.line_effective_cost,
        remainders.profile_key
    from remainders
    union all
    select
        split_idle.line_id,
        'split_unused_capacity' as unallocated_reason,
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        split_idle.billing_period,
        sum(split_idle.effective_cost) as effective_cost,
        cost_lines.effective_cost as line_effective_cost,
        split_idle.profile_key
    from split_idle
    inner join cost_lines on split_idle.line_id = cost_lines.line_id
    group by
        split_idle.line_id,
        cost_lines.resource_id,
        cost_lines.charge_period_start,
        cost_lines.charge_period_end,
        split_idle.billing_period,
        cost_lines.effective_cost,
        split_idle.profile_key
),

unplaced_lines as (
    -- the rests a finding may read, with their profile's usage: every usage a finding reads, and
    -- any usage of a vol- resource (only the volume rule takes those)
    select
        unplaced_rests.*,
        finding_usages.billing_currency,
        finding_usages.volume_usage,
        finding_usages.instance_usage,
        finding_usages.storage_usage
    from unplaced_rests
    inner join finding_usages on unplaced_rests.profile_key = finding_usages.profile_key
    where
        unplaced_rests.resource_id is not null
        and (finding_usages.finding_usage or unplaced_rests.resource_id like 'vol-%')
),

unplaced as (
    select
        unplaced_lines.line_id,
        unplaced_lines.unallocated_reason,
        unplaced_lines.resource_id,
        unplaced_lines.billing_period,
        unplaced_lines.billing_currency,
        unplaced_lines.effective_cost,
        unplaced_lines.volume_usage or unplaced_lines.resource_id like 'vol-%' as volume_finding,
        unplaced_lines.instance_usage as instance_finding,
        unplaced_lines.storage_usage and unplaced_lines.resource_id not like 'vol-%' as storage_finding,
        unplaced_lines.charge_period_start,
        unplaced_lines.charge_period_end,
        (epoch_us(unplaced_lines.charge_period_end) - epoch_us(unplaced_lines.charge_period_start))
        / 3600000000.0
        * coalesce(unplaced_lines.effective_cost / nullif(unplaced_lines.line_effective_cost, 0), 1)
            as idle_hours
    from unplaced_lines
),

unplaced_findings as (
    -- each rest once per resource finding it may be evidence for: an unattached volume, an idle instance
    select
        'unattached_volume' as finding_type,
        unplaced.*
    from unplaced
    where unplaced.volume_finding
    union all
    select
        'idle_instance' as finding_type,
        unplaced.*
    from unplaced
    where unplaced.instance_finding
),

resource_findings as (
    -- a volume is a finding once idle longer than waste_idle_hours, an instance once it cost anything
    select
        unplaced_findings.finding_type,
        unplaced_findings.resource_id as subject_id,
        unplaced_findings.resource_id,
        null as experiment_id,
        null as attempt_id,
        resource_finding_totals(unplaced_findings),  -- noqa: AL03
        case
            when bool_and(unplaced_findings.unallocated_reason = 'outside_any_attempt') then 'high'
            when unplaced_findings.finding_type = 'unattached_volume' then 'medium'
            when
                bool_and(unplaced_findings.unallocated_reason in ('outside_any_attempt', 'unknown_attempt_tag'))
                then 'medium'
            else 'low'
        end as confidence
    from unplaced_findings
    group by unplaced_findings.finding_type, unplaced_findings.resource_id
    having
        case
            when unplaced_findings.finding_type = 'unattached_volume'
                then
                    exact_double_sum(unplaced_findings.idle_hours)
                    > (select settings.waste_idle_hours from settings)
            else sum(unplaced_findings.effective_cost) <> 0
        end
),

data_waits as (
    select
        events.attempt_id,
        exact_double_sum(events.duration_s) as wait_seconds
    from events
    where events.event_type = 'data_wait' and events.duration_s > 0
    group by events.attempt_id
),

gpu_slices as (
    -- the instance type is a profile column: the slices meet the bill's profiles, not its lines
    select
        model_slices.attempt_id,
        model_slices.line_id,
        model_slices.billing_period,
        model_slices.billing_currency,
        model_slices.effective_cost
    from model_slices
    inner join profiles on model_slices.profile_key = profiles.profile_key
    where
        model_slices.allocation_model = 'marginal'
        and model_slices.attempt_id is not null
        and profiles.cost_class = 'accelerator'
),

waiting as (
    select
        'gpu_waiting_on_data' as finding_type,
        attempts.attempt_id as subject_id,
        null as resource_id,
        attempts.experiment_id,
        attempts.attempt_id,
        min(gpu_slices.billing_period) as billing_period,
        min(gpu_slices.billing_currency) as billing_currency,
        sum(gpu_slices.effective_cost)
        * min(data_waits.wait_seconds)
        / ((epoch_us(min(attempts.ended_at)) - epoch_us(min(attempts.started_at))) / 1000000.0) as effective_cost,
        min(data_waits.wait_seconds) / 3600.0 as idle_hours,
        list_sort(list_distinct(list(gpu_slices.line_id))) as evidence_line_ids,
        'medium' as confidence
    from data_waits
    inner join attempts on data_waits.attempt_id = attempts.attempt_id
    inner join gpu_slices on data_waits.attempt_id = gpu_slices.attempt_id
    where attempts.ended_at > attempts.started_at
    group by attempts.attempt_id, attempts.experiment_id
),

gpu_idle as (
    select
        'gpu_idle' as finding_type,
        utilisation.attempt_id as subject_id,
        null as resource_id,
        utilisation.experiment_id,
        utilisation.attempt_id,
        min(gpu_slices.billing_period) as billing_period,
        utilisation.billing_currency,
        utilisation.idle_cost as effective_cost,
        utilisation.idle_gpu_hours as idle_hours,
        list_sort(list_distinct(list(gpu_slices.line_id))) as evidence_line_ids,
        case
            when utilisation.method = 'prometheus_pod' and utilisation.coverage >= 0.9 then 'high'
            when utilisation.method = 'prometheus_pod' and utilisation.coverage >= 0.5 then 'medium'
            when utilisation.coverage >= 0.9 then 'medium'
            else 'low'
        end as confidence
    from utilisation
    inner join gpu_slices on utilisation.attempt_id = gpu_slices.attempt_id
    where utilisation.allocation_model = 'marginal' and utilisation.idle_cost > 0
    group by
        utilisation.attempt_id,
        utilisation.experiment_id,
        utilisation.billing_currency,
        utilisation.idle_cost,
        utilisation.idle_gpu_hours,
        utilisation.method,
        utilisation.coverage
),

idle_windows as (
    -- the evidence of gpu_idle: each idle window (resource, start, end) and how many GPUs idled through it
    select
        usage.attempt_id,
        usage.resource_id,
        usage.started_at,
        usage.ended_at,
        count(*) as gpus
    from usage
    where usage.state = 'idle'
    group by usage.attempt_id, usage.resource_id, usage.started_at, usage.ended_at
),

idle_evidence as (
    select
        idle_windows.attempt_id,
        list_sort(
            list(
                struct_pack(
                    started_at := idle_windows.started_at,
                    ended_at := idle_windows.ended_at,
                    resource_id := idle_windows.resource_id,
                    gpus := idle_windows.gpus
                )
            )
        ) as evidence_windows
    from idle_windows
    group by idle_windows.attempt_id
),

holders as (
    select
        attempt_resources.resource_id,
        min(attempts.experiment_id) as experiment_id,
        -- one experiment held it when its attempts' least and greatest experiment agree: a count of
        -- distinct experiments would keep a set per resource
        coalesce(min(attempts.experiment_id) = max(attempts.experiment_id), false) as one_experiment,
        max(coalesce(attempt_resources.ended_at, attempts.ended_at)) as last_ended_at,
        bool_or(coalesce(attempt_resources.ended_at, attempts.ended_at) is null) as still_held
    from attempt_resources
    inner join attempts on attempt_resources.attempt_id = attempts.attempt_id
    group by attempt_resources.resource_id
),

stale_by_resource as (
    select
        'stale_checkpoint_storage' as finding_type,
        unplaced.resource_id as subject_id,
        unplaced.resource_id,
        case when bool_and(holders.one_experiment) then min(holders.experiment_id) end as experiment_id,
        null as attempt_id,
        resource_finding_totals(unplaced),  -- noqa: AL03, RF02
        'medium' as confidence
    from unplaced
    inner join holders on unplaced.resource_id = holders.resource_id
    cross join settings
    where
        not holders.still_held
        and unplaced.storage_finding
        and unplaced.charge_period_start
        >= holders.last_ended_at + to_microseconds(cast(settings.stale_checkpoint_days * 86400000000 as bigint))
    group by unplaced.resource_id
),

experiment_ends as (
    select
        attempts.experiment_id,
        max(attempts.ended_at) as last_ended_at,
        bool_or(attempts.ended_at is null and attempts.status = 'running') as still_running
    from attempts
    group by attempts.experiment_id
),

stale_by_tag as (
    select
        'stale_checkpoint_storage' as finding_type,
        model_slices.experiment_id as subject_id,
        null as resource_id,
        model_slices.experiment_id,
        null as attempt_id,
        min(model_slices.billing_period) as billing_period,
        min(model_slices.billing_currency) as billing_currency,
        sum(model_slices.effective_cost) as effective_cost,
        sum(epoch_us(cost_lines.charge_period_end) - epoch_us(cost_lines.charge_period_start)) / 3600000000.0
            as idle_hours,
        list_sort(list_distinct(list(model_slices.line_id))) as evidence_line_ids,
        'high' as confidence
    from model_slices
    -- storage slices only (by their profile) meet the lines
    inner join usage_kinds on model_slices.profile_key = usage_kinds.profile_key and usage_kinds.storage_usage
    inner join cost_lines on model_slices.line_id = cost_lines.line_id
    inner join experiment_ends on model_slices.experiment_id = experiment_ends.experiment_id
    cross join settings
    where
        model_slices.allocation_model = 'marginal'
        and model_slices.attribution_method = 'experiment_tag'
        and not experiment_ends.still_running
        and cost_lines.charge_period_start
        >= experiment_ends.last_ended_at
        + to_microseconds(cast(settings.stale_checkpoint_days * 86400000000 as bigint))
    group by model_slices.experiment_id
),

findings as (
    select * from resource_findings
    union all
    select * from waiting
    union all
    select * from stale_by_resource
    union all
    select * from stale_by_tag
    union all
    select * from gpu_idle
),

final as (
    select
        findings.finding_type,
        findings.subject_id,
        findings.resource_id,
        findings.experiment_id,
        findings.attempt_id,
        findings.billing_period,
        findings.billing_currency,
        money(findings.effective_cost) as effective_cost,
        findings.idle_hours,
        findings.evidence_line_ids,
        findings.confidence,
        idle_evidence.evidence_windows
    from findings
    left join idle_evidence
        on findings.finding_type = 'gpu_idle' and findings.attempt_id = idle_evidence.attempt_id
)

select * from final
