"""FOCUS files through the nightly run: exact totals, reconciliation, attribution, round trip."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from focus_world import (
    ORACLE_GPU,
    ORACLE_NODE,
    SPLIT_NODE,
    allocated_rows,
    csv_totals,
    mixed_rows,
    row,
    write_focus_world,
    write_mixed_csv,
)

from pipeline import scenario
from pipeline.common.errors import CheckFailed, InputError
from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.warehouse.snapshots import open_database

TOTALS = (
    "select provider, billing_account_id, billing_period, billing_currency, "
    "sum(billed_cost), sum(effective_cost), sum(list_cost), count(*) "
    "from normalized.cost_lines group by all order by all"
)


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, duckdb.DuckDBPyConnection]]:
    folder = tmp_path_factory.mktemp("focus-world")
    result = run_pipeline(load_config(write_focus_world(folder)))
    con = open_database(result.database)
    yield folder, con
    con.close()


def parquet_totals(path: Path) -> dict[tuple[str, str, str, str], list[Decimal]]:
    totals: dict[tuple[str, str, str, str], list[Decimal]] = {}
    for line in pq.read_table(path).to_pylist():
        key = (
            line["ProviderName"].lower(),
            line["BillingAccountId"],
            line["BillingPeriodStart"].strftime("%Y-%m"),
            line["BillingCurrency"],
        )
        sums = totals.setdefault(key, [Decimal(0)] * 4)
        for index, name in enumerate(("BilledCost", "EffectiveCost", "ListCost")):
            sums[index] += line[name]
        sums[3] += 1
    return totals


def test_totals_per_provider_and_period_equal_the_files_own_sums(world) -> None:
    folder, con = world
    expected = csv_totals(folder / "focus" / "mixed" / "focus_2026.csv")
    expected |= parquet_totals(folder / "focus" / "azure-1.2" / "part-00001.parquet")
    got = {row[:4]: [*row[4:7], Decimal(row[7])] for row in con.execute(TOTALS).fetchall()}
    assert got == expected
    assert {key[0] for key in got} == {"aws", "microsoft", "oracle"}
    assert got[("microsoft", "ms-ba-1", "2026-10", "EUR")] == [Decimal("4.2")] * 3 + [1]


def test_the_bill_reconciles_exactly(world) -> None:
    _folder, con = world
    rows = con.execute(
        "select provider, billing_period, billing_currency, cost_basis, bill_total, difference "
        "from marts.reconciliation"
    ).fetchall()
    assert len(rows) == 6 * 4 * 2  # (provider, account, period, currency) x bases x models
    assert {row[5] for row in rows} == {Decimal(0)}
    net = con.execute(
        "select sum(net_cost) = sum(effective_cost) from normalized.cost_lines"
    ).fetchone()
    assert net == (True,)  # FOCUS has no net column: net is EffectiveCost


def test_each_rows_tags_and_period_are_its_own(world) -> None:
    """A row's tags are its Tags JSON as a map (a valueless key and a number as their text, no
    Tags an empty map) and its period is its BillingPeriodStart's month, though both are
    computed once per distinct text and period and joined back (staging.focus_cost_lines)."""
    folder, con = world
    sources = [(line["BillingPeriodStart"][:7], line["Tags"]) for line in mixed_rows()]
    for line in pq.read_table(folder / "focus" / "azure-1.2" / "part-00001.parquet").to_pylist():
        sources.append((f"{line['BillingPeriodStart']:%Y-%m}", line["Tags"] or "NULL"))
    expected = Counter(
        (
            period,
            tuple(
                sorted(
                    (key, value if isinstance(value, str) else json.dumps(value))
                    for key, value in (json.loads(tags) if tags != "NULL" else {}).items()
                )
            ),
        )
        for period, tags in sources
    )
    got = Counter(
        (period, tuple(sorted(tags.items())))
        for period, tags in con.execute(
            "select billing_period, tags from normalized.cost_lines"
        ).fetchall()
    )
    assert got == expected
    assert (
        "2026-10",
        (("spot", "true"), ("user_attempt_id", "att-2"), ("user_experiment_id", "exp-b")),
    ) in got
    assert got[("2026-10", ())] > 1  # rows without Tags, in both files


def test_tagged_focus_rows_land_on_their_attempts(world) -> None:
    _folder, con = world
    costs = dict(
        con.execute(
            "select attempt_id, billed_cost from marts.attempt_costs "
            "where allocation_model = 'marginal'"
        ).fetchall()
    )
    # att-1: the AWS GPU hour and its volume; att-2: the Azure VM (CSV) and the ML row (Parquet)
    assert costs["att-1"] == Decimal("32.7726") + Decimal("0.1344")
    assert costs["att-2"] == Decimal("3.06") + Decimal("12.3456789012")
    # att-3 held the untagged Oracle instance during its charge hour
    assert costs["att-3"] == Decimal("2.95")
    methods = con.execute(
        "select cost_lines.provider, attributions.attribution_method, attributions.attempt_id, "
        "attributions.confidence "
        "from allocation.cost_allocations as attributions "
        "join normalized.cost_lines as cost_lines using (line_id) "
        "where attributions.allocation_model = 'marginal' "
        "and attributions.allocation_kind = 'attributed' "
        "and attributions.attempt_id is not null order by all"
    ).fetchall()
    assert methods == [
        ("aws", "tag", "att-1", "billed"),
        ("aws", "tag", "att-1", "billed"),
        ("microsoft", "tag", "att-2", "billed"),
        ("microsoft", "tag", "att-2", "billed"),
        ("oracle", "resource_time", "att-3", "estimated"),
    ]


def test_a_bad_focus_file_publishes_nothing(tmp_path: Path) -> None:
    config = write_focus_world(tmp_path)
    broken = [row("AWS", 10), row("AWS", 10, ChargePeriodEnd="yesterday")]
    write_mixed_csv(tmp_path / "focus" / "mixed" / "focus_2026.csv", broken)
    with pytest.raises(InputError, match=r"row 2 \(after the header\), column ChargePeriodEnd"):
        run_pipeline(load_config(config))
    assert not (tmp_path / "warehouse" / "snapshots").exists() or not any(
        (tmp_path / "warehouse" / "snapshots").iterdir()
    )
    assert list((tmp_path / "warehouse").rglob("delivery.json")) == []


def test_charge_frequency_is_published_in_the_specs_spelling(tmp_path: Path) -> None:
    """chargefrequency.md: a file's own spelling (`Usage-based`, `recurring`) is published as
    one of the spec's values, `One-Time`, `Recurring` or `Usage-Based`."""
    config = write_focus_world(tmp_path)
    spelled = [
        row("AWS", 10, ChargeFrequency="Usage-based"),
        row("AWS", 10, ChargeCategory="Purchase", ChargeFrequency="recurring"),
        row("AWS", 10, ChargeCategory="Tax", ChargeFrequency=" one-time "),
    ]
    write_mixed_csv(tmp_path / "focus" / "mixed" / "focus_2026.csv", spelled)
    con = open_database(run_pipeline(load_config(config)).database)
    published = con.execute(
        "select ChargeCategory, ChargeFrequency from normalized.focus "
        "where ProviderName = 'AWS' order by all"
    ).fetchall()
    con.close()
    assert published == [
        ("Purchase", "Recurring"),
        ("Tax", "One-Time"),
        ("Usage", "Usage-Based"),
    ]


