"""The engine option and [spark]: parsing, bad values, and the missing PySpark message."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.engine import DEFAULT_MASTER, SparkOptions
from pipeline.config.loader import load_config, parse_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario


def _parse(data: dict) -> object:
    return parse_config(data, base=Path("/tmp/base"))


def test_duckdb_is_the_default_engine() -> None:
    config = _parse({})
    assert config.engine == "duckdb"
    assert config.engine_options == {"spark": SparkOptions()}
    assert config.engine_options["spark"].master == DEFAULT_MASTER == "local[*]"


def test_spark_options_are_read() -> None:
    config = _parse(
        {
            "engine": "spark",
            "spark": {
                "master": "spark://head:7077",
                "catalog": "lakehouse",
                "conf": {"spark.executor.memory": "8g", "spark.sql.adaptive.enabled": True},
            },
        }
    )
    assert config.engine == "spark"
    assert config.engine_options["spark"] == SparkOptions(
        master="spark://head:7077",
        remote=None,
        catalog="lakehouse",
        conf={"spark.executor.memory": "8g", "spark.sql.adaptive.enabled": "true"},
    )
    remote = _parse({"engine": "spark", "spark": {"remote": "sc://connect:15002"}})
    assert remote.engine_options["spark"].remote == "sc://connect:15002"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"engine": "trino"}, 'engine must be "duckdb" (the default) or "spark", not \'trino\''),
        (
            {"engine": ["spark"]},
            'engine must be "duckdb" (the default) or "spark", not [\'spark\']',
        ),
        ({"spark": {"cores": 4}}, "unknown key spark.cores; allowed in [spark]: master, remote"),
        ({"spark": "local"}, "[spark] must be a table"),
        ({"spark": {"master": ""}}, "spark.master must be a non-empty string"),
        ({"spark": {"remote": "http://x:15002"}}, 'Spark Connect URL such as "sc://spark-host'),
        (
            {"spark": {"remote": "sc://x:15002", "master": "local[2]"}},
            "set spark.master or spark.remote, not both",
        ),
        ({"spark": {"conf": {"a": [1]}}}, "[spark.conf] must map Spark settings to values"),
    ],
)
def test_bad_engine_settings_say_how_to_fix_them(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _parse(data)
    assert message in str(caught.value)
    assert "runcost.toml" in str(caught.value)


def test_spark_without_pyspark_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file = write_scenario(tmp_path / "world")
    config_file.write_text(
        'engine = "spark"\n' + config_file.read_text(encoding="utf-8"), encoding="utf-8"
    )
    config = load_config(config_file)
    # a module set to None in sys.modules fails to import, as an uninstalled one does
    for name in [name for name in sys.modules if name.split(".")[0] in ("pyspark", "py4j")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(ConfigError) as caught:
        run_pipeline(config)
    assert "pip install 'runcost[spark]'" in str(caught.value)
    assert 'engine = "duckdb"' in str(caught.value)
    # nothing was published
    assert not (config.warehouse / "runcost.duckdb").exists()
