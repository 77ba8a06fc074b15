"""The large benchmark world as SQL: its nodes, hourly CUR 2.0 lines, fees and attempts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

EXPORT_NAME = "runcost-bench"
EXPORT_DIR = f"aws/exports/{EXPORT_NAME}"
PERIOD = "2026-10"  # the month generated unless a spec names another
BLOCK = 5  # line items per node-hour: instance, SP negation or inter-AZ bytes, EBS, egress, other
SHORT_HOURS = 24  # lifetime of a short-lived node
ACCOUNTS = 20
CLUSTERS = 2
EDP_ACCOUNTS = 5  # accounts whose net_ columns carry a 5 % discount
BATCH = 262_144
# (instance type, GPUs, on-demand micro-USD per hour, GPU type); a node's type is g % 5.
INSTANCE_TYPES = (
    ("p4d.24xlarge", 8, 32_772_600, "A100"),
    ("p5.48xlarge", 8, 98_320_000, "H100"),
    ("g5.12xlarge", 4, 5_672_000, "A10G"),
    ("g6.xlarge", 1, 805_000, "L4"),
    ("m6i.2xlarge", 0, 384_000, ""),
)


@dataclass(frozen=True)
class ScaleSpec:
    """What to generate: about `rows` line items, and the shape of nodes and attempts."""

    rows: int
    seed: int = 1
    skew: bool = False
    tag_fraction: float = 0.10  # instance lines carrying the attempt tag of their hour's attempt
    experiment_tag_fraction: float = 0.5  # S3 lines carrying their bucket's experiment tag
    rows_per_file: int = 4_000_000
    period: str = PERIOD  # YYYY-MM, the billing period generated
    attempt_prefix: str = ""  # before every attempt id, so months of one history do not collide
    invoice_id: str = ""  # bill_invoice_id on every line: the month is closed (final)
    revision: int = 0  # a re-delivery's revision: each tax line is 1 USD more per revision

    @property
    def start(self) -> str:
        """The period's first instant, as a DuckDB timestamptz literal's text."""
        return f"{self.period}-01 00:00:00+00"

    @property
    def hours(self) -> int:
        """Hours in the period (744 in October)."""
        year, month = (int(part) for part in self.period.split("-"))
        following = date(year + month // 12, month % 12 + 1, 1)
        return (following - date(year, month, 1)).days * 24

    @property
    def node_hours(self) -> int:
        return max(self.rows // BLOCK, 1)

    @property
    def long_nodes(self) -> int:
        # uniform: half the node-hours on month-long nodes; skew: all of them
        share = self.node_hours if self.skew else self.node_hours // 2
        return share // self.hours

    @property
    def short_nodes(self) -> int:
        return -(-(self.node_hours - self.long_nodes * self.hours) // SHORT_HOURS)

    @property
    def attempt_minutes(self) -> int:
        # skew: many short attempts on each long-lived node; uniform: 6-hour attempts
        return 20 if self.skew else 360

    @property
    def experiments(self) -> int:
        return max(10, (self.long_nodes + self.short_nodes) // 2)

    def key(self) -> str:
        """A folder name that identifies the generated data (cache key)."""
        tags = f"t{self.tag_fraction:g}-e{self.experiment_tag_fraction:g}"
        shape = "skew" if self.skew else "uniform"
        month = "" if self.period == PERIOD else f"-p{self.period}"
        month += f"-a{self.attempt_prefix.strip('-')}" if self.attempt_prefix else ""
        month += "-invoiced" if self.invoice_id else ""
        month += f"-r{self.revision}" if self.revision else ""
        return f"v2-rows{self.rows}-seed{self.seed}-{shape}-{tags}{month}"


def _mix(expr: str, seed: int, salt: int) -> str:
    """A deterministic pseudo-random BIGINT in [0, 4294967291) from an integer expression."""
    # (x mod p) * (2^31 - 1) stays below 2^63 for any BIGINT x: no overflow at any scale
    return f"(((({expr}) % 4294967291) * 2147483647 + {seed * 7919 + salt * 104729}) % 4294967291)"


def _node_sql(spec: ScaleSpec) -> str:
    """SQL fragment: node index g, hour of month, and hour since the node started, from j."""
    hours = spec.hours
    long_hours = spec.long_nodes * hours
    nl, sh, span = spec.long_nodes, SHORT_HOURS, hours - SHORT_HOURS
    short_g = f"({nl} + (j - {long_hours}) // {sh})"
    return f"""
        case when j < {long_hours} then j // {hours} else {short_g} end as g,
        case when j < {long_hours} then j % {hours}
             else ({short_g} * 37) % {span} + (j - {long_hours}) % {sh} end as hour,
        case when j < {long_hours} then j % {hours} else (j - {long_hours}) % {sh} end as hour_rel
    """


def lines_sql(spec: ScaleSpec, lo: int, hi: int) -> str:
    """Semantic columns of line items lo..hi-1 (hourly node lines), plus expected micro-USD."""
    s, hours, start, prefix = spec.seed, spec.hours, spec.start, spec.attempt_prefix
    minutes = spec.attempt_minutes
    types = "[" + ", ".join(f"'{t[0]}'" for t in INSTANCE_TYPES) + "]"
    rates = "[" + ", ".join(str(t[2]) for t in INSTANCE_TYPES) + "]"
    tag_cut = int(spec.tag_fraction * 1000)
    exp_cut = int(spec.experiment_tag_fraction * 1000)
    return f"""
    with rows as (
        select range as i, range // {BLOCK} as j, range % {BLOCK} as kind
        from range({lo}, {hi})
    ),
    nodes as (select rows.*, {_node_sql(spec)} from rows),
    base as (
        select nodes.*,
            {_mix("i", s, 1)} as r1,
            {_mix("i", s, 2)} as r2,
            g % {ACCOUNTS} as account,
            g % 4 = 0 as sp_node,
            {types}[g % 5 + 1] as instance_type,
            {rates}[g % 5 + 1] as rate_micro,
            printf('i-%017x', g * 1000003 + {s}) as instance_id,
            printf('vol-%017x', g * 1000003 + {s}) as volume_id,
            printf('{prefix}att-%07d-%05d', g, hour_rel * 60 // {minutes}) as hour_attempt,
            printf('exp-%05d', g % {spec.experiments}) as bucket_experiment,
            j % 4 as other_kind
        from nodes
    ),
    typed as (
        select base.*,
            case
                when kind = 0 then case when sp_node then 'SavingsPlanCoveredUsage' else 'Usage' end
                when kind = 1 and sp_node then 'SavingsPlanNegation'
                else 'Usage'
            end as line_type,
            case
                when kind = 0 then 'AmazonEC2'
                when kind = 1 or kind = 2 or kind = 3 then 'AmazonEC2'
                when other_kind <= 1 then 'AmazonS3'
                when other_kind = 2 then 'AmazonEC2'
                else 'AmazonCloudWatch'
            end as product_code,
            case
                when kind = 0 or (kind = 1 and sp_node) then 'BoxUsage:' || instance_type
                when kind = 1 then 'USE1-DataTransfer-Regional-Bytes'
                when kind = 2 then 'EBS:VolumeUsage.gp3'
                when kind = 3 then 'DataTransfer-Out-Bytes'
                when other_kind = 0 then 'TimedStorage-ByteHrs'
                when other_kind = 1 then 'Requests-Tier1'
                when other_kind = 2 then 'NatGateway-Bytes'
                else 'CW:MetricMonitorUsage'
            end as usage_type,
            case
                when kind = 0 or (kind = 1 and sp_node) then 'RunInstances'
                when kind = 1 then 'InterZone-In'
                when kind = 2 then 'CreateVolume-Gp3'
                when kind = 3 then 'RunInstances'
                when other_kind = 0 then 'StandardStorage'
                when other_kind = 1 then 'PutObject'
                when other_kind = 2 then 'NatGateway'
                else 'MetricStorage'
            end as operation,
            case
                when kind <= 1 or kind = 3 then instance_id
                when kind = 2 then volume_id
                when other_kind <= 1 then 'runcost-bench-' || bucket_experiment
                when other_kind = 2 then printf('nat-%017x', account * 7 + {s})
                else ''
            end as resource_id,
            case
                when kind = 0 or (kind = 1 and sp_node) then 'Hrs'
                when kind = 2 or (kind = 4 and other_kind = 0) then 'GB-Mo'
                when kind = 4 and other_kind = 1 then 'Requests'
                when kind = 4 and other_kind = 3 then 'Metrics'
                else 'GB'
            end as pricing_unit,
            case
                when kind = 0 or (kind = 1 and sp_node) then 1.0
                when kind = 2 then 2000.0 / {hours}
                else (r2 % 10000) / 100.0
            end as usage_amount,
            case
                when kind = 0 then rate_micro
                when kind = 1 and sp_node then -rate_micro
                when kind = 2 then 2000 * 80000 // {hours}
                when kind = 1 then (r2 % 10000) * 100
                when kind = 3 then (r2 % 10000) * 900
                when other_kind = 0 then (r2 % 10000) * 23
                when other_kind = 1 then (r2 % 10000) * 5
                when other_kind = 2 then (r2 % 10000) * 450
                else (r2 % 10000) * 30
            end as cost_micro
        from base
    ),
    tagged as (
        select typed.*,
            case
                when kind = 0 and r1 % 1000 < {tag_cut} then hour_attempt
                when kind = 3 and r1 % 1000 = 999 then '{prefix}att-retired-' || (g % 97)
            end as attempt_tag,
            case
                when kind = 4 and other_kind <= 1 and r1 % 1000 < {exp_cut} then bucket_experiment
            end as experiment_tag
        from typed
    )
    select
        i,
        line_type,
        product_code,
        usage_type,
        operation,
        resource_id,
        pricing_unit,
        usage_amount,
        instance_type,
        account,
        'us-east-1' || chr(97 + (g % 6)::integer) as availability_zone,
        timestamptz '{start}' + to_hours(hour) as usage_start,
        timestamptz '{start}' + to_hours(hour + 1) as usage_end,
        cost_micro as unblended_micro,
        case when line_type = 'SavingsPlanNegation' then null
             else cost_micro end as on_demand_micro,
        case when line_type = 'SavingsPlanCoveredUsage' then cost_micro * 72 // 100 end
            as sp_effective_micro,
        case when account < {EDP_ACCOUNTS} and line_type = 'Usage' then cost_micro * 95 // 100
            end as net_unblended_micro,
        case when account < {EDP_ACCOUNTS} and line_type = 'SavingsPlanCoveredUsage'
             then cost_micro * 72 // 100 * 95 // 100 end as sp_net_effective_micro,
        cast(null as bigint) as sp_commitment_micro,
        cast(null as bigint) as sp_used_micro,
        case when line_type = 'SavingsPlanNegation' or line_type = 'SavingsPlanCoveredUsage'
             then 'arn:aws:savingsplans::100000000000:savingsplan/sp-bench' else '' end as sp_arn,
        attempt_tag,
        experiment_tag,
        'team-' || (g % 7) as team
    from tagged
    """


def extras_sql(spec: ScaleSpec) -> str:
    """Semantic columns of the non-node lines: SP recurring fee, EKS cluster hours, tax."""
    total_nodes = spec.long_nodes + spec.short_nodes
    commit = 1_000_000 * max(1, total_nodes // 8)
    base = spec.node_hours * BLOCK
    hours, start = spec.hours, spec.start
    tax = 1_000_000_000 + spec.revision * 1_000_000
    return f"""
    with fee as (
        select range as hour, 'SavingsPlanRecurringFee' as line_type, 'ComputeSavingsPlans'
            as product_code, 'ComputeSP:1yrNoUpfront' as usage_type, '' as operation,
            'arn:aws:savingsplans::100000000000:savingsplan/sp-bench' as resource_id,
            'Hrs' as pricing_unit, 1.0 as usage_amount, 0 as account,
            timestamptz '{start}' + to_hours(range) as usage_start,
            timestamptz '{start}' + to_hours(range + 1) as usage_end,
            {commit} as unblended_micro, {commit} as sp_commitment_micro,
            {commit * 9 // 10} as sp_used_micro
        from range({hours})
    ),
    eks as (
        select range as n, 'Usage' as line_type, 'AmazonEKS' as product_code,
            'USE1-AmazonEKS-Hours:perCluster' as usage_type, 'CreateOperation' as operation,
            'arn:aws:eks:us-east-1:100000000000:cluster/train-' || (range % {CLUSTERS})
                as resource_id,
            'Hrs' as pricing_unit, 1.0 as usage_amount, 0 as account,
            timestamptz '{start}' + to_hours(range // {CLUSTERS}) as usage_start,
            timestamptz '{start}' + to_hours(range // {CLUSTERS} + 1) as usage_end,
            100000 as unblended_micro
        from range({hours * CLUSTERS})
    ),
    tax as (
        select range as n, 'Tax' as line_type, 'AmazonEC2' as product_code, '' as usage_type,
            '' as operation, '' as resource_id, '' as pricing_unit, 0.0 as usage_amount,
            range as account, timestamptz '{start}' as usage_start,
            timestamptz '{start}' + to_hours({hours}) as usage_end,
            {tax} + range * 1000 as unblended_micro
        from range({ACCOUNTS})
    ),
    unioned as (
        select line_type, product_code, usage_type, operation, resource_id, pricing_unit,
            usage_amount, account, usage_start, usage_end, unblended_micro,
            null::bigint as on_demand_micro, sp_commitment_micro, sp_used_micro
        from fee
        union all
        select line_type, product_code, usage_type, operation, resource_id, pricing_unit,
            usage_amount, account, usage_start, usage_end, unblended_micro,
            unblended_micro, null, null
        from eks
        union all
        select line_type, product_code, usage_type, operation, resource_id, pricing_unit,
            usage_amount, account, usage_start, usage_end, unblended_micro,
            null, null, null
        from tax
    )
    select
        {base} + row_number() over (order by line_type, usage_start, resource_id, account) - 1
            as i,
        line_type, product_code, usage_type, operation, resource_id, pricing_unit,
        usage_amount, '' as instance_type, account, '' as availability_zone,
        usage_start, usage_end, unblended_micro, on_demand_micro,
        null::bigint as sp_effective_micro, null::bigint as net_unblended_micro,
        null::bigint as sp_net_effective_micro, sp_commitment_micro, sp_used_micro,
        case when line_type = 'SavingsPlanRecurringFee' then resource_id else '' end as sp_arn,
        null::varchar as attempt_tag, null::varchar as experiment_tag, 'platform' as team
    from unioned
    """


def attempts_sql(spec: ScaleSpec) -> str:
    """Every attempt: back to back on each node, with jittered starts and idle gaps."""
    s, minutes, nl = spec.seed, spec.attempt_minutes, spec.long_nodes
    start_jitter, end_gap = (3, 5) if spec.skew else (30, 45)
    hours, start, prefix = spec.hours, spec.start, spec.attempt_prefix
    spare = spec.node_hours - nl * hours
    total = nl + spec.short_nodes
    gpus = "[" + ", ".join(str(t[1]) for t in INSTANCE_TYPES) + "]"
    types = "[" + ", ".join(f"'{t[0]}'" for t in INSTANCE_TYPES) + "]"
    gpu_types = "[" + ", ".join(f"'{t[3]}'" for t in INSTANCE_TYPES) + "]"
    return f"""
    with nodes as (
        select range as g,
            case when range < {nl} then 0 else (range * 37) % {hours - SHORT_HOURS} end
                as start_h,
            case when range < {nl} then {hours}
                 else least({SHORT_HOURS}, {spare} - (range - {nl}) * {SHORT_HOURS}) end as len_h
        from range({total})
    ),
    numbered as (
        select nodes.*, unnest(range((len_h * 60 + {minutes - 1}) // {minutes})) as k
        from nodes
    ),
    timed as (
        select numbered.*, {_mix("g * 100003 + k", s, 3)} as r,
            start_h * 60 + k * {minutes} + {_mix("g * 100003 + k", s, 4)} % {start_jitter}
                as start_min,
            start_h * 60 + least((k + 1) * {minutes}
                - {_mix("g * 100003 + k", s, 5)} % {end_gap}, len_h * 60) as end_min
        from numbered
    )
    select
        g,
        printf('{prefix}att-%07d-%05d', g, k) as attempt_id,
        printf('exp-%05d', (g + k) % {spec.experiments}) as experiment_id,
        case when k > 0 and r % 7 = 0 then printf('{prefix}att-%07d-%05d', g, k - 1) end
            as parent_attempt_id,
        'model-v' || (r % 5) as model_version, 'cfg-' || (r % 11) as config_version,
        'snap-' || (r % 3) as dataset_snapshot, 'aws' as provider,
        printf('%012d', 200000000000 + g % {ACCOUNTS}) as account_id, 'us-east-1' as region,
        'train-' || (g % {CLUSTERS}) as cluster, 'team-' || (g % 7) as namespace,
        {types}[g % 5 + 1] as instance_type, nullif({gpu_types}[g % 5 + 1], '') as gpu_type,
        {gpus}[g % 5 + 1]::bigint as gpu_count, 1::bigint as node_count,
        case when g % 4 = 0 then 'reserved' else 'on_demand' end as capacity_type,
        timestamptz '{start}' + to_minutes(start_min - 5) as submitted_at,
        timestamptz '{start}' + to_minutes(start_min) as started_at,
        timestamptz '{start}' + to_minutes(end_min) as ended_at,
        case when r % 10 = 3 then 'failed' else 'succeeded' end as status,
        case when r % 10 = 3 then 'NCCL timeout' end as failure_reason,
        'eval_loss' as metric_name, (r % 1000) / 1000.0 as metric_value,
        printf('s3://runcost-bench-artifacts/{prefix}att-%07d-%05d/', g, k) as artifact_uri,
        map(['team'], ['team-' || (g % 7)]) as tags
    from timed
    """


def resources_sql(spec: ScaleSpec) -> str:
    """Each attempt holds its node's instance (times from the attempt) and its EBS volume."""
    return f"""
    select attempt_id, printf('i-%017x', g * 1000003 + {spec.seed}) as resource_id,
        'instance' as resource_kind, null::timestamptz as started_at,
        null::timestamptz as ended_at, gpu_count, null::double as vcpu_count,
        null::double as memory_gib
    from attempts
    union all
    select attempt_id, printf('vol-%017x', g * 1000003 + {spec.seed}), 'volume',
        started_at, ended_at, 0::bigint, null::double, null::double
    from attempts
    """
