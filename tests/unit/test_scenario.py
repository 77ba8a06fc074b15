"""The scenario generator: a real CUR 2.0 delivery, deterministic bytes, and a consistent oracle."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.ingest.aws.manifest import parse_manifest
from pipeline.scenario import write_scenario
from pipeline.scenario.cur_writer import CurLine, write_cur_delivery, write_cur_parquet
from pipeline.scenario.oracle import OraclePool, compute, cost_bases, split
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource
from schemas.aws_cur2 import COLUMNS, arrow_schema

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
PERIOD = "BILLING_PERIOD=2026-10"
DATA_FILE = Path("aws/exports/runcost-cur/data") / PERIOD / "runcost-cur-00001.snappy.parquet"
MANIFEST = Path("aws/exports/runcost-cur/metadata") / PERIOD / "runcost-cur-Manifest.json"
BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scenario")
    assert write_scenario(folder) == folder / "runcost.toml"
    return folder


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "warehouse" not in path.relative_to(folder).parts
    }


def test_parquet_has_the_125_columns_with_the_export_types(world: Path) -> None:
    schema = pq.read_schema(world / DATA_FILE)
    assert len(schema) == 125
    assert schema.names == [name for name, _ in COLUMNS]
    for field in arrow_schema():
        assert schema.field(field.name).type == field.type, field.name
    for name in ("product", "resource_tags", "cost_category"):
        assert pa.types.is_map(schema.field(name).type)
        assert schema.field(name).type.item_type == pa.string()
    assert schema.field("discount").type.item_type == pa.float64()
    assert schema.field("line_item_unblended_rate").type == pa.string()
    assert pq.ParquetFile(world / DATA_FILE).metadata.row_group(0).column(0).compression == (
        "SNAPPY"
    )


def test_maps_read_as_maps_in_duckdb(world: Path) -> None:
    con = duckdb.connect()
    row = con.execute(
        "select product['gpu'], product['vcpu'], resource_tags['user_attempt_id'], "
        "identity_time_interval from read_parquet(?) "
        "where line_item_resource_id = 'i-0a1f5c2e9d3b70001' and line_item_line_item_type = "
        "'Usage' and line_item_usage_type like 'BoxUsage:%' order by line_item_usage_start_date "
        "limit 1",
        [str(world / DATA_FILE)],
    ).fetchone()
    assert row == ("8", "96", "att-llm-01", "2026-10-05T08:00:00Z/2026-10-05T09:00:00Z")


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    write_scenario(tmp_path / "a")
    write_scenario(tmp_path / "b")
    first, second = files_of(tmp_path / "a"), files_of(tmp_path / "b")
    assert len(first) == 14  # attempt_events.csv, pool_costs.csv and dcgm/ (2 files) included
    assert first == second
    write_scenario(tmp_path / "c", seed=8)
    other = files_of(tmp_path / "c")
    assert other[str(DATA_FILE)] != first[str(DATA_FILE)]


def test_fixtures_demo_is_the_generator_output(tmp_path: Path) -> None:
    write_scenario(tmp_path)
    assert files_of(FIXTURES) == files_of(tmp_path), (
        "fixtures/demo is stale: regenerate it with "
        'python -c "from pathlib import Path; from pipeline.scenario import write_scenario; '
        "write_scenario(Path('fixtures/demo'))\""
    )


def test_manifest_lists_the_data_file(world: Path) -> None:
    manifest = parse_manifest((world / MANIFEST).read_text(encoding="utf-8"), str(MANIFEST))
    assert manifest.export_name == "runcost-cur"
    assert manifest.billing_period == "2026-10"
    key = DATA_FILE.relative_to("aws/exports/runcost-cur")
    assert manifest.data_files == (f"s3://runcost-demo-billing/exports/runcost-cur/{key}",)
    assert len(manifest.columns) == 125


def test_delivery_in_several_files(tmp_path: Path) -> None:
    lines = [CurLine(resource_id=f"i-{number:017x}") for number in range(5)]
    paths = write_cur_delivery(tmp_path, "cur", "2026-10", lines, "exec-1", files=2)
    names = [path.name for path in paths]
    assert names == ["cur-00001.snappy.parquet", "cur-00002.snappy.parquet", "cur-Manifest.json"]
    assert [pq.read_metadata(path).num_rows for path in paths[:2]] == [3, 2]
    manifest = parse_manifest(paths[2].read_text(encoding="utf-8"), "m")
    assert [item.rsplit("/", 1)[-1] for item in manifest.data_files] == names[:2]


def test_money_is_written_with_at_most_six_places(tmp_path: Path) -> None:
    line = CurLine(unblended_cost=Decimal("1.23456789"), public_on_demand_cost=0.1 + 0.2)
    write_cur_parquet(tmp_path / "one.parquet", [line])
    row = pq.read_table(tmp_path / "one.parquet").to_pylist()[0]
    assert row["line_item_unblended_cost"] == 1.234568
    assert row["pricing_public_on_demand_cost"] == 0.3
    assert row["line_item_net_unblended_cost"] is None
    assert row["resource_tags"] == []


def test_bill_totals_are_the_parquet_sums(world: Path) -> None:
    table = pq.read_table(world / DATA_FILE).to_pylist()
    billed = sum((Decimal(repr(row["line_item_unblended_cost"])) for row in table), Decimal(0))
    listed = sum(
        (
            Decimal(repr(row["pricing_public_on_demand_cost"] or 0.0))
            for row in table
            if row["line_item_line_item_type"] != "SavingsPlanNegation"
        ),
        Decimal(0),
    )
    (totals,) = read_csv(world / "expected" / "bill_totals.csv")
    assert totals["billing_period"] == "2026-10"
    assert Decimal(totals["billed_cost"]) == billed
    assert Decimal(totals["list_cost"]) == listed
    # No Upfront Savings Plan: amortizing moves cost between lines, never in or out of the bill.
    assert Decimal(totals["effective_cost"]) == billed
    assert 1000 < len(table) < 5000


def test_every_attempt_is_costed_under_both_models(world: Path) -> None:
    attempts = {row["attempt_id"] for row in read_csv(world / "telemetry" / "attempts.csv")}
    rows = read_csv(world / "expected" / "attempt_costs.csv")
    assert {(row["attempt_id"], row["allocation_model"]) for row in rows} == {
        (attempt, model) for attempt in attempts for model in ("marginal", "fully_loaded")
    }
    cancelled = [row for row in rows if row["attempt_id"] == "att-vis-03"]
    assert all(Decimal(row[basis]) == 0 for row in cancelled for basis in BASES)


def test_fully_loaded_adds_exactly_the_pools(world: Path) -> None:
    """Fully loaded minus marginal is, over all attempts, what the pools spread plus the EKS
    node's idle capacity its placed pods take (split unused cost). The EKS fee, the unused plan
    and the account credit are spread whole; each pool's total is checked from the Parquet."""
    rows = read_csv(world / "expected" / "attempt_costs.csv")
    cost = {(row["attempt_id"], row["allocation_model"]): row for row in rows}
    table = pq.read_table(world / DATA_FILE).to_pylist()

    def money(row: dict, column: str) -> Decimal:
        return Decimal(repr(row[column])) if row[column] is not None else Decimal(0)

    eks = [row for row in table if row["line_item_product_code"] == "AmazonEKS"]
    plan = [row for row in table if row["line_item_line_item_type"] == "SavingsPlanRecurringFee"]
    credit = [row for row in table if row["line_item_line_item_type"] == "Credit"]
    assert sum(money(row, "line_item_unblended_cost") for row in eks) == Decimal("74.4")
    assert sum(money(row, "line_item_unblended_cost") for row in credit) == Decimal(-250)
    unused_plan = sum(
        money(row, "savings_plan_total_commitment_to_date")
        - money(row, "savings_plan_used_commitment")
        for row in plan
    )
    pools = {row["pool_name"]: row for row in read_csv(world / "expected" / "pool_costs.csv")}
    assert set(pools) == {
        "eks-control-plane", "unused-savings-plan", "monitoring", "checkpoint-storage",
        "account-credits",
    }  # fmt: skip
    assert Decimal(pools["eks-control-plane"]["billed_cost"]) == Decimal("74.4")
    assert Decimal(pools["unused-savings-plan"]["effective_cost"]) == unused_plan
    assert Decimal(pools["account-credits"]["net_cost"]) == Decimal(-250)
    # the monitoring node bills 96 h at $0.192; only the 23 h with a running attempt are spread
    assert Decimal(pools["monitoring"]["effective_cost"]) == 23 * Decimal("0.192")
    idle = [
        row
        for row in read_csv(world / "expected" / "split_costs.csv")
        if row["attribution_method"] == "split_unused"
    ]
    assert {row["attempt_id"] for row in idle} == {"att-eks-01", "att-eks-02"}
    for basis in BASES:
        pooled = sum(Decimal(row[basis]) for row in pools.values())
        pooled += sum(Decimal(row[basis]) for row in idle)
        extra = [
            Decimal(cost[attempt, "fully_loaded"][basis])
            - Decimal(cost[attempt, "marginal"][basis])
            for attempt, model in cost
            if model == "marginal"
        ]
        assert sum(extra) == pooled, basis


