"""FOCUS file ingest: versions, the quirks of real files, deliveries in raw/focus, bad input."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from focus_world import HEADER_1_0, row, write_azure_parquet, write_mixed_csv

from pipeline.common.errors import ConfigError, InputError
from pipeline.config.loader import Config, parse_config
from pipeline.ingest.focus import read as focus_read
from pipeline.ingest.focus.files import ingest_focus_files
from pipeline.ingest.focus.raw import register_focus
from pipeline.warehouse.raw_store import DELIVERY_FILE, Delivery


def config(tmp_path: Path, *files: object) -> Config:
    return parse_config({"focus": {"files": list(files)}}, base=tmp_path)


def raw_rows(con_deliveries, sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("create schema raw")
    register_focus(con, con_deliveries)
    return con.execute(sql).fetchall()


def recorded_versions(delivery: Delivery) -> list[str]:
    """The FOCUS versions a stored delivery records (its delivery.json)."""
    return json.loads((delivery.folder / DELIVERY_FILE).read_text(encoding="utf-8"))[
        "focus_versions"
    ]


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_nothing_stored(tmp_path: Path) -> None:
    stored = list((tmp_path / "warehouse" / "raw" / "focus").rglob("delivery.json"))
    assert stored == []


# --- versions and quirks -------------------------------------------------------------------


def test_the_sample_layout_reads_as_focus_1_0_split_by_billing_period(tmp_path: Path) -> None:
    write_mixed_csv(tmp_path / "focus" / "sample.csv")
    deliveries = ingest_with(ingest_focus_files, config(tmp_path, "focus/sample.csv"))
    assert [(item.provider, item.export, item.billing_period) for item in deliveries] == [
        ("focus", "sample", "2026-09"),
        ("focus", "sample", "2026-10"),
    ]
    assert all(item.new for item in deliveries)
    rows = raw_rows(
        deliveries,
        'select "ProviderName", count(*), sum("BilledCost"), min(source_line), '
        "min(source_file) from raw.focus_billing group by 1 order by 1",
    )
    assert rows == [
        ("AWS", 8, Decimal("44.663000800000000000"), 0, "sample.csv"),
        ("Microsoft", 3, Decimal("7.260007640700000000"), 8, "sample.csv"),
        ("Oracle", 3, Decimal("3.180000000000000000"), 11, "sample.csv"),
    ]
    # NULL text is NULL, the space-separated time is UTC, 8E-7 is exact, Tags is kept as JSON
    first = raw_rows(
        deliveries,
        'select "ChargeClass", "ChargePeriodStart", "Tags"->>\'user_attempt_id\', "ResourceId" '
        "from raw.focus_billing where source_line = 0",
    )
    assert str(first[0][1]) == "2026-10-02 10:00:00+00:00"
    assert (first[0][0], first[0][2], first[0][3]) == (None, "att-1", "i-0gpu0001")
    sqs = raw_rows(deliveries, 'select "BilledCost" from raw.focus_billing where source_line = 3')
    assert sqs == [(Decimal("0.000000800000000000"),)]
    meta = pq.read_schema(deliveries[1].files[0])
    assert "Id" in meta.names  # extra columns stay in raw/, untouched
    assert meta.field("BilledCost").type == pa.decimal128(38, 18)


@pytest.mark.parametrize(
    ("extra", "version"),
    [
        ({}, "1.0"),
        ({"SkuMeter": "GPU"}, "1.1"),
        ({"SkuMeter": "x", "InvoiceId": "I-1"}, "1.2"),
        ({"InvoiceId": "I-1", "AllocatedMethodId": "NULL", "ServiceProviderName": "AWS"}, "1.3"),
    ],
)
def test_the_version_is_detected_from_the_columns(tmp_path: Path, extra, version, caplog) -> None:
    line = row("AWS", 10, BilledCost="1.5", EffectiveCost="1.5", ListCost="1.5") | extra
    write_mixed_csv(tmp_path / "f.csv", [line])
    caplog.set_level("INFO", logger="runcost")
    (delivery,) = ingest_with(ingest_focus_files, config(tmp_path, "f.csv"))
    assert f"FOCUS {version}, 1 rows" in caplog.text
    invoice = raw_rows([delivery], 'select "InvoiceId" from raw.focus_billing')
    assert invoice == [("I-1" if version in ("1.2", "1.3") else None,)]
    assert recorded_versions(delivery) == [version]


def test_a_1_3_file_names_its_provider_in_service_provider_name(tmp_path: Path) -> None:
    """FOCUS 1.3 deprecates ProviderName for ServiceProviderName: a 1.3 file without it is read
    with ServiceProviderName as its ProviderName; HostProviderName is read as delivered."""
    line = row("AWS", 10, ServiceProviderName="Acme GPU Cloud", HostProviderName="AWS")
    del line["ProviderName"]
    write_mixed_csv(tmp_path / "f.csv", [line])
    (delivery,) = ingest_with(ingest_focus_files, config(tmp_path, "f.csv"))
    got = raw_rows(
        [delivery],
        'select "ProviderName", "ServiceProviderName", "HostProviderName" from raw.focus_billing',
    )
    assert got == [("Acme GPU Cloud", "Acme GPU Cloud", "AWS")]
    assert recorded_versions(delivery) == ["1.3"]


def test_older_names_and_other_spellings_are_read(tmp_path: Path) -> None:
    # 0.5/1.0-preview names, lower-case ids, a byte-order mark, T/Z and offset timestamps
    text = (
        "\ufeffbilledcost,AmortizedCost,ListCost,BillingAccountId,BillingCurrency,"
        "BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ChargeType,"
        "ProviderName,ServiceName,UsageQuantity,Region,Tags\n"
        "2.50,2.25,3,acc,USD,2026-10-01T00:00:00Z,2026-11-01T00:00:00.0000000Z,"
        "2026-10-05T03:00:00+02:00,2026-10-05T02:00:00Z,usage,Acme,Svc,1.5,eu-west-1,"
        '"{""k"": true}"\n'
    )
    write_text(tmp_path / "old.csv", text)
    (delivery,) = ingest_with(ingest_focus_files, config(tmp_path, "old.csv"))
    got = raw_rows(
        [delivery],
        'select "EffectiveCost", "ChargeCategory", "ConsumedQuantity", "RegionId", '
        '"ChargePeriodStart", "BillingPeriodEnd" from raw.focus_billing',
    )
    assert got[0][:4] == (Decimal("2.25"), "usage", Decimal("1.5"), "eu-west-1")
    assert str(got[0][4]) == "2026-10-05 01:00:00+00:00"
    assert str(got[0][5]) == "2026-11-01 00:00:00+00:00"


def test_typed_parquet_is_read_and_provider_name_can_be_set(tmp_path: Path) -> None:
    write_azure_parquet(tmp_path / "azure" / "part-1.parquet")
    source = {"path": "azure/*.parquet", "name": "azure", "provider_name": "Azure"}
    (delivery,) = ingest_with(ingest_focus_files, config(tmp_path, source))
    assert (delivery.export, delivery.billing_period) == ("azure", "2026-10")
    got = raw_rows(
        [delivery],
        'select "ProviderName", sum("BilledCost"), count("Tags"), min("InvoiceId"), '
        "min(source_file) from raw.focus_billing group by 1",
    )
    assert got == [("Azure", Decimal("12.345678901300000000"), 1, "INV-2026-10", "part-1.parquet")]


def test_parquet_maps_doubles_and_naive_timestamps_are_read(tmp_path: Path) -> None:
    start, end = datetime(2026, 10, 1), datetime(2026, 11, 1)  # no zone: UTC, as FOCUS says
    table = pa.table(
        {
            "BilledCost": pa.array([0.1, 2.5e-7], pa.float64()),
            "EffectiveCost": pa.array([0.1, 0.0], pa.float64()),
            "ListCost": pa.array([0.2, 0.0], pa.float64()),
            "BillingAccountId": ["a", "a"],
            "BillingCurrency": ["USD", "USD"],
            "BillingPeriodStart": pa.array([start, start], pa.timestamp("ms")),
            "BillingPeriodEnd": pa.array([end, end], pa.timestamp("ms")),
            "ChargePeriodStart": pa.array([start, start], pa.timestamp("ms")),
            "ChargePeriodEnd": pa.array([end, end], pa.timestamp("ms")),
            "ChargeCategory": ["Usage", "Usage"],
            "ProviderName": ["AWS", "AWS"],
            "ServiceName": ["x", "x"],
            "Tags": pa.array([[("user_attempt_id", "a1")], []], pa.map_(pa.string(), pa.string())),
        }
    )
    pq.write_table(table, tmp_path / "typed.parquet")
    (delivery,) = ingest_with(ingest_focus_files, config(tmp_path, "typed.parquet"))
    got = raw_rows(
        [delivery],
        'select "BilledCost", "Tags", "ChargePeriodStart" from raw.focus_billing order by 1',
    )
    # a DOUBLE is read through its shortest text, so 0.1 stays 0.1 (not 0.1000000000000000055)
    assert [(value, tags) for value, tags, _ in got] == [
        (Decimal("2.5E-7"), "{}"),
        (Decimal("0.1"), '{"user_attempt_id":"a1"}'),
    ]
    assert str(got[0][2]) == "2026-10-01 00:00:00+00:00"


# --- deliveries ----------------------------------------------------------------------------


def test_unchanged_files_reuse_their_delivery_and_a_change_replaces_only_its_period(
    tmp_path: Path,
) -> None:
    path = write_mixed_csv(tmp_path / "focus" / "a.csv")
    settings = config(tmp_path, "focus")
    first = ingest_with(ingest_focus_files, settings)
    again = ingest_with(ingest_focus_files, settings)
    assert [item.delivery_id for item in again] == [item.delivery_id for item in first]
    assert not any(item.new for item in again)
    # a file for another month arrives: the existing periods keep their deliveries
    write_mixed_csv(
        tmp_path / "focus" / "b.csv", [row("AWS", 11, BilledCost="1", EffectiveCost="1")]
    )
    third = ingest_with(ingest_focus_files, settings)
    assert [(item.billing_period, item.new) for item in third] == [
        ("2026-09", False),
        ("2026-10", False),
        ("2026-11", True),
    ]
    # a.csv changes: both of its periods are stored afresh
    path.write_text(path.read_text(encoding="utf-8").replace("32.7726", "32.7727"), "utf-8")
    fourth = ingest_with(ingest_focus_files, settings)
    assert [item.new for item in fourth] == [True, True, False]
    assert fourth[1].delivery_id != first[1].delivery_id


def test_no_focus_source_gives_an_empty_typed_relation(tmp_path: Path) -> None:
    assert ingest_with(ingest_focus_files, config(tmp_path)) == []
    con = duckdb.connect()
    con.execute("create schema raw")
    register_focus(con, [])
    kinds = dict(con.execute("select column_name, column_type from (describe raw.focus_billing)")
                 .fetchall())  # fmt: skip
    assert kinds["BilledCost"] == "DECIMAL(38,18)"
    assert kinds["ChargePeriodStart"] == "TIMESTAMP WITH TIME ZONE"
    assert con.execute("select count(*) from raw.focus_billing").fetchone() == (0,)


# --- bad input -----------------------------------------------------------------------------


def test_a_missing_required_column_is_named_with_the_version(tmp_path: Path) -> None:
    line = row("AWS", 10, InvoiceId="I-1")
    del line["BillingCurrency"]
    write_mixed_csv(tmp_path / "f.csv", [line])
    with pytest.raises(InputError) as error:
        ingest_with(ingest_focus_files, config(tmp_path, "f.csv"))
    message = str(error.value)
    assert "f.csv: FOCUS 1.2 file (detected from its columns)" in message
    assert "lacks the required column BillingCurrency" in message
    assert "Export the file again with every FOCUS column" in message
    assert_nothing_stored(tmp_path)


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("BilledCost", "$10.00", "'$10.00' is refused; it must be a finite amount below 1e+15"),
        ("ListCost", "1,000.00", "'1,000.00' is refused; it must be a finite amount below"),
        ("ChargePeriodStart", "5/1/25", "'5/1/25' is not an ISO 8601 UTC date-time"),
        ("BillingPeriodStart", "2026-13-01 00:00:00", "'2026-13-01 00:00:00' is not an ISO"),
        ("Tags", "team=ml", "'team=ml' is not a JSON object"),
        ("AllocatedTags", '["att-1"]', "'[\"att-1\"]' is not a JSON object"),
        ("AllocatedMethodDetails", "{", "'{' is not a JSON object"),
    ],
)
def test_an_unparseable_value_names_row_and_column(
    tmp_path: Path, column: str, value: str, expected: str
) -> None:
    blank = {} if column in HEADER_1_0 else {column: "NULL"}  # a 1.3 column: in every row
    rows = [row("AWS", 10, **blank), row("AWS", 10, **blank), row("AWS", 10, **{column: value})]
    write_mixed_csv(tmp_path / "focus" / "f.csv", rows)
    with pytest.raises(InputError) as error:
        ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    message = str(error.value)
    assert f"f.csv: row 3 (after the header), column {column}: {expected}" in message
    assert "fix the value in the export" in message.lower()
    assert_nothing_stored(tmp_path)


def test_a_file_that_is_not_focus_is_refused(tmp_path: Path) -> None:
    write_text(
        tmp_path / "cur.csv",
        "line_item_unblended_cost,line_item_usage_start_date,bill_payer_account_id\n1,x,y\n",
    )
    with pytest.raises(InputError) as error:
        ingest_with(ingest_focus_files, config(tmp_path, "cur.csv"))
    message = str(error.value)
    assert "cur.csv: no FOCUS version recognised" in message
    assert "not a FOCUS 1.0-1.3 Cost and Usage column set" in message
    assert "an AWS CUR export goes under aws.exports" in message


def test_a_row_without_billing_currency_is_refused(tmp_path: Path) -> None:
    rows = [row("AWS", 10), row("AWS", 10, BillingCurrency="NULL")]
    write_mixed_csv(tmp_path / "f.csv", rows)
    with pytest.raises(InputError) as error:
        ingest_with(ingest_focus_files, config(tmp_path, "f.csv"))
    assert "f.csv: row 2 (after the header), column BillingCurrency: is empty" in str(error.value)
    assert_nothing_stored(tmp_path)


def test_a_file_with_more_rows_than_its_line_ids_number_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line keeps its row in the original file, whatever period's part holds it: the limit is
    on the file's rows, though each part holds fewer (2^28 rows are too many to write here: the
    limit is lowered to 2)."""
    monkeypatch.setattr(focus_read, "FILE_ROWS", 2)
    write_mixed_csv(tmp_path / "f.csv", [row("AWS", 9), row("AWS", 10), row("AWS", 10)])
    with pytest.raises(InputError) as error:
        ingest_with(ingest_focus_files, config(tmp_path, "f.csv"))
    message = str(error.value)
    assert "\n" not in message
    assert message.endswith(
        "f.csv: 3 rows in one file, more than the 2 a file's line ids can number; export the "
        "period in smaller files and run again"
    )
    assert_nothing_stored(tmp_path)