def test_normalized_focus_round_trips_as_a_focus_source(tmp_path: Path) -> None:
    aws = run_pipeline(load_config(scenario.write_scenario(tmp_path / "aws")))
    exported = tmp_path / "export" / "normalized_focus.csv"
    exported.parent.mkdir()
    con = open_database(aws.database)
    con.execute(f"copy (select * from normalized.focus) to '{exported}' (header)")
    # what the export says in FOCUS terms (its ListCost is FOCUS's, an unused commitment a row)
    before = con.execute(
        "select lines.provider, lines.billing_account_id, lines.billing_period, "
        "lines.billing_currency, sum(focus.BilledCost), sum(focus.EffectiveCost), "
        "sum(focus.ListCost), count(*) from normalized.focus as focus "
        "join normalized.cost_lines as lines on focus.x_LineId = lines.line_id "
        "group by all order by all"
    ).fetchall()
    tagged_before = con.execute(
        "select attempt_tag, sum(billed_cost) from normalized.cost_lines group by 1 order by 1"
    ).fetchall()
    con.close()

    config = tmp_path / "focus.toml"
    config.write_text(
        '[warehouse]\npath = "focus-warehouse"\n\n'
        '[focus]\nfiles = ["export/normalized_focus.csv"]\n\n'
        '[telemetry]\npath = "aws/telemetry"\n',
        encoding="utf-8",
    )
    again = run_pipeline(load_config(config))
    con = open_database(again.database)
    after = con.execute(TOTALS).fetchall()
    tagged_after = con.execute(
        "select attempt_tag, sum(billed_cost) from normalized.cost_lines group by 1 order by 1"
    ).fetchall()
    differences = con.execute(
        "select count(*) from marts.reconciliation where difference <> 0"
    ).fetchone()
    con.close()
    assert before and after == before
    assert tagged_after == tagged_before
    assert differences == (0,)