def test_experiment_rows_add_up_their_attempts(world: Path) -> None:
    attempts = read_csv(world / "expected" / "attempt_costs.csv")
    for row in read_csv(world / "expected" / "experiment_costs.csv"):
        members = [
            item
            for item in attempts
            if item["experiment_id"] == row["experiment_id"]
            and item["allocation_model"] == row["allocation_model"]
        ]
        assert int(row["attempts"]) == len(members)
        total = sum((Decimal(item["effective_cost"]) for item in members), Decimal(0))
        only = Decimal(row["experiment_only_cost"])
        assert Decimal(row["effective_cost"]) == total + only
    vision = read_csv(world / "expected" / "experiment_costs.csv")[-1]
    assert vision["experiment_id"] == "exp-vision-sweep"
    assert (vision["attempts"], vision["failed_attempts"]) == ("3", "1")
    assert Decimal(vision["experiment_only_cost"]) > 0  # the dataset bucket


def test_failed_attempt_and_retry_split_one_instance_hour(world: Path) -> None:
    cost = {
        (row["attempt_id"], row["allocation_model"]): row
        for row in read_csv(world / "expected" / "attempt_costs.csv")
    }
    rate = Decimal("5.672")  # g5.12xlarge on demand
    # 10:00-10:20 of a full instance-hour; the retry gets 10:25-11:00 plus three whole hours.
    assert Decimal(cost["att-rl-01", "marginal"]["effective_cost"]) == Decimal("1.8906666667")
    retry = Decimal(cost["att-rl-02", "marginal"]["effective_cost"])
    assert abs(retry - rate * (Decimal(35) / 60 + 3)) <= Decimal("0.0000000001")
    assert (
        cost["att-rl-02", "marginal"]["estimated_cost"]
        == cost["att-rl-02", "marginal"]["effective_cost"]
    )


