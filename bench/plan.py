"""The physical plan of the resource+time join, read with EXPLAIN on a build of a real config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from pipeline.config.loader import load_config
from pipeline.dag.build import build
from pipeline.dag.models import discover
from pipeline.dag.partitions import pass_sql
from pipeline.dag.pools import pool_models
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.run.settings import write_settings
from pipeline.run.sources import register_sources
from pipeline.telemetry.files import load_telemetry

JOIN_MODEL = "attribution.resource_time_overlaps"
# Range joins and loop joins make the per-resource cost grow with lines x attempts.
FORBIDDEN = ("IE_JOIN", "PIECEWISE_MERGE_JOIN", "NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN")


def join_plan(config_path: Path) -> list[dict[str, Any]]:
    """EXPLAIN (format json) of the resource+time join model, its inputs built from the config."""
    config = load_config(config_path)
    deliveries = ingest_aws_exports(config.providers["aws"], config.ingest_context())
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        write_settings(con, config)
        register_sources(con, deliveries, load_telemetry(config.telemetry))
        models = discover() + pool_models(config)
        (target,) = [model for model in models if model.qualified == JOIN_MODEL]
        needed = {"staging", "normalized"}
        build(con, [m for m in models if m.layer in needed or m.qualified in target.inputs])
        sql = pass_sql(target.sql, 1, 0)  # the plan of one pass (pipeline.dag.partitions)
        text = con.execute(f"explain (format json) {sql}").fetchall()[0][1]
    finally:
        con.close()
    return json.loads(text)


def operators(tree: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every operator of the plan as (name, extra_info), depth first."""
    found: list[tuple[str, dict[str, Any]]] = []
    stack = list(tree)
    while stack:
        node = stack.pop()
        found.append((node.get("name", ""), node.get("extra_info", {})))
        stack.extend(node.get("children", []))
    return found


def _conditions(info: dict[str, Any]) -> list[str]:
    value = info.get("Conditions", [])
    return [value] if isinstance(value, str) else list(value)


def check_plan(tree: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the join is a hash join on (resource_id, hour_start_us), no range or loop join."""
    ops = operators(tree)
    hour_joins = [
        _conditions(info)
        for name, info in ops
        if name == "HASH_JOIN"
        and any("hour_start_us = " in c for c in _conditions(info))
        and any("resource_id = " in c for c in _conditions(info))
    ]
    forbidden = sorted({name for name, _ in ops if name in FORBIDDEN})
    return {
        "hash_join_on_resource_hour": bool(hour_joins),
        "conditions": hour_joins[0] if hour_joins else [],
        "forbidden_operators": forbidden,
        "ok": bool(hour_joins) and not forbidden,
    }
