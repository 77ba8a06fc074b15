"""Telemetry that reads but cannot be right: look-alike ids, control characters, times outside
any bill, more GPUs than the instance has, empty files, experiments no file lists."""

from __future__ import annotations

import datetime as dt
import logging
import unicodedata
from pathlib import Path

import pytest
from test_telemetry_files import CONVENTION, FORMATS, attempt, load_error, write

from pipeline.common.errors import InputError
from pipeline.telemetry import arrow_schema, load_telemetry
from pipeline.telemetry.adapters import check_controls, in_nfc, table

NFD = unicodedata.normalize("NFD", "att-café")
NFC = unicodedata.normalize("NFC", "att-café")
CLOCK = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


# --- look-alike ids: Unicode NFC, control characters ------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_ids_and_tags_are_read_in_nfc(tmp_path: Path, fmt: str) -> None:
    assert NFD != NFC
    rows = [attempt(NFD, experiment_id=NFD, tags=f'{{"user_attempt_id": "{NFD}"}}')]
    write(tmp_path, "attempts", fmt, rows)
    write(tmp_path, "attempt_resources", fmt, [{"attempt_id": NFC, "resource_id": NFD}])

    tables = load_telemetry(tmp_path)

    row = tables["attempts"].to_pylist()[0]
    assert (row["attempt_id"], row["experiment_id"]) == (NFC, NFC)
    assert row["tags"] == [("user_attempt_id", NFC)]
    assert tables["attempt_resources"].column("resource_id").to_pylist() == [NFC]


def test_two_spellings_of_one_id_are_one_id(tmp_path: Path) -> None:
    path = write(tmp_path, "attempts", "csv", [attempt(NFC), attempt(NFD)])

    assert load_error(tmp_path) == (
        f"{path}: rows 1 and 2, column attempt_id: 'att-café' appears more than once; each "
        "attempt needs its own attempt_id (a retry is a new attempt with a new id): keep one of "
        f"the rows or give the other a new attempt_id {CONVENTION['csv']}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("character", "code"), [("\x00", "U+0000"), ("\x1b", "U+001B")])
def test_control_character_in_an_id_is_refused(
    tmp_path: Path, fmt: str, character: str, code: str
) -> None:
    write(tmp_path, "attempts", fmt, [attempt("a1")])
    rows = [{"attempt_id": "a1", "resource_id": "i-0"}]
    rows.append({"attempt_id": "a1", "resource_id": f"i-{character}1"})
    path = write(tmp_path, "attempt_resources", fmt, rows)

    assert load_error(tmp_path) == (
        f"{path}: row 2, column resource_id: {f'i-{character}1'!r} holds the control character "
        f"{code}; an id with one never matches the same id on the bill: write the id without "
        f"it {CONVENTION[fmt]}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_control_character_in_a_tag_is_refused(tmp_path: Path, fmt: str) -> None:
    rows = [attempt("a1", user_attempt_id="att-llm-01"), attempt("a2", user_attempt_id="att\x00")]
    path = write(tmp_path, "attempts", fmt, rows)

    assert load_error(tmp_path) == (
        f"{path}: row 2, column tags: tag 'user_attempt_id' = 'att\\x00' holds the control "
        "character U+0000; a tag with one never matches the same tag on the bill: write it "
        f"without it {CONVENTION[fmt]}"
    )


def test_tab_and_line_breaks_in_a_tag_are_text(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "jsonl", [attempt(tags='{"note": "a\\tb\\r\\nc"}')])

    tags = load_telemetry(tmp_path)["attempts"].column("tags").to_pylist()

    assert tags == [[("note", "a\tb\r\nc")]]


# --- times outside any bill ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_attempt_in_the_future_is_refused(tmp_path: Path, fmt: str) -> None:
    rows = [attempt("a1"), attempt("a2", started_at="2031-01-01T00:00:00Z")]
    path = write(tmp_path, "attempts", fmt, rows)

    with pytest.raises(InputError) as raised:
        load_telemetry(tmp_path, now=CLOCK)

    assert str(raised.value) == (
        f"{path}: row 2, column started_at: '2031-01-01T00:00:00Z' is in the future: after the "
        "run's clock 2026-11-01T00:00:00+00:00 by more than a day; fix the time (check the "
        f"clock of the host that wrote it) {CONVENTION[fmt]}"
    )


def test_a_time_within_a_day_of_the_clock_is_kept(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt(ended_at="2026-11-01T23:00:00Z")])

    tables = load_telemetry(tmp_path, now=CLOCK)

    assert tables["attempts"].num_rows == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_resource_interval_in_1900_is_refused(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, "attempts", fmt, [attempt("a1")])
    rows = [
        {
            "attempt_id": "a1",
            "resource_id": "i-1",
            "started_at": "1900-01-01T00:00:00Z",
            "ended_at": "2026-10-01T00:00:00Z",
        }
    ]
    path = write(tmp_path, "attempt_resources", fmt, rows)

    assert load_error(tmp_path) == (
        f"{path}: row 1, column started_at: '1900-01-01T00:00:00Z' is before 2000-01-01, older "
        f"than any cloud bill (a clock that was never set); fix the time {CONVENTION[fmt]}"
    )


# --- GPUs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_more_gpus_than_the_instance_has_is_refused(tmp_path: Path, fmt: str) -> None:
    rows = [
        attempt("a1", instance_type="p4d.24xlarge", gpu_count="8"),
        attempt("a2", instance_type="p4d.24xlarge", gpu_count="16"),
        attempt("a3", instance_type="ml.p4d.24xlarge", gpu_count="16", node_count="2"),
        attempt("a4", instance_type="p4d.24xlarge", gpu_count="24", node_count="2"),
    ]
    path = write(tmp_path, "attempts", fmt, rows)

    assert load_error(tmp_path) == (
        f"{path}: 2 problems {CONVENTION[fmt]}:\n"
        "  row 2, column gpu_count: 16 GPUs claimed on 1 instance (node_count is empty) of "
        "'p4d.24xlarge', which has 8 GPUs each; fix gpu_count (the attempt's total), or set "
        "node_count to the number of instances it ran on\n"
        "  row 4, column gpu_count: 24 GPUs claimed on 2 instance(s) of 'p4d.24xlarge', which "
        "has 8 GPUs each; fix gpu_count (the attempt's total), or set node_count to the number "
        "of instances it ran on"
    )


def test_more_gpus_on_one_resource_than_its_instance_has_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt("a1", instance_type="a2-highgpu-8g")])
    rows = [
        {"attempt_id": "a1", "resource_id": "gpu-node-1", "gpu_count": "8"},
        {"attempt_id": "a1", "resource_id": "gpu-node-2", "gpu_count": "16"},
    ]
    path = write(tmp_path, "attempt_resources", "csv", rows)

    assert load_error(tmp_path) == (
        f"{path}: row 2, column gpu_count: 16 GPUs claimed on resource 'gpu-node-2' of attempt "
        "'a1', a 'a2-highgpu-8g' with 8 GPUs; fix gpu_count (a row is one resource: list each "
        f"instance in its own row) {CONVENTION['csv']}"
    )


