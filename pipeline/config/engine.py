"""The `engine` key of runcost.toml and the registry of engines, with each one's options table.

ENGINES is the one registry of engines: a name runcost.toml may give and the table of options
it reads ([spark]). It sits here, where the configuration may read it; the engine of each name
is the package pipeline.dag.engines.<name>, imported only when a run uses it (so PySpark only
with `engine = "spark"`; pipeline.dag.engines.factory opens it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.common.errors import ConfigError

SPARK_KEYS = ("master", "remote", "catalog", "conf")
DEFAULT_MASTER = "local[*]"


@dataclass(frozen=True)
class SparkOptions:
    """[spark]: the session to use, where published tables go, and extra Spark settings."""

    master: str = DEFAULT_MASTER
    remote: str | None = None  # a Spark Connect URL, sc://host:15002
    catalog: str | None = None  # write published tables as <catalog>.<schema>.<table>
    conf: dict[str, str] = field(default_factory=dict)


def parse_spark(section: dict[str, Any], where: str) -> SparkOptions:
    """The [spark] table (its keys checked against SPARK_KEYS already)."""
    for key in ("master", "remote", "catalog"):
        value = section.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(f"{where}: spark.{key} must be a non-empty string")
    remote = section.get("remote")
    if remote is not None and not remote.startswith("sc://"):
        raise ConfigError(
            f'{where}: spark.remote must be a Spark Connect URL such as "sc://spark-host:15002"'
        )
    if remote is not None and "master" in section:
        raise ConfigError(f"{where}: set spark.master or spark.remote, not both")
    conf = section.get("conf", {})
    if not isinstance(conf, dict) or not all(
        isinstance(value, str | int | float | bool) for value in conf.values()
    ):
        raise ConfigError(
            f"{where}: [spark.conf] must map Spark settings to values, such as "
            '"spark.executor.memory" = "8g"'
        )
    settings = {
        str(key): str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in conf.items()
    }
    return SparkOptions(
        master=section.get("master", DEFAULT_MASTER),
        remote=remote,
        catalog=section.get("catalog"),
        conf=settings,
    )


@dataclass(frozen=True)
class EngineSpec:
    """An engine of the registry: what it is, and the options table it reads, if any."""

    summary: str
    section: str | None = None  # the top-level table of its options, such as [spark]
    keys: tuple[str, ...] = ()  # the keys that table allows
    # the table's options from its parsed TOML (an empty table gives the defaults)
    parse: Callable[[dict[str, Any], str], Any] | None = None


DEFAULT_ENGINE = "duckdb"
ENGINES: dict[str, EngineSpec] = {
    "duckdb": EngineSpec(
        "DuckDB on this machine, on the run's build database, out of core within "
        "warehouse.memory_limit"
    ),
    "spark": EngineSpec(
        "the same models transpiled to Spark SQL on a Spark session (the spark extra)",
        section="spark",
        keys=SPARK_KEYS,
        parse=parse_spark,
    ),
}


def engine_choices() -> str:
    """The registry's names as an error message lists them: "duckdb" (the default) or "spark"."""
    names = [
        f'"{name}" (the default)' if name == DEFAULT_ENGINE else f'"{name}"' for name in ENGINES
    ]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def unknown_engine(name: object, where: str) -> ConfigError:
    """The error for an engine name the registry does not have."""
    return ConfigError(f"{where}: engine must be {engine_choices()}, not {name!r}")


def engine_sections() -> tuple[str, ...]:
    """The top-level tables of runcost.toml that hold an engine's options."""
    return tuple(spec.section for spec in ENGINES.values() if spec.section)


def default_engine_options() -> dict[str, Any]:
    """Every engine's options as an empty table gives them, by engine name."""
    return {
        name: spec.parse({}, "runcost.toml")
        for name, spec in ENGINES.items()
        if spec.parse is not None
    }


def parse_engine(data: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """The engine name of a parsed runcost.toml, and every engine's options by engine name.

    Each registered engine's table is read whichever engine is chosen, so a bad [spark] table
    is reported before the day it is switched on.
    """
    engine = data.get("engine", DEFAULT_ENGINE)
    if not isinstance(engine, str) or engine not in ENGINES:
        raise unknown_engine(engine, where)
    options: dict[str, Any] = {}
    for name, spec in ENGINES.items():
        if spec.section is None or spec.parse is None:
            continue
        section = data.get(spec.section, {})
        if not isinstance(section, dict):
            raise ConfigError(f"{where}: [{spec.section}] must be a table")
        unknown = sorted(set(section) - set(spec.keys))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key {spec.section}.{unknown[0]}; allowed in "
                f"[{spec.section}]: {', '.join(spec.keys)}"
            )
        options[name] = spec.parse(section, where)
    return engine, options
