"""The benchmark world's bill as a Google Cloud detailed billing export, extracted to files.

One DuckDB projection of the world's CUR 2.0 Parquet into the export's nested rows, written as
a BigQuery extract job writes them: NDJSON (records as objects, repeated fields as lists,
``TIMESTAMP`` as ``2026-10-01 05:00:00 UTC``, ``FLOAT`` as numbers) or Parquet. One row per CUR
line, except Savings Plan negations: Google Cloud prices covered usage with a credit instead.

- ``cost`` is ``line_item_unblended_cost``; ``cost_at_list`` ``pricing_public_on_demand_cost``.
- Savings Plan covered usage carries a ``COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE`` credit of its
  effective cost minus its cost; the Savings Plan fee is a ``Commitment`` SKU row whose
  ``FEE_UTILIZATION_OFFSET`` credit takes back the commitment the hour used. So effective cost
  (cost plus those credits) is the CUR world's.
- The EDP accounts' 5 % is a ``DISCOUNT`` credit: net cost (cost plus every credit) is the CUR
  world's net cost.
- ``labels`` are the CUR's user tags under the keys as written on the resources
  (``user_attempt_id`` is ``attempt-id``), which Google Cloud labels keep.
- ``resource.name`` ends in the CUR's resource id (``.../instances/i-...``), the name telemetry
  records.
- Two CUR lines apart only in their line id (which the export has no column for) are rows of
  two loads: each repeat of a row is exported a second after the one before (``export_time``),
  as BigQuery writes a row once per load, so no two rows of a file are equal in every column.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from bench.scale_sql import EXPORT_DIR
from bench.source_config import ATTEMPT_KEY, expected_bill, source_config_text

FORMATS = ("ndjson", "parquet")
ACCOUNT = "01BE4C-000000-00000A"
_TYPE = "line_item_line_item_type"
# CUR usage type (LIKE pattern) -> (service, SKU description), first match wins
SKUS: tuple[tuple[str, str, str], ...] = (
    ("BoxUsage:%", "Compute Engine", "Instance running in Americas"),
    ("EBS:%", "Compute Engine", "Balanced PD Capacity"),
    ("%DataTransfer-Regional%", "Compute Engine", "Network Inter Zone Data Transfer Out"),
    ("DataTransfer-Out%", "Compute Engine", "Network Internet Data Transfer Out"),
    ("TimedStorage%", "Cloud Storage", "Standard Storage US Multi-region"),
    ("Requests-%", "Cloud Storage", "Multi-Region Standard Class A Operations"),
    ("NatGateway%", "Networking", "Cloud NAT Data Processing"),
    ("CW:%", "Cloud Monitoring", "Monitoring Metric Samples"),
    ("%AmazonEKS%", "Kubernetes Engine", "Zonal Kubernetes Clusters"),
    ("ComputeSP:%", "Compute Engine", "Commitment - dollar based v1: GCE for 1 year"),
)
# credit types whose sum with cost is the effective cost (docs/gcp.md, credits and cost bases)
EFFECTIVE_CREDITS = ("COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE", "FEE_UTILIZATION_OFFSET")
# the CUR line id and file row, which order a row's repeats and the file (export_sql), not exported
_LINE, _ROW = "cur_line_id", "cur_file_row"


def _sku_case(part: int) -> str:
    whens = " ".join(
        f"when line_item_usage_type like '{row[0]}' then '{row[part]}'" for row in SKUS
    )
    tax = ("", "Invoice", "Tax")[part]
    return f"case when {_TYPE} = 'Tax' then '{tax}' {whens} else 'Other' end"


def _credit(kind: str, amount: str) -> str:
    return (
        f"{{'name': '{kind}', 'amount': {amount}, 'full_name': '{kind}', 'id': '{kind}', "
        f"'type': '{kind}'}}"
    )


def gcp_sql(files: list[str]) -> str:
    """The export rows of the CUR data files `files`, as typed nested columns."""
    listed = "[" + ", ".join("'" + name.replace("'", "''") + "'" for name in files) + "]"
    hours = "pricing_unit = 'Hrs'"
    kind = (
        "case when line_item_usage_type like 'EBS:%' then 'disks' "
        "when line_item_usage_type like 'BoxUsage:%' or line_item_usage_type like '%Bytes' "
        "then 'instances' else 'resources' end"
    )
    zone = "replace(line_item_availability_zone, 'us-east-1', 'us-east1-')"
    name = (
        f"'projects/ml-' || line_item_usage_account_id || '/zones/' || {zone} || '/' || "
        f"{kind} || '/' || line_item_resource_id"
    )
    edp = (
        "case when line_item_net_unblended_cost is not null then "
        "round(line_item_net_unblended_cost - line_item_unblended_cost, 6) "
        "when savings_plan_net_savings_plan_effective_cost is not null then "
        "round(savings_plan_net_savings_plan_effective_cost - "
        "savings_plan_savings_plan_effective_cost, 6) end"
    )
    cud = (
        f"case when {_TYPE} = 'SavingsPlanCoveredUsage' then "
        "round(savings_plan_savings_plan_effective_cost - line_item_unblended_cost, 6) end"
    )
    offset = (
        f"case when {_TYPE} = 'SavingsPlanRecurringFee' then "
        "-round(savings_plan_used_commitment, 6) end"
    )
    listed_credits = [
        _credit(EFFECTIVE_CREDITS[0], cud),
        _credit(EFFECTIVE_CREDITS[1], offset),
        _credit("DISCOUNT", edp),
    ]
    credits = (
        f"list_filter([{', '.join(listed_credits)}], lambda credit: credit.amount is not null)"
    )
    labels = (
        "list_transform(list_filter(map_entries(resource_tags), lambda entry: "
        "starts_with(entry.key, 'user_')), lambda entry: {'key': replace(entry.key[6:], '_', "
        "'-'), 'value': entry.value})"
    )
    key_values = "struct(key varchar, value varchar)[]"
    return f"""
    select
        '{ACCOUNT}' as billing_account_id,
        {{'id': upper(left(md5({_sku_case(1)}), 4)), 'description': {_sku_case(1)}}} as service,
        {{'id': upper(left(md5({_sku_case(2)} || line_item_usage_type), 12)),
          'description': case when line_item_usage_type like 'BoxUsage:%'
            then product_instance_type || ' ' else '' end || {_sku_case(2)}}} as sku,
        line_item_usage_start_date as usage_start_time,
        line_item_usage_end_date as usage_end_time,
        {{'id': 'ml-' || line_item_usage_account_id, 'number': line_item_usage_account_id,
          'name': line_item_usage_account_name, 'labels': []::{key_values},
          'ancestry_numbers': '/100000000000/',
          'ancestors': []::struct(resource_name varchar, display_name varchar)[]}} as project,
        {labels} as labels,
        case when product_instance_type <> '' then [{{'key':
            'compute.googleapis.com/machine_spec', 'value': product_instance_type}}]
            else []::{key_values} end as system_labels,
        {{'location': 'us-east1', 'country': 'US', 'region': 'us-east1',
          'zone': nullif({zone}, '')}}
            as location,
        case when line_item_resource_id <> '' then
            {{'name': {name}, 'global_name': '//compute.googleapis.com/' || {name}}} end
            as resource,
        []::struct(key varchar, value varchar, inherited boolean, namespace varchar)[] as tags,
        'GOOGLE' as transaction_type,
        null::varchar as seller_name,
        line_item_usage_end_date + interval 5 hour as export_time,
        round(line_item_unblended_cost, 6) as cost,
        line_item_currency_code as currency,
        1.0::double as currency_conversion_rate,
        {{'amount': case when {hours} then line_item_usage_amount * 3600
            else line_item_usage_amount end,
          'unit': case when {hours} then 'seconds' when pricing_unit = '' then 'count'
            else lower(pricing_unit) end,
          'amount_in_pricing_units': line_item_usage_amount,
          'pricing_unit': case when {hours} then 'hour' else lower(pricing_unit) end}} as usage,
        {credits} as credits,
        {{'month': strftime(bill_billing_period_start_date, '%Y%m'),
          'publisher_type': 'GOOGLE'}} as invoice,
        case when {_TYPE} = 'Tax' then 'tax' else 'regular' end as cost_type,
        null::struct(id varchar, description varchar, mode varchar, type varchar)
            as adjustment_info,
        round(pricing_public_on_demand_cost, 6) as cost_at_list,
        identity_line_item_id as {_LINE},
        file_row_number as {_ROW}
    from read_parquet({listed}, file_row_number = true)
    where {_TYPE} <> 'SavingsPlanNegation'
    """


def export_sql(con: duckdb.DuckDBPyConnection, file: str) -> str:
    """The export rows of one CUR data file in its order, each repeat of a row (equal in every
    column but export_time) exported `n` seconds after the first, `n` its place by CUR line id."""
    sql = gcp_sql([file])
    names = [column[0] for column in con.execute(f"select * from ({sql}) limit 0").description]
    compared = ", ".join(name for name in names if name not in ("export_time", _LINE, _ROW))
    return f"""
    select * exclude ({_LINE}, {_ROW}, repeat)
        replace (export_time + to_seconds(repeat) as export_time)
    from (
        select *, row_number() over (partition by hash({compared}) order by {_LINE}) - 1
            as repeat
        from ({sql})
    )
    order by {_ROW}
    """


def write_gcp(cur: Path, out_dir: Path, fmt: str, threads: int | None = None) -> dict:
    """Export files of the CUR dataset `cur` under out_dir/gcp, and out_dir/expected.json."""
    if fmt not in FORMATS:
        raise ValueError(f"GCP export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    data = sorted((cur / EXPORT_DIR / "data").rglob("*.parquet"))
    folder = out_dir / "gcp"
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")
    if threads:
        con.execute(f"set threads = {int(threads)}")
    for number, path in enumerate(data, start=1):
        sql = export_sql(con, str(path))
        if fmt == "parquet":
            target = folder / f"billing-{number:012d}.parquet"
            options = "format parquet, compression snappy"
        else:
            target = folder / f"billing-{number:012d}.json"
            stamp = "'%Y-%m-%d %H:%M:%S UTC'"
            times = ("usage_start_time", "usage_end_time", "export_time")
            texts = ", ".join(f"strftime({name}, {stamp}) as {name}" for name in times)
            sql = f"select * replace ({texts}) from ({sql})"
            options = "format json"
        con.execute(f"copy ({sql}) to '{target}' ({options})")
    cur_expected = json.loads((cur / "expected.json").read_text(encoding="utf-8"))
    expected = _expected(con, gcp_sql([str(path) for path in data]), cur_expected)
    con.close()
    expected |= {"source": "gcp", "gcp_format": fmt, "data_files": len(data)}
    telemetry = Path("..") / cur.name / "telemetry"
    config = gcp_config_text(Path("warehouse"), Path("gcp"), telemetry)
    (out_dir / "runcost.toml").write_text(config, encoding="utf-8")
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", "utf-8")
    return expected


def _expected(con: duckdb.DuckDBPyConnection, sql: str, cur_expected: dict) -> dict:
    """The export's totals per cost basis (exact decimals), the telemetry counts of the world."""
    prefix = cur_expected["spec"].get("attempt_prefix", "")
    money = "decimal(38, 10)"
    effective = ", ".join(f"'{kind}'" for kind in EFFECTIVE_CREDITS)
    tagged = (
        f"len(list_filter(labels, lambda label: label.key = '{ATTEMPT_KEY}' "
        f"and label.value like '{prefix}att-0%')) > 0"
    )
    row = con.execute(
        f"""with rows as (
            select cost::{money} as cost,
                coalesce(cost_at_list::{money}, cost::{money}) as list,
                list_sum(list_transform(credits, lambda credit: credit.amount::{money}))
                    as all_credits,
                list_sum(list_transform(list_filter(credits, lambda credit:
                    credit.type in ({effective})), lambda credit: credit.amount::{money}))
                    as effective_credits,
                {tagged} as tagged
            from ({sql})
        )
        select count(*), sum(cost), sum(cost + coalesce(effective_credits, 0)), sum(list),
            sum(cost + coalesce(all_credits, 0)), count(*) filter (where tagged),
            coalesce(sum(cost) filter (where tagged), 0)
        from rows"""
    ).fetchall()[0]
    names = (
        "cost_lines", "billed_cost", "effective_cost", "list_cost", "net_cost", "tagged_lines",
        "tagged_billed_cost",
    )  # fmt: skip
    return expected_bill(cur_expected, names, row)


def gcp_config_text(
    warehouse: Path, files: Path, telemetry: Path, memory_limit: str | None = None
) -> str:
    """A runcost.toml reading the export files, the world's telemetry, the world's GKE pool."""
    return source_config_text(
        writer="bench.gcp_world: the generated world's bill as a Google Cloud billing export",
        warehouse=warehouse,
        bill=f'[gcp]\nfiles = ["{files}"]\n',
        telemetry=telemetry,
        pool=("gke-control-plane", "Kubernetes Engine"),
        memory_limit=memory_limit,
    )
