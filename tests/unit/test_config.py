"""runcost.toml: defaults, paths, and an error naming the key for every bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.loader import load_config, parse_config
from pipeline.config.pools import COST_LINE_COLUMNS


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "runcost.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_and_relative_paths(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[aws]\nexports = ["cur/export"]\n'))
    assert config.warehouse == (tmp_path / "warehouse").resolve()
    assert config.providers["aws"].exports == (str((tmp_path / "cur/export").resolve()),)
    assert config.telemetry is None
    assert config.attempt_tag_keys == ("user_attempt_id",)
    assert config.experiment_tag_keys == ("user_experiment_id",)
    assert config.resource_time is True
    assert config.pools == ()


def test_full_file(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
[warehouse]
path = "/srv/wh"
memory_limit = "2GB"
threads = 2
resource_partitions = 4
[aws]
exports = ["s3://bucket/prefix/export"]
[telemetry]
path = "tele"
[attribution]
attempt_tag_keys = ["user_run", "user_attempt_id"]
resource_time = false
[[pools]]
name = "eks"
selector = "service_name = 'AmazonEKS' and billed_cost > 0"
attempts = "cluster = 'train'"
driver = "even"
spread = "billing_period"
""",
        )
    )
    assert config.warehouse == Path("/srv/wh")
    assert config.providers["aws"].exports == ("s3://bucket/prefix/export",)
    assert config.telemetry == (tmp_path / "tele").resolve()
    assert config.attempt_tag_keys == ("user_run", "user_attempt_id")
    assert config.resource_time is False
    assert config.memory_limit == "2GB" and config.threads == 2
    assert config.resource_partitions == 4
    (pool,) = config.pools
    assert (pool.name, pool.driver, pool.spread, pool.attempts) == (
        "eks",
        "even",
        "billing_period",
        "cluster = 'train'",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[wharehouse]\npath = 'x'\n",
            "unknown section [wharehouse]; allowed: allocation, attribution, aws",
        ),
        (
            "[aws]\nexport = ['x']\n",
            "unknown key aws.export; allowed in [aws]: endpoint_url, exports, region",
        ),
        ("[aws]\nexports = 'x'\n", "aws.exports must be a list of non-empty strings"),
        ("[aws]\nexports = ['']\n", "aws.exports must be a list of non-empty strings"),
        ("[warehouse]\nthreads = 0\n", "warehouse.threads must be a whole number of at least 1"),
        *(
            (f"[warehouse]\nresource_partitions = {value}\n", "resource_partitions must be a whole")
            for value in ("0", "65", "2.5", "true", "'auto'")
        ),
        ("[warehouse]\nmemory_limit = 'lots'\n", "warehouse.memory_limit must be a size such as"),
        ("[warehouse]\npath = ''\n", "warehouse.path must be a non-empty string"),
        (
            "[attribution]\nresource_time = 'yes'\n",
            "attribution.resource_time must be true or false",
        ),
        ("[telemetry]\npath = 3\n", "telemetry.path must be a string"),
        ("[[pools]]\nselector = 'true'\n", "pools[1]: name is required"),
        ("[[pools]]\nname = 'p'\n", "pools[1] (p): selector is required"),
        ("[[pools]]\nname = 'p'\nselector = 'true'\nweight = 2\n", "pools[1]: unknown key weight"),
        (
            "[[pools]]\nname = 'p'\nselector = 'true'\ndriver = 'cpu'\n",
            "driver 'cpu' is not supported; allowed: gpu_seconds, cpu_memory_requested, "
            "attempt_count, even, cost_weighted",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'true'\nspread = 'week'\n",
            "spread 'week' is not supported; allowed: charge_period, billing_period",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'true'\n[[pools]]\nname = 'p'\nselector = 'true'\n",
            "pool name 'p' is used twice",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = \"servce_name = 'AmazonEKS'\"\n",
            "pools[1] (p).selector: unknown column 'servce_name'; known columns:",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'line_id in (select 1)'\n",
            "pools[1] (p).selector: only a condition over columns is allowed",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'true; drop table x'\n",
            "pools[1] (p).selector: must be exactly one SQL condition, without ';'",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'cost_lines.service_name = 1'\n",
            "write plain column names",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'true'\nattempts = 'team = 1'\n",
            "pools[1] (p).attempts: unknown column 'team'",
        ),
        (
            "[[pools]]\nname = 'gpu-fleet'\nselector = 'service_name'\n",
            "pools[1] (gpu-fleet).selector: must be one condition that is true or false",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = \"resource_class = 'tax' and billed_cost + 1\"\n",
            "pools[1] (p).selector: must be one condition that is true or false",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'true'\nattempts = 'gpu_count'\n",
            "pools[1] (p).attempts: must be one condition that is true or false",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'exists (select 1)'\n",
            "pools[1] (p).selector: only a condition over columns is allowed",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'true'\ndriver = 'cost_weighted'\nbasis = 'gross'\n",
            "pools[1] (p): basis 'gross' is not a cost basis; allowed: billed_cost, "
            "effective_cost, list_cost, net_cost",
        ),
        (
            "[[pools]]\nname = 'p'\nselector = 'true'\nbasis = 'net_cost'\n",
            "pools[1] (p): basis applies only to driver 'cost_weighted'",
        ),
        ("[allocation]\nexclude = 3\n", "allocation.exclude must be a SQL condition"),
        ("[allocation]\nexcludes = ''\n", "unknown key allocation.excludes"),
        (
            "[allocation]\nexclude = \"servce_name = 'AmazonBedrock'\"\n",
            "allocation.exclude: unknown column 'servce_name'",
        ),
        (
            "[allocation]\nexclude = 'line_id in (select 1)'\n",
            "allocation.exclude: only a condition over columns is allowed",
        ),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert message in str(caught.value)
    assert str(tmp_path / "runcost.toml") in str(caught.value)


