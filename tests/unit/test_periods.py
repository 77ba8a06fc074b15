"""[estimates], [invoices], [periods], snapshot retention, --as-of lookup and the invoice file."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from pipeline.common.errors import ConfigError, InputError, RuncostError
from pipeline.config.loader import parse_config
from pipeline.config.periods import EstimatePrice
from pipeline.run.as_of import resolve_pair, snapshot_as_of
from pipeline.run.invoices import read_invoices
from pipeline.warehouse.snapshots import CURRENT_NAME, SNAPSHOT_RECORD, kept_snapshots, prune


def test_period_settings_defaults(tmp_path: Path) -> None:
    settings = parse_config({}, base=tmp_path).periods
    assert settings.prices == ()
    assert settings.invoice_file is None
    assert settings.gcp_settle_days == 3
    assert settings.snapshot_retention_days == 35


def test_period_settings_full(tmp_path: Path) -> None:
    config = parse_config(
        {
            "warehouse": {"snapshot_retention_days": 90},
            "periods": {"gcp_settle_days": 5},
            "invoices": {"file": "billing/invoices.csv"},
            "estimates": {
                "prices": [
                    {
                        "instance_type": "p5.48xlarge",
                        "region": "us-east-1",
                        "price_per_hour": 55.04,
                        "currency": "USD",
                    }
                ]
            },
        },
        base=tmp_path,
    )
    settings = config.periods
    assert settings.snapshot_retention_days == 90
    assert settings.gcp_settle_days == 5
    assert settings.invoice_file == (tmp_path / "billing" / "invoices.csv").resolve()
    # a TOML float is read through its text: exactly 55.04, not 55.0399999...
    assert settings.prices == (EstimatePrice("p5.48xlarge", "us-east-1", Decimal("55.04"), "USD"),)


def test_prices_change_the_fingerprint(tmp_path: Path) -> None:
    price = {"instance_type": "g5.xlarge", "region": "us-east-1", "currency": "USD"}
    one = parse_config({"estimates": {"prices": [{**price, "price_per_hour": 1}]}}, tmp_path)
    two = parse_config({"estimates": {"prices": [{**price, "price_per_hour": 2}]}}, tmp_path)
    invoices = parse_config({"invoices": {"file": "x.csv"}}, tmp_path)
    assert one.fingerprint() != two.fingerprint()
    # the invoice file is checked against, it does not change any cost
    assert invoices.fingerprint() == parse_config({}, tmp_path).fingerprint()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"periods": {"gcp_settle_days": -1}},
            "periods.gcp_settle_days must be a whole number of days, 0 or more",
        ),
        (
            {"warehouse": {"snapshot_retention_days": "a week"}},
            "warehouse.snapshot_retention_days must be a whole number of days, 0 or more",
        ),
        ({"invoices": {"file": ""}}, 'invoices.file must be a file name, such as "invoices.csv"'),
        ({"invoices": {"path": "x"}}, "unknown key invoices.path; allowed in [invoices]: file"),
        (
            {"estimates": {"prices": [{"instance_type": "g5.xlarge"}]}},
            "estimates.prices[1]: needs exactly instance_type, region, price_per_hour and "
            "currency; found instance_type",
        ),
        (
            {
                "estimates": {
                    "prices": [
                        {
                            "instance_type": "g5.xlarge",
                            "region": "us-east-1",
                            "price_per_hour": -1,
                            "currency": "USD",
                        }
                    ]
                }
            },
            "estimates.prices[1]: price_per_hour must be 0 or more, not -1",
        ),
        (
            {
                "estimates": {
                    "prices": [
                        {
                            "instance_type": "g5.xlarge",
                            "region": "us-east-1",
                            "price_per_hour": "cheap",
                            "currency": "USD",
                        }
                    ]
                }
            },
            "estimates.prices[1]: price_per_hour 'cheap' is not a number",
        ),
    ],
)
def test_bad_period_settings_name_the_key(tmp_path: Path, data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(data, base=tmp_path)
    assert message in str(error.value)


def test_a_price_listed_twice_is_refused(tmp_path: Path) -> None:
    price = {
        "instance_type": "g5.xlarge",
        "region": "us-east-1",
        "price_per_hour": 1,
        "currency": "USD",
    }
    with pytest.raises(ConfigError) as error:
        parse_config({"estimates": {"prices": [price, price]}}, base=tmp_path)
    assert "estimates.prices[2]: g5.xlarge in us-east-1 is priced twice; keep one row" in str(
        error.value
    )


def test_read_invoices(tmp_path: Path) -> None:
    path = tmp_path / "invoices.csv"
    path.write_text("invoice_id,amount,currency\nINV-1, 154.8841 ,usd\n", encoding="utf-8")
    assert read_invoices(path) == [("INV-1", Decimal("154.8841"), "USD", 2)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("invoice,amount\nINV-1,1\n", "missing column(s) invoice_id, currency"),
        (
            "invoice_id,amount,currency\nINV-1,$1.00,USD\n",
            "row 2: amount '$1.00' of invoice INV-1 is not a number; write it like 1234.56",
        ),
        (
            "invoice_id,amount,currency\nINV-1,1,USD\nINV-1,2,USD\n",
            "row 3: invoice INV-1 is listed again (first on row 2); keep one row per invoice",
        ),
        ("invoice_id,amount,currency\n,1,USD\n", "row 2: invoice_id and currency must be filled"),
    ],
)
def test_bad_invoice_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "invoices.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_invoices(path)
    assert str(error.value).startswith(f"{path}: {message}")


def test_a_missing_invoice_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as error:
        read_invoices(tmp_path / "nope.csv")
    assert "no such invoice file; fix invoices.file in runcost.toml or remove it" in str(
        error.value
    )


def _snapshot(warehouse: Path, run_id: str, published: datetime) -> Path:
    folder = warehouse / "snapshots" / run_id
    folder.mkdir(parents=True)
    record = {"run_id": run_id, "published_at": published.isoformat(), "tables": {}}
    (folder / SNAPSHOT_RECORD).write_text(json.dumps(record), encoding="utf-8")
    return folder


def _day(day: int, hour: int = 6) -> datetime:
    return datetime(2026, 10, day, hour, tzinfo=UTC)


def test_as_of_reads_the_snapshot_current_at_the_end_of_the_day(tmp_path: Path) -> None:
    _snapshot(tmp_path, "20261002T060000000000Z-aaaaaa", _day(2))
    _snapshot(tmp_path, "20261003T060000000000Z-bbbbbb", _day(3))
    _snapshot(tmp_path, "20261003T230000000000Z-cccccc", _day(3, 23))
    _snapshot(tmp_path, "20261005T060000000000Z-dddddd", _day(5))
    assert snapshot_as_of(tmp_path, date(2026, 10, 2)).name.endswith("aaaaaa")
    assert snapshot_as_of(tmp_path, date(2026, 10, 3)).name.endswith("cccccc")
    assert snapshot_as_of(tmp_path, date(2026, 10, 4)).name.endswith("cccccc")
    assert snapshot_as_of(tmp_path, date(2026, 12, 1)).name.endswith("dddddd")


def test_as_of_before_the_first_kept_snapshot(tmp_path: Path) -> None:
    _snapshot(tmp_path, "20261002T060000000000Z-aaaaaa", _day(2))
    with pytest.raises(RuncostError) as error:
        snapshot_as_of(tmp_path, date(2026, 10, 1))
    assert str(error.value) == (
        "no kept snapshot was current at the end of 2026-10-01 (UTC): the oldest kept snapshot "
        "is 20261002T060000000000Z-aaaaaa, published 2026-10-02T06:00:00+00:00; pass --as-of "
        "2026-10-02 or later (a snapshot is kept warehouse.snapshot_retention_days days after "
        "the next one replaces it)"
    )


def test_retention_keeps_what_was_current_within_the_window(tmp_path: Path) -> None:
    snapshots = tmp_path / "snapshots"
    names = [f"202610{day:02d}T060000000000Z-{day:06d}" for day in (1, 2, 3, 20, 21)]
    for day, name in zip((1, 2, 3, 20, 21), names, strict=True):
        _snapshot(tmp_path, name, _day(day))
    # day 1 and 2 were replaced more than 10 days before the 25th; day 3 on the 20th
    prune(snapshots, keep=2, current=names[-1], retention_days=10, now=_day(25))
    assert sorted(path.name for path in snapshots.iterdir()) == names[2:]
    # retention 0: the current one and the newest other, as before
    prune(snapshots, keep=2, current=names[-1], retention_days=0, now=_day(25))
    assert sorted(path.name for path in snapshots.iterdir()) == names[3:]


def test_kept_snapshots_fall_back_to_the_run_id_time(tmp_path: Path) -> None:
    folder = tmp_path / "snapshots" / "20261004T120000000000Z-eeeeee"
    folder.mkdir(parents=True)
    assert kept_snapshots(tmp_path / "snapshots") == [(folder, _day(4, 12))]


def test_diff_pairs_default_to_the_current_and_the_one_before(tmp_path: Path) -> None:
    first = _snapshot(tmp_path, "20261002T060000000000Z-aaaaaa", _day(2))
    second = _snapshot(tmp_path, "20261003T060000000000Z-bbbbbb", _day(3))
    (tmp_path / CURRENT_NAME).write_text(
        json.dumps({"run_id": second.name, "snapshot": str(second)}), encoding="utf-8"
    )
    assert resolve_pair(tmp_path, None, None) == (first, second)
    assert resolve_pair(tmp_path, "20261002", "20261003") == (first, second)
    with pytest.raises(RuncostError) as error:
        resolve_pair(tmp_path, "2026", None)
    assert str(error.value).startswith("2026: more than one kept snapshot has this run id")
    with pytest.raises(RuncostError) as error:
        resolve_pair(tmp_path, None, first.name)
    assert str(error.value).startswith(
        f"snapshot {first.name} is the oldest kept snapshot: there is nothing to compare it with"
    )
