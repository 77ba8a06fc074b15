"""The `engine` key and the [spark] section of runcost.toml."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.common.errors import ConfigError

ENGINES = ("duckdb", "spark")
SPARK_KEYS = ("master", "remote", "catalog", "conf")
DEFAULT_MASTER = "local[*]"


@dataclass(frozen=True)
class SparkOptions:
    """[spark]: the session to use, where published tables go, and extra Spark settings."""

    master: str = DEFAULT_MASTER
    remote: str | None = None  # a Spark Connect URL, sc://host:15002
    catalog: str | None = None  # write published tables as <catalog>.<schema>.<table>
    conf: dict[str, str] = field(default_factory=dict)


def parse_engine(data: dict[str, Any], where: str) -> tuple[str, SparkOptions]:
    """The engine name and the [spark] options of a parsed runcost.toml."""
    engine = data.get("engine", "duckdb")
    if engine not in ENGINES:
        raise ConfigError(
            f'{where}: engine must be "duckdb" (the default) or "spark", not {engine!r}'
        )
    section = data.get("spark", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: [spark] must be a table")
    unknown = sorted(set(section) - set(SPARK_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key spark.{unknown[0]}; allowed in [spark]: {', '.join(SPARK_KEYS)}"
        )
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
    options = SparkOptions(
        master=section.get("master", DEFAULT_MASTER),
        remote=remote,
        catalog=section.get("catalog"),
        conf=settings,
    )
    return engine, options