def test_mixed_currencies_in_one_account_and_period_are_fine(tmp_path: Path) -> None:
    rows = [row("AWS", 10, BilledCost="1"), row("AWS", 10, BillingCurrency="EUR", BilledCost="2")]
    write_mixed_csv(tmp_path / "f.csv", rows)
    (delivery,) = ingest_with(ingest_focus_files, config(tmp_path, "f.csv"))
    got = raw_rows(
        [delivery],
        'select "BillingCurrency", sum("BilledCost") from raw.focus_billing group by 1 order by 1',
    )
    assert got == [("EUR", Decimal(2)), ("USD", Decimal(1))]


def test_a_path_matching_no_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"focus/\*\.csv: focus.files entry 'focus' matches no"):
        ingest_with(ingest_focus_files, config(tmp_path, "focus/*.csv"))


# --- configuration -------------------------------------------------------------------------


def test_focus_files_names_each_source(tmp_path: Path) -> None:
    settings = config(
        tmp_path,
        "exports/azure/*.csv",
        "exports/oci/focus_2026.csv.gz",
        "exports/aws-focus",
        {"path": "more/*.parquet", "name": "gcp", "provider_name": "Google Cloud"},
    )
    assert [(item.name, item.provider_name) for item in settings.providers["focus"]] == [
        ("azure", None),
        ("focus_2026", None),
        ("aws-focus", None),
        ("gcp", "Google Cloud"),
    ]
    assert settings.providers["focus"][0].pattern == str(tmp_path / "exports/azure/*.csv")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (["a/x.csv", "b/x.csv"], "source name 'x' is already used by a/x.csv"),
        (["s3://bucket/focus/"], "is not a local path"),
        ([{"path": "a", "kind": "csv"}], "must be a path or glob"),
        ([{"path": "a", "name": "bad name"}], "name 'bad name' must be letters"),
    ],
)
def test_bad_focus_configuration_is_explained(tmp_path: Path, files, message) -> None:
    with pytest.raises(ConfigError, match=message):
        config(tmp_path, *files)


