"""Bad GCP export files, BigQuery partitions, FOCUS files and telemetry after a published night:
`runcost run` stops with one error line naming file, row, column and value, raw/ and the
published snapshot stay as they were (readable), and a corrected input is read afresh."""

from __future__ import annotations

import csv
import json
import math
import shutil
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from bq_endpoint import BigQueryEndpoint
from click.testing import CliRunner
from gcp_export import DETAILED_SCHEMA, DETAILED_TABLE, export_row
from mixed_world import write_world
from test_refusals import one_error, world
from worlds import manifests, published_hashes, run_in_process

from pipeline.cli.app import main
from pipeline.config.loader import load_config


@pytest.fixture(scope="session")
def published(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A folder per provider ("gcp", "focus") whose first night was published, made once."""
    made: dict[str, Path] = {}

    def get(provider: str) -> Path:
        if provider not in made:
            folder = tmp_path_factory.mktemp(f"published-{provider}") / "world"
            assert run_in_process(write_world(folder, (provider,))) == "published"
            made[provider] = folder
        return made[provider]

    return get


def copy_of(published: Callable[[str], Path], provider: str, tmp_path: Path) -> Path:
    folder = tmp_path / "world"
    shutil.copytree(published(provider), folder, symlinks=True)
    return folder / "runcost.toml"


def raw_listing(warehouse: Path) -> list[str]:
    return sorted(str(path.relative_to(warehouse)) for path in (warehouse / "raw").rglob("*"))


def assert_refused(config: Path, *expected: str) -> str:
    """One failed `runcost run`: its error line holds ``expected``; nothing else changed."""
    warehouse = load_config(config).warehouse
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before, stored = published_hashes(warehouse), raw_listing(warehouse)
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1, result.output
    message = one_error(result.output)
    for text in expected:
        assert text in message, message
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before, "the previous snapshot is served whole"
    assert raw_listing(warehouse) == stored, "raw/ is unchanged"
    assert manifests(warehouse)[-1]["status"] == "failed"
    return message


def assert_fixed(config: Path) -> None:
    """After the operator restored the input, the run goes through with the first night's bill
    (the copied warehouse lives at another path, so config.periods may publish anew)."""
    assert run_in_process(config) in ("published", "unchanged"), "read afresh"
    runs = manifests(load_config(config).warehouse)
    assert runs[-1]["totals"] == runs[0]["totals"]


# --- gcp.files ---------------------------------------------------------------------------------


def edit_gcp_row(config: Path, changes: dict, file: int = 0, row: int = 1) -> Path:
    path = config.parent / "gcp" / f"billing-00000000000{file}.json"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[row].update(changes)
    path.write_text("".join(json.dumps(item) + "\n" for item in rows), encoding="utf-8")
    return path


GCP = {
    "nan": ({"cost": math.nan}, "row 2, column cost: 'nan' is refused"),
    "dollar sign": ({"cost": "$1.00"}, "row 2, column cost: '$1.00' is refused"),
    "1e27": ({"cost_at_list": 1e27}, "row 2, column cost_at_list: '1e+27' is refused"),
    "end before start": (
        {"usage_end_time": "2026-10-12 08:00:00 UTC"},
        "row 2, column usage_end_time: '2026-10-12 08:00:00+00' is refused",
    ),
    "unparseable time": ({"export_time": "soon"}, "row 2, column export_time: 'soon' is refused"),
    "empty currency": ({"currency": ""}, "row 2, column currency: '' is refused"),
    "blank account": (
        {"billing_account_id": " "},
        "row 2, column billing_account_id: ' ' is refused",
    ),
}


@pytest.mark.parametrize("case", list(GCP), ids=list(GCP))
def test_a_bad_gcp_export_value_keeps_the_snapshot(published, tmp_path: Path, case: str):
    config = copy_of(published, "gcp", tmp_path)
    original = (config.parent / "gcp" / "billing-000000000000.json").read_text(encoding="utf-8")
    changes, expected = GCP[case]
    path = edit_gcp_row(config, changes)
    assert_refused(config, f"error: {path}: {expected}; it must be ", "read afresh")
    path.write_text(original, encoding="utf-8")  # the operator re-extracts the file
    assert_fixed(config)


def test_a_copied_gcp_row_or_file_or_a_lost_file_keeps_the_snapshot(published, tmp_path: Path):
    config = copy_of(published, "gcp", tmp_path)
    first = config.parent / "gcp" / "billing-000000000000.json"
    original = first.read_text(encoding="utf-8")
    first.write_text(original + original.splitlines(keepends=True)[0], encoding="utf-8")
    assert_refused(config, f"error: {first}: row 5 repeats row 1: every column is equal")
    first.write_text(original, encoding="utf-8")

    copy = first.with_name("billing-000000000009.json")
    shutil.copyfile(first, copy)
    assert_refused(config, f"error: {copy}: has exactly the content of {first}")
    copy.unlink()

    second = first.with_name("billing-000000000001.json")
    kept = second.read_bytes()
    second.unlink()  # the final day 2026-10-12 loses 3 of its 7 rows
    assert_refused(
        config,
        "of gcp partition day 2026-10-12 holds 4 lines (43% fewer), but the current final ",
        "run once with `runcost run --allow-shrink 2026-10-12`",
    )
    second.write_bytes(kept)
    assert_fixed(config)


# --- FOCUS -------------------------------------------------------------------------------------


def edit_focus_row(config: Path, changes: dict[str, str]) -> Path:
    path = config.parent / "focus" / "mixed" / "focus_2026.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[1].update(changes)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


FOCUS = {
    "nan": ({"BilledCost": "NaN"}, "column BilledCost: 'NaN' is refused"),
    "dollar sign": ({"EffectiveCost": "$1.00"}, "column EffectiveCost: '$1.00' is refused"),
    "1e27": ({"ListCost": "1e27"}, "column ListCost: '1e27' is refused"),
    "end before start": (
        {"ChargePeriodEnd": "2026-10-01 00:00:00"},
        "column ChargePeriodEnd: '2026-10-01 00:00:00+00' is refused",
    ),
    "unparseable time": (
        {"ChargePeriodStart": "10/12/2026"},
        "column ChargePeriodStart: '10/12/2026' is not an ISO 8601 UTC date-time",
    ),
    "blank currency": ({"BillingCurrency": " "}, "column BillingCurrency: ' ' is refused"),
    "blank account": ({"BillingAccountId": "  "}, "column BillingAccountId: '  ' is refused"),
}


@pytest.mark.parametrize("case", list(FOCUS), ids=list(FOCUS))
def test_a_bad_focus_value_keeps_the_snapshot(published, tmp_path: Path, case: str):
    config = copy_of(published, "focus", tmp_path)
    path = config.parent / "focus" / "mixed" / "focus_2026.csv"
    original = path.read_bytes()
    changes, expected = FOCUS[case]
    edit_focus_row(config, changes)
    assert_refused(config, f"error: {path}: row 2 (after the header), {expected}")
    path.write_bytes(original)
    assert_fixed(config)


def test_a_copied_focus_file_keeps_the_snapshot(published, tmp_path: Path):
    config = copy_of(published, "focus", tmp_path)
    path = config.parent / "focus" / "mixed" / "focus_2026.csv"
    copy = path.with_name("focus_2026 (1).csv")
    shutil.copyfile(path, copy)
    assert_refused(config, f"error: {path}: has exactly the content of {copy}")


# --- gcp.tables (the real BigQuery client, the local endpoint) ---------------------------------

OLD_DAY = date(2026, 10, 5)  # invoice month 2026-10 closed and settled: the partition is final


def bigquery_world(tmp_path: Path, endpoint: BigQueryEndpoint) -> Path:
    endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    rows = [export_row(OLD_DAY, hour, f"1.{hour}") for hour in range(10)]
    endpoint.insert_rows(DETAILED_TABLE, rows, OLD_DAY)
    config = tmp_path / "runcost.toml"
    config.write_text(
        f'[warehouse]\npath = "warehouse"\n\n[gcp]\ntables = ["{DETAILED_TABLE}"]\n'
        f'api_endpoint = "{endpoint.url}"\nstart_date = "{OLD_DAY}"\n',
        encoding="utf-8",
    )
    assert run_in_process(config) == "published"
    return config


def test_a_bad_bigquery_partition_keeps_the_snapshot(tmp_path: Path, bq_endpoint):
    config = bigquery_world(tmp_path, bq_endpoint)
    partition = f"{DETAILED_TABLE}${OLD_DAY:%Y%m%d}"
    bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(OLD_DAY, 12, "nan")], OLD_DAY)
    assert_refused(config, f"error: {partition}: row ", ", column cost: 'nan' is refused")

    bq_endpoint.drop_partition(DETAILED_TABLE, OLD_DAY)
    copied = [export_row(OLD_DAY, hour, f"1.{hour}") for hour in (*range(10), 3)]
    bq_endpoint.insert_rows(DETAILED_TABLE, copied, OLD_DAY)
    assert_refused(config, f"error: {partition}: row ", "every column is equal")

    bq_endpoint.drop_partition(DETAILED_TABLE, OLD_DAY)
    rows = [export_row(OLD_DAY, hour, f"1.{hour}") for hour in range(6)]
    bq_endpoint.insert_rows(DETAILED_TABLE, rows, OLD_DAY)
    assert_refused(
        config,
        f"partition {OLD_DAY} holds 6 lines (40% fewer), but the current final delivery ",
        f"run once with `runcost run --allow-shrink {OLD_DAY}`",
    )
    assert datetime.now(UTC).date() - OLD_DAY > timedelta(days=3), "the partition is settled"


# --- telemetry ---------------------------------------------------------------------------------


def test_a_nan_vcpu_count_is_refused_at_telemetry_load(tmp_path: Path, template: Path):
    config, _warehouse = world(tmp_path, template)
    path = config.parent / "telemetry" / "attempt_resources.csv"
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[1].endswith(",8,96.0,1152.0")  # row 1: att-llm-01's instance
    path.write_text(text.replace(",8,96.0,1152.0", ",8,NaN,1152.0", 1), encoding="utf-8")
    message = assert_refused(config, f"error: {path}: row 1, column vcpu_count: 'NaN' is not a ")
    assert "pool_driver_weights" not in message


def test_allow_shrink_lets_a_gcp_day_shrink_once(published, tmp_path: Path):
    config = copy_of(published, "gcp", tmp_path)
    (config.parent / "gcp" / "billing-000000000001.json").unlink()
    allowed = ["run", "--config", str(config), "--allow-shrink", "2026-10-12"]
    result = CliRunner().invoke(main, allowed)
    assert result.exit_code == 0, result.output