def test_missing_file_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such configuration file; pass --config PATH"):
        load_config(tmp_path / "absent.toml")


def test_invalid_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[aws\n"))


def test_fingerprint_changes_with_results_relevant_settings(tmp_path: Path) -> None:
    one = parse_config({}, base=tmp_path)
    two = parse_config({"attribution": {"resource_time": False}}, base=tmp_path)
    assert one.fingerprint() == parse_config({}, base=tmp_path).fingerprint()
    assert one.fingerprint() != two.fingerprint()


def test_selector_columns_match_the_cost_lines_model(built_empty) -> None:
    columns = {row[0] for row in built_empty.execute("describe normalized.cost_lines").fetchall()}
    assert columns == COST_LINE_COLUMNS


def test_attempts_condition_columns_match_the_telemetry_contract() -> None:
    from pipeline.config.pools import ATTEMPT_COLUMNS
    from pipeline.telemetry import arrow_schema

    canonical = set(arrow_schema("attempts").names)
    assert canonical - {"attempt_id"} <= ATTEMPT_COLUMNS | {"attempt_id"}
    assert canonical >= ATTEMPT_COLUMNS


def test_pool_attempts_may_select_by_tag(tmp_path: Path) -> None:
    config = parse_config(
        {"pools": [{"name": "p", "selector": "true", "attempts": "tags['team'] = 'nlp'"}]},
        base=tmp_path,
    )
    assert config.pools[0].attempts == "tags['team'] = 'nlp'"


def test_inference_is_excluded_by_default_and_the_default_can_be_changed(tmp_path: Path) -> None:
    from pipeline.config.pools import DEFAULT_EXCLUDE

    assert parse_config({}, base=tmp_path).allocation_exclude == DEFAULT_EXCLUDE
    assert "AmazonBedrock" in DEFAULT_EXCLUDE and "%Host%" in DEFAULT_EXCLUDE
    changed = parse_config({"allocation": {"exclude": "service_name = 'X'"}}, base=tmp_path)
    assert changed.allocation_exclude == "service_name = 'X'"
    assert parse_config({"allocation": {"exclude": ""}}, base=tmp_path).allocation_exclude == ""
    assert changed.fingerprint() != parse_config({}, base=tmp_path).fingerprint()


def test_every_driver_and_a_cost_weighted_basis_are_accepted(tmp_path: Path) -> None:
    from pipeline.config.pools import POOL_DRIVERS

    pools = [
        {"name": driver, "selector": "resource_class = 'credit'", "driver": driver}
        for driver in POOL_DRIVERS
    ]
    pools[-1]["basis"] = "net_cost"
    config = parse_config({"pools": pools}, base=tmp_path)
    assert [(pool.driver, pool.basis) for pool in config.pools] == [
        ("gpu_seconds", "effective_cost"),
        ("cpu_memory_requested", "effective_cost"),
        ("attempt_count", "effective_cost"),
        ("even", "effective_cost"),
        ("cost_weighted", "net_cost"),
    ]


@pytest.mark.parametrize(
    ("text", "key", "folder"),
    [
        ('[warehouse]\npath = "tele/wh"\n[telemetry]\npath = "tele"\n', "telemetry.path", "tele"),
        ('[warehouse]\npath = "tele"\n[telemetry]\npath = "tele"\n', "telemetry.path", "tele"),
        (
            '[warehouse]\npath = "mlruns/wh"\n[[telemetry.sources]]\nkind = "mlflow"\n'
            'path = "mlruns"\n',
            "telemetry.sources[1].path",
            "mlruns",
        ),
    ],
)
def test_warehouse_inside_the_telemetry_folder_is_refused(
    tmp_path: Path, text: str, key: str, folder: str
) -> None:
    path = write(tmp_path, text)
    warehouse = parse_config_warehouse(text, tmp_path)
    telemetry = (tmp_path / folder).resolve()

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(caught.value) == (
        f"{path}: warehouse.path {warehouse} lies inside {key} {telemetry}; the telemetry folder "
        "is the exporters' to rewrite and runcost reads it as telemetry, so the warehouse must "
        f"live apart: set warehouse.path to a folder outside {telemetry}"
    )


def parse_config_warehouse(text: str, base: Path) -> Path:
    """The warehouse folder a runcost.toml text names, resolved as the loader resolves it."""
    return (base / text.split('path = "')[1].split('"')[0]).resolve()


def test_warehouse_beside_the_telemetry_folder_is_accepted(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, '[warehouse]\npath = "tele-wh"\n[telemetry]\npath = "tele"\n')
    )
    assert config.warehouse == (tmp_path / "tele-wh").resolve()
    assert config.telemetry == (tmp_path / "tele").resolve()