HOUR_START = datetime(2026, 10, 5, 9, tzinfo=UTC)
HOUR_END = datetime(2026, 10, 5, 10, tzinfo=UTC)


def attempt(attempt_id: str, start: datetime | None, end: datetime | None, gpus: int) -> Attempt:
    return Attempt(
        attempt_id, "exp", None, "m", "c", "d", "aws", "1", "r", "k", "ns", "g5.xlarge", "A10G",
        gpus, 1, "on_demand", HOUR_START, start, end, "succeeded", None, None, None, None,
    )  # fmt: skip


def test_oracle_partial_hour_uses_the_billed_usage() -> None:
    # 0.25 Hrs billed and the attempt held the instance 09:00-09:15: the whole line is its.
    line = CurLine(
        usage_start=HOUR_START, usage_end=HOUR_END, resource_id="i-1", usage_amount=0.25,
        unblended_cost=Decimal("0.2515"),
    )  # fmt: skip
    held = AttemptResource("a", "i-1", "ec2_instance", None, None, 1)
    ran = attempt("a", HOUR_START, datetime(2026, 10, 5, 9, 15, tzinfo=UTC), 1)
    result = compute([line], [ran], [held], [], [])
    assert result.attempt_costs["a", "marginal"]["effective_cost"] == Decimal("0.2515")
    assert result.attempt_costs["a", "marginal"]["estimated_cost"] == Decimal("0.2515")
    # Per GB-month the window counts instead: 15 of 60 minutes.
    line.pricing_unit = "GB-Mo"
    result = compute([line], [ran], [held], [], [])
    assert result.attempt_costs["a", "marginal"]["effective_cost"] == Decimal("0.062875")