def test_an_instance_type_not_in_the_table_is_not_checked(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt(instance_type="x9.huge", gpu_count="64")])

    assert load_telemetry(tmp_path)["attempts"].column("gpu_count").to_pylist() == [64]


# --- empty files, unknown experiments ---------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("attempts", "attempt_id,experiment_id,status"),
        ("attempt_resources", "attempt_id,resource_id"),
        ("experiments", "experiment_id"),
    ],
)
def test_a_zero_byte_file_is_refused(tmp_path: Path, fmt: str, name: str, columns: str) -> None:
    if name != "attempts":
        write(tmp_path, "attempts", "csv", [attempt()])
    path = tmp_path / f"{name}.{fmt}"
    path.write_bytes(b"")

    assert load_error(tmp_path) == (
        f"{path}: the file is empty (0 bytes), which is what a failed or unfinished write "
        "leaves, not a dataset with no rows; write the file again (a dataset with no rows is a "
        f"CSV file holding only its header line: {columns})"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_attempt_of_an_unlisted_experiment_is_warned(
    tmp_path: Path, fmt: str, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [attempt("a1", experiment_id="e1"), attempt("a2", experiment_id="e9")]
    rows.append(attempt("a3", experiment_id="e9"))
    path = write(tmp_path, "attempts", fmt, rows)
    write(tmp_path, "experiments", fmt, [{"experiment_id": "e1", "team": "vision"}])

    with caplog.at_level(logging.WARNING, logger="runcost"):
        tables = load_telemetry(tmp_path)

    assert tables["attempts"].num_rows == 3
    assert [record.getMessage() for record in caplog.records] == [
        f"{path}: rows 2 and 3, column experiment_id: experiment 'e9' of attempts 'a2', 'a3' is "
        f"not in experiments.{fmt}; no team, quality metric or threshold applies to it: add the "
        f"experiment to experiments.{fmt} or fix the experiment_id {CONVENTION[fmt]}"
    ]


def test_no_experiments_file_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path, "attempts", "csv", [attempt("a1", experiment_id="e9")])

    with caplog.at_level(logging.WARNING, logger="runcost"):
        load_telemetry(tmp_path)

    assert caplog.records == []


def test_adapter_tables_are_put_in_nfc() -> None:
    rows = [
        {"attempt_id": NFD, "experiment_id": "e1", "status": "failed", "tags": {NFD: NFD}},
        {"attempt_id": "a2", "experiment_id": "e1", "status": "failed"},
    ]

    normal = in_nfc(table("attempts", rows))

    assert normal.column("attempt_id").to_pylist() == [NFC, "a2"]
    assert normal.column("tags").to_pylist() == [[(NFC, NFC)], []]
    assert normal.schema == arrow_schema("attempts")


def test_a_control_character_from_an_adapter_is_refused() -> None:
    rows = [
        {"attempt_id": "a1", "experiment_id": "e1", "status": "failed", "tags": {"x": "a\nb"}},
        {"attempt_id": "a2", "experiment_id": "e1", "status": "failed", "tags": {"k": "att\x00"}},
    ]

    with pytest.raises(InputError) as raised:
        check_controls(table("attempts", rows), "attempts", "telemetry.sources[1] (mlflow)")

    assert str(raised.value) == (
        "telemetry.sources[1] (mlflow): attempts attempt_id 'a2': tag 'k=att\\x00' holds the "
        "control character U+0000; an id or tag with one never matches the same one on the "
        "bill: fix it where the source records it"
    )


def test_a_control_character_in_an_adapter_id_is_refused() -> None:
    rows = [{"attempt_id": "a1", "resource_id": "i-\x1b1"}]

    with pytest.raises(InputError) as raised:
        check_controls(table("attempt_resources", rows), "attempt_resources", "slurm")

    assert str(raised.value) == (
        "slurm: attempt_resources attempt_id 'a1': resource_id 'i-\\x1b1' holds the control "
        "character U+001B; an id or tag with one never matches the same one on the bill: fix "
        "it where the source records it"
    )
