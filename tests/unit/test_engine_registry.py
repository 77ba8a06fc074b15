"""The one registry of engines: config reads names and options from it, the factory opens the
package of a registered name, and an engine's dependencies load only when a run uses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.engine import ENGINES, EngineSpec
from pipeline.config.loader import Config, parse_config
from pipeline.dag.engines.duckdb import DuckDBEngine
from pipeline.dag.engines.factory import engine_package, open_engine

ROOT = Path(__file__).resolve().parents[2]
ENGINE_PACKAGES = ROOT / "pipeline" / "dag" / "engines"


def _trino(section: dict[str, Any], where: str) -> dict[str, Any]:
    host = section.get("host", "localhost")
    if not isinstance(host, str):
        raise ConfigError(f"{where}: trino.host must be a host name")
    return {"host": host}


@pytest.fixture
def trino(monkeypatch: pytest.MonkeyPatch) -> None:
    """A third engine in the registry, with a [trino] table of options."""
    spec = EngineSpec("a Trino cluster", section="trino", keys=("host",), parse=_trino)
    monkeypatch.setitem(ENGINES, "trino", spec)


def _parse(data: dict) -> Config:
    return parse_config(data, base=Path("/tmp/base"))


def test_an_unknown_engine_is_refused_with_the_registrys_names(trino: None) -> None:
    with pytest.raises(ConfigError) as caught:
        _parse({"engine": "presto"})
    assert str(caught.value) == (
        'runcost.toml: engine must be "duckdb" (the default), "spark" or "trino", not \'presto\''
    )


def test_config_reads_an_engines_name_and_options_from_the_registry(trino: None) -> None:
    config = _parse({"engine": "trino", "trino": {"host": "coordinator"}})
    assert config.engine == "trino"
    assert config.engine_options["trino"] == {"host": "coordinator"}
    # every registered engine's table is read, whichever engine runs
    default = _parse({"trino": {"host": "h"}})
    assert default.engine == "duckdb"
    assert sorted(default.engine_options) == ["spark", "trino"]
    assert default.engine_options["trino"] == {"host": "h"}
    with pytest.raises(ConfigError) as caught:
        _parse({"trino": {"port": 8080}})
    assert str(caught.value) == ("runcost.toml: unknown key trino.port; allowed in [trino]: host")
    with pytest.raises(ConfigError) as caught:
        _parse({"trino": {"host": 1}})
    assert str(caught.value) == "runcost.toml: trino.host must be a host name"


def test_an_engine_table_is_a_section_only_while_the_engine_is_registered() -> None:
    with pytest.raises(ConfigError) as caught:
        _parse({"trino": {"host": "coordinator"}})
    assert "unknown section [trino]" in str(caught.value)


def test_every_registered_engine_is_a_package_that_opens_it() -> None:
    packages = {path.parent.name for path in ENGINE_PACKAGES.glob("*/__init__.py")}
    assert packages == set(ENGINES)
    for name in ENGINES:
        package = engine_package(name)
        assert package.__name__ == f"pipeline.dag.engines.{name}"
        assert callable(package.open_engine), name


def test_the_factory_refuses_a_name_the_registry_does_not_have(tmp_path: Path) -> None:
    config = Config(path=None, warehouse=tmp_path, engine="trino")
    with pytest.raises(ConfigError) as caught:
        open_engine(config, duckdb.connect(), tmp_path / "tmp")
    assert str(caught.value) == (
        'runcost.toml: engine must be "duckdb" (the default) or "spark", not \'trino\''
    )


def test_the_default_engine_opens_on_the_runs_connection(tmp_path: Path) -> None:
    con = duckdb.connect()
    config = Config(path=None, warehouse=tmp_path, resource_partitions=3)
    engine = open_engine(config, con, tmp_path / "tmp")
    assert isinstance(engine, DuckDBEngine)
    assert engine.con is con
    assert engine.partitions == 3
    assert engine.published_folder == tmp_path / "tmp" / "published"
    outcome = engine.finish(con, [])
    assert outcome.in_connection and outcome.catalog is None
    assert outcome.published_files == {}


def test_pyspark_is_imported_only_when_a_spark_session_opens(tmp_path: Path) -> None:
    """In a fresh interpreter: the DuckDB engine opened, and the Spark package imported, leave
    PySpark unimported (it takes seconds and a JVM to start)."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "import duckdb\n"
        "from pipeline.config.loader import Config\n"
        "from pipeline.dag.engines.factory import engine_package, open_engine\n"
        f"folder = Path({str(tmp_path)!r})\n"
        "engine = open_engine(Config(path=None, warehouse=folder), duckdb.connect(), folder)\n"
        "engine_package('spark')\n"
        "print(type(engine).__name__, sorted(name for name in sys.modules\n"
        "      if name.split('.')[0] in ('pyspark', 'py4j')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert result.stdout.strip() == "DuckDBEngine []"