def _recorded_versions(folder: Path) -> dict[str, list[str]]:
    """Each FOCUS source's recorded versions (its deliveries' delivery.json)."""
    found: dict[str, list[str]] = {}
    for record in (folder / "warehouse" / "raw" / "focus").rglob("delivery.json"):
        body = json.loads(record.read_text(encoding="utf-8"))
        found.setdefault(body["export"], []).extend(body["focus_versions"])
    return found


@pytest.mark.parametrize("with_provider_name", [True, False], ids=["ProviderName", "without"])
def test_focus_1_3_allocated_rows_land_where_their_allocation_says(
    tmp_path: Path, with_provider_name: bool
) -> None:
    """data_generator_calculated_split_cost_allocation_handling.md (1.3): allocated charges
    replace their origin and sum to it. The two $1.50 halves of one $3.00 instance-hour land on
    the attempts their AllocatedTags name (over the origin's Tags, which name another); the
    Oracle node-hour allocated to att-3's instance (AllocatedResourceId) is placed by resource
    and time; the bill reconciles exactly and the 1.2 file beside it reads as before."""
    config = write_focus_world(tmp_path)
    write_mixed_csv(
        tmp_path / "focus" / "mixed" / "focus_2026.csv", allocated_rows(with_provider_name)
    )
    con = open_database(run_pipeline(load_config(config)).database)
    costs = con.execute(
        "select attempt_id, billed_cost, effective_cost from marts.attempt_costs "
        "where allocation_model = 'marginal' order by all"
    ).fetchall()
    half, azure = Decimal("1.5"), Decimal("12.3456789012")
    assert costs == [
        ("att-1", half, half),
        ("att-2", half + azure, half + Decimal(11)),
        ("att-3", Decimal("2.95"), Decimal("2.95")),
    ]
    placed = con.execute(
        "select lines.resource_id, lines.attempt_tag, slices.attribution_method, "
        "slices.attempt_id, slices.billed_cost "
        "from allocation.cost_allocations as slices "
        "join normalized.cost_lines as lines using (line_id) "
        "where slices.allocation_model = 'marginal' and lines.allocated_method_id is not null "
        "order by all"
    ).fetchall()
    assert placed == [
        (ORACLE_GPU, None, "resource_time", "att-3", Decimal("2.95")),
        ("pod/train-a", "att-1", "tag", "att-1", half),
        ("pod/train-b", "att-2", "tag", "att-2", half),
    ]
    bill = con.execute(
        "select provider, sum(billed_cost), count(*) from normalized.cost_lines "
        "where allocated_method_id is not null group by all order by all"
    ).fetchall()
    assert bill == [("aws", Decimal("3.00"), 2), ("oracle", Decimal("2.95"), 1)]
    assert con.execute(
        "select count(*), count(*) filter (where difference <> 0) from marts.reconciliation"
    ).fetchone() == (3 * 4 * 2, 0)  # (provider, account, period, currency) x bases x models
    published = con.execute(
        "select ProviderName, ServiceProviderName, HostProviderName, ResourceId, "
        "AllocatedResourceId, AllocatedResourceName, AllocatedMethodId, "
        "AllocatedTags->>'user_attempt_id', Tags->>'user_attempt_id', "
        "AllocatedMethodDetails->'Elements'->0->>'AllocatedRatio', "
        "ContractApplied->'ContractApplied'->0->>'ContractCommitmentID' "
        "from normalized.focus where x_SourceFormat = 'focus' order by all"
    ).fetchall()
    assert published == [
        ("AWS", "AWS", "AWS", SPLIT_NODE, "pod/train-a", "train-a", "aws:eks-split-cost",
         "att-1", "att-origin", "0.5", None),
        ("AWS", "AWS", "AWS", SPLIT_NODE, "pod/train-b", "train-b", "aws:eks-split-cost",
         "att-2", "att-origin", "0.5", None),
        ("Microsoft", None, None, "/subscriptions/s2/ml/cluster-1", None, None, None, None,
         "att-2", None, None),
        ("Microsoft", None, None, None, None, None, None, None, None, None, None),
        ("Oracle", "Oracle", "Oracle", ORACLE_NODE, ORACLE_GPU, None, "oci:node-pool", None,
         None, None, "c-1"),
    ]  # fmt: skip
    con.close()
    assert _recorded_versions(tmp_path) == {"mixed": ["1.3"], "azure": ["1.2"]}