def test_oracle_pool_spreads_by_gpu_seconds() -> None:
    line = CurLine(product_code="AmazonEKS", resource_id="arn:cluster", unblended_cost=1)
    attempts = [
        attempt("a", HOUR_START, HOUR_END, 1),
        attempt("b", HOUR_START, HOUR_END, 2),
        attempt("c", None, None, 8),  # never started: no weight
    ]
    pool = OraclePool("eks", lambda item: item.product_code == "AmazonEKS", spread="billing_period")
    result = compute([line], attempts, [], [], [pool])
    loaded = [result.attempt_costs[name, "fully_loaded"]["effective_cost"] for name in "abc"]
    assert loaded == [Decimal("0.3333333333"), Decimal("0.6666666667"), Decimal(0)]
    assert result.attempt_costs["a", "marginal"]["effective_cost"] == 0


def test_cost_bases_follow_the_line_type() -> None:
    negation = CurLine(
        line_item_type="SavingsPlanNegation", unblended_cost=-4, public_on_demand_cost=4
    )
    assert cost_bases(negation) == {
        "billed_cost": -4, "effective_cost": 0, "list_cost": 0, "net_cost": 0,
    }  # fmt: skip
    fee = CurLine(
        line_item_type="SavingsPlanRecurringFee", unblended_cost=3,
        savings_plan_total_commitment_to_date=3, savings_plan_used_commitment=Decimal("2.5"),
    )  # fmt: skip
    assert cost_bases(fee)["effective_cost"] == Decimal("0.5")
    discount = CurLine(line_item_type="PrivateRateDiscount", unblended_cost=Decimal("-0.1"))
    assert cost_bases(discount)["effective_cost"] == Decimal("-0.1")
    assert cost_bases(discount)["net_cost"] == 0
    usage = CurLine(unblended_cost=1, net_unblended_cost=Decimal("0.9"))
    assert cost_bases(usage)["net_cost"] == Decimal("0.9")
    assert cost_bases(CurLine(line_item_type="Tax", unblended_cost=2))["list_cost"] == 0


def test_split_gives_the_remainder_to_the_largest_slice() -> None:
    slices = split(Decimal("0.1"), [Fraction(1), Fraction(1), Fraction(1)])
    assert slices == [Decimal("0.0333333334"), Decimal("0.0333333333"), Decimal("0.0333333333")]
    assert sum(slices) == Decimal("0.1")


@pytest.mark.parametrize(
    ("world", "export"),
    [
        ("aws", "aws/exports/runcost-cur/data/BILLING_PERIOD=2026-10/*.parquet"),
        ("aws-csv", "aws/exports/runcost-cur/data/BILLING_PERIOD=2026-10/*.csv.gz"),
        ("gcp", "gcp/ndjson/*"),
    ],
)
def test_scenario_command_writes_each_bundled_world(
    tmp_path: Path, world: str, export: str
) -> None:
    from click.testing import CliRunner

    from pipeline.cli import main

    result = CliRunner().invoke(main, ["scenario", str(tmp_path / world), "--world", world])
    assert result.exit_code == 0, result.output
    assert sorted((tmp_path / world).glob(export)), f"no {export} in the {world} world"
    assert (tmp_path / world / "runcost.toml").is_file()
    assert (tmp_path / world / "expected" / "attempt_costs.csv").is_file()
