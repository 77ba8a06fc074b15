"""Look-alike tags on every provider's bill: a decomposed (NFD) `att-café` places its cost on the
attempt telemetry names in NFC, and a tag holding a NUL is warned, naming the file, row and tag
key, and places nothing, on AWS CUR, the Google Cloud billing export and FOCUS alike."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from focus_world import row as focus_row
from focus_world import write_mixed_csv
from mixed_world import CONFIG_HEAD, SOURCES, _attempt, at, gcp_hour

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario.cur_writer import CurLine, write_cur_delivery
from pipeline.scenario.gcp_scenario import write_export
from pipeline.scenario.telemetry_writer import AttemptResource, Experiment, write_telemetry
from pipeline.warehouse.snapshots import open_database

D = Decimal
NFC = unicodedata.normalize("NFC", "att-café")
NFD = unicodedata.normalize("NFD", "att-café")
NUL = "att-llm-01\x00"
# the NFD-tagged line's cost, the NUL-tagged line's (each provider's files, by hand)
TAGGED, NUL_TAGGED = D("174.68"), D("0.14")
# where each provider's NUL-tagged line is: its delivery's export and period, its file (the raw
# store's Parquet part of the Google Cloud export), its row in the file and its tag column
WHERE = {
    "aws": (
        "mixed-cur 2026-10",
        "mixed-cur-00001.snappy.parquet",
        2,
        "resource_tags['user_attempt_id']",
    ),
    "gcp": ("gcp 2026-10-12", "part-001.parquet", 1, "labels['attempt-id']"),
    "focus": ("mixed 2026-10", "focus_2026.csv", 2, "Tags['attempt-id']"),
}


def _write_world(folder: Path, provider: str) -> Path:
    if provider == "aws":
        lines = [
            CurLine(usage_start=at(9), usage_end=at(10), resource_id=f"i-0{number}",
                    usage_amount=D(1), unblended_cost=cost, public_on_demand_cost=cost,
                    resource_tags={"user_attempt_id": tag})
            for number, (tag, cost) in enumerate([(NFD, TAGGED), (NUL, NUL_TAGGED)])
        ]  # fmt: skip
        root = folder / "aws" / "exports" / "mixed-cur"
        write_cur_delivery(
            root, "mixed-cur", "2026-10", lines, "0b9c9d1e-0000-4000-8000-0000000000a1"
        )
    elif provider == "gcp":
        rows = [
            gcp_hour(
                at(9), str(cost), 3600, resource_name=f"vm-{number}", labels={"attempt-id": tag}
            )
            for number, (tag, cost) in enumerate([(NFD, TAGGED), (NUL, NUL_TAGGED)])
        ]
        write_export(folder / "gcp", rows, "ndjson")
    else:
        window = {
            "ChargePeriodStart": "2026-10-12 09:00:00",
            "ChargePeriodEnd": "2026-10-12 10:00:00",
        }
        rows = [
            focus_row("Microsoft", 10, ResourceId=f"/subscriptions/s1/vm/vm-{number}",
                      Tags={"attempt-id": tag}, **window, BilledCost=str(cost),
                      EffectiveCost=str(cost), ListCost=str(cost))
            for number, (tag, cost) in enumerate([(NFD, TAGGED), (NUL, NUL_TAGGED)])
        ]  # fmt: skip
        write_mixed_csv(folder / "focus" / "mixed" / "focus_2026.csv", rows)
    attempts = [
        _attempt(NFC, provider, at(8), at(12)),
        _attempt("att-llm-01", provider, at(8), at(12)),
    ]
    experiments = [Experiment("exp-x", "vision", "accuracy", 0.9, True)]
    # a resource no bill line names: neither attempt is placed by resource and time
    elsewhere = [AttemptResource("att-llm-01", "i-elsewhere", "instance", None, None, 1)]
    write_telemetry(folder / "telemetry", attempts, elsewhere, experiments)
    config = folder / "runcost.toml"
    config.write_text(CONFIG_HEAD + SOURCES[provider], "utf-8")
    return config


@pytest.fixture(scope="module", params=["aws", "gcp", "focus"])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, duckdb.DuckDBPyConnection, list[str]]]:
    provider = request.param
    config = _write_world(tmp_path_factory.mktemp(provider), provider)
    handler = _Collect()
    logger = logging.getLogger("runcost")
    logger.addHandler(handler)
    try:
        result = run_pipeline(load_config(config))
    finally:
        logger.removeHandler(handler)
    con = open_database(result.database)
    yield provider, con, handler.warnings
    con.close()


class _Collect(logging.Handler):
    """The warnings a module-scoped run logs (caplog is per test)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.warnings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.warnings.append(record.getMessage())


def test_a_decomposed_tag_places_its_cost_on_the_attempt(world) -> None:
    _provider, con, _warnings = world
    placed = con.execute(
        "select attempt_id, attribution_method, sum(billed_cost) from allocation.cost_allocations "
        "where allocation_model = 'marginal' and attempt_id is not null group by all"
    ).fetchall()
    assert placed == [(NFC, "tag", TAGGED)]
    tags = con.execute("select attempt_tag from normalized.cost_lines order by line_id").fetchall()
    assert tags == [(NFC,), (NUL,)]


def test_a_tag_with_a_nul_places_nothing_and_is_warned(world) -> None:
    provider, con, warnings = world
    unallocated = con.execute(
        "select sum(billed_cost) from allocation.cost_allocations "
        "where allocation_model = 'marginal' and attempt_id is null"
    ).fetchone()
    assert unallocated == (NUL_TAGGED,)
    export, file, row, column = WHERE[provider]
    found = [text for text in warnings if "holds the control character" in text]
    assert len(found) == 1
    delivery, said = found[0].split(f"), {file}: row {row}, column {column}: ", 1)
    assert delivery.startswith(f"{export} (delivery ")
    assert said == (
        "the attempt tag 'att-llm-01\\x00' holds the control character U+0000, which no attempt "
        "id holds, so the line is not placed by its tag; without it the tag names attempt "
        "'att-llm-01' (1 line(s), billed 0.14, carry attempt tags with control characters; the "
        "first is named); remove the character where the resources are tagged (lines already "
        "billed keep the tag they were billed with)"
    )