def test_allocated_tags_that_are_not_a_json_object_publish_nothing(tmp_path: Path) -> None:
    config = write_focus_world(tmp_path)
    rows = allocated_rows()
    rows[1]["AllocatedTags"] = "user_attempt_id=att-2"
    write_mixed_csv(tmp_path / "focus" / "mixed" / "focus_2026.csv", rows)
    with pytest.raises(InputError) as error:
        run_pipeline(load_config(config))
    message = str(error.value)
    assert "\n" not in message
    assert message.endswith(
        "focus_2026.csv: row 2 (after the header), column AllocatedTags: "
        '\'user_attempt_id=att-2\' is not a JSON object such as {"team": "ml"}; '
        "fix the value in the export"
    )
    assert not (tmp_path / "warehouse" / "snapshots").exists() or not any(
        (tmp_path / "warehouse" / "snapshots").iterdir()
    )
    assert list((tmp_path / "warehouse").rglob("delivery.json")) == []


def test_an_origin_charge_kept_beside_its_allocated_rows_fails_the_run(tmp_path: Path) -> None:
    """Allocated charges replace their origin (1.3): a file that also keeps the origin row would
    bill the instance-hour twice, so checks.focus_origin_counted_once fails and names the row."""
    config = write_focus_world(tmp_path)
    rows = allocated_rows()
    origin = dict(rows[0]) | {
        "BilledCost": "3.0000000000", "EffectiveCost": "3.0000000000", "ListCost": "3.0000000000",
        "ConsumedQuantity": "1", "PricingQuantity": "1", "AllocatedMethodId": "NULL",
        "AllocatedMethodDetails": "NULL", "AllocatedResourceId": "NULL",
        "AllocatedResourceName": "NULL", "AllocatedTags": "NULL",
    }  # fmt: skip
    write_mixed_csv(tmp_path / "focus" / "mixed" / "focus_2026.csv", [*rows, origin])
    with pytest.raises(CheckFailed) as error:
        run_pipeline(load_config(config))
    assert [(name, rows) for name, _columns, rows, _total in error.value.failures] == [
        (
            "focus_origin_counted_once",
            [(
                error.value.failures[0][2][0][0], "focus_2026.csv", 4, SPLIT_NODE,
                datetime(2026, 10, 2, 10, tzinfo=UTC), datetime(2026, 10, 2, 11, tzinfo=UTC),
                Decimal("3.0000000000"), 2,
            )],
        )
    ]  # fmt: skip
    assert "nothing was published" in str(error.value)
    assert not (tmp_path / "warehouse" / "snapshots").exists() or not any(
        (tmp_path / "warehouse" / "snapshots").iterdir()
    )
