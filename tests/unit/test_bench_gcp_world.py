"""The benchmark's GCP export: two CUR lines apart only in their line id stay two distinct rows."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb

from bench.gcp_world import export_sql

# one CUR 2.0 line of a Cloud NAT hour, as the generated world writes it: the columns gcp_sql reads
LINE = """
    select '{line_id}' as identity_line_item_id, 'Usage' as line_item_line_item_type,
        'NatGateway-Bytes' as line_item_usage_type, '' as product_instance_type,
        '200000000000' as line_item_usage_account_id, 'ml-prod' as line_item_usage_account_name,
        'us-east-1e' as line_item_availability_zone,
        'nat-00000000000000001' as line_item_resource_id,
        timestamptz '2026-10-07 18:00:00+00' as line_item_usage_start_date,
        timestamptz '2026-10-07 19:00:00+00' as line_item_usage_end_date,
        timestamptz '2026-10-01 00:00:00+00' as bill_billing_period_start_date,
        {cost} as line_item_unblended_cost, {cost} * 0.95 as line_item_net_unblended_cost,
        null::double as savings_plan_savings_plan_effective_cost,
        null::double as savings_plan_net_savings_plan_effective_cost,
        null::double as savings_plan_used_commitment, {cost} as pricing_public_on_demand_cost,
        30.0 as line_item_usage_amount, 'GB' as pricing_unit, 'USD' as line_item_currency_code,
        map {{'user_env': 'prod'}} as resource_tags
"""


def test_lines_apart_only_in_their_id_are_rows_of_two_loads_in_file_order(tmp_path: Path) -> None:
    lines = [("00296751116845ae", 1.3491), ("0029675d6dbdc782", 0.5), ("002f7066d1ccc9ae", 1.3491)]
    cur = tmp_path / "cur.parquet"
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    union = " union all ".join(LINE.format(line_id=line, cost=cost) for line, cost in lines)
    con.execute(f"copy ({union}) to '{cur}' (format parquet)")
    rows = con.execute(f"select * from ({export_sql(con, str(cur))})").fetchall()
    names = [column[0] for column in con.description]
    assert "cur_line_id" not in names and "cur_file_row" not in names
    assert [float(row[names.index("cost")]) for row in rows] == [1.3491, 0.5, 1.3491]
    first, _, again = rows
    stamp = names.index("export_time")
    # the repeat is the same row in every column but export_time, a second after the first
    assert [a for a, b in zip(first, again, strict=True) if a != b] == [first[stamp]]
    assert again[stamp] - first[stamp] == timedelta(seconds=1)
    assert rows[1][stamp] == first[stamp]