def test_a_large_parquet_file_is_stored_in_its_row_order_within_memory_limit(
    tmp_path: Path,
) -> None:
    """The file is read through a view and written typed in one pass (no copy held in memory);
    each period's rows keep the file's order, on two threads, across many row groups."""
    source = tmp_path / "focus" / "big.parquet"
    source.parent.mkdir(parents=True)
    con = duckdb.connect()
    con.execute(
        "copy (select (i % 7)::varchar || '.125' as BilledCost, '1.0' as EffectiveCost, "
        "'1.0' as ListCost, 'acct' as BillingAccountId, 'USD' as BillingCurrency, "
        "case when i % 3 = 0 then '2026-09-01T00:00:00Z' else '2026-10-01T00:00:00Z' end "
        "as BillingPeriodStart, case when i % 3 = 0 then '2026-10-01T00:00:00Z' "
        "else '2026-11-01T00:00:00Z' end as BillingPeriodEnd, "
        "case when i % 3 = 0 then '2026-09-02T00:00:00Z' else '2026-10-02T00:00:00Z' end "
        "as ChargePeriodStart, case when i % 3 = 0 then '2026-09-02T01:00:00Z' "
        "else '2026-10-02T01:00:00Z' end as ChargePeriodEnd, 'Usage' as ChargeCategory, "
        "'AWS' as ProviderName, 'Amazon EC2' as ServiceName, 'i-' || i as ResourceId "
        f"from range(300000) t(i)) to '{source}' (format parquet, row_group_size 10000)"
    )
    con.close()
    settings = {"focus": {"files": ["focus/big.parquet"]}, "warehouse": {"memory_limit": "256MB"}}
    deliveries = ingest_with(ingest_focus_files, parse_config(settings, base=tmp_path))
    assert [item.billing_period for item in deliveries] == ["2026-09", "2026-10"]
    for item in deliveries:
        [part] = item.files
        con = duckdb.connect()
        lines = [
            row[0]
            for row in con.execute(
                f"select runcost_source_line from read_parquet('{part}', file_row_number = true) "
                "order by file_row_number"
            ).fetchall()
        ]
        con.close()
        assert lines == sorted(lines) and len(lines) == (
            100_000 if item.billing_period == "2026-09" else 200_000
        )


def test_a_full_disk_while_a_csv_is_streamed_is_not_blamed_on_the_csv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    write_mixed_csv(tmp_path / "focus" / "sample.csv")

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    # every Parquet write of pyarrow's (write_batch too) goes through write_table
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    with pytest.raises(OSError) as error:
        ingest_with(ingest_focus_files, config(tmp_path, "focus/sample.csv"))
    assert not isinstance(error.value, InputError) and error.value.errno == errno.ENOSPC
    assert_nothing_stored(tmp_path)
