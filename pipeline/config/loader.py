"""runcost.toml: load, validate and expose the configuration as frozen dataclasses."""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.common.errors import ConfigError
from pipeline.common.values import string_list
from pipeline.config.engine import (
    DEFAULT_ENGINE,
    default_engine_options,
    engine_sections,
    parse_engine,
)
from pipeline.config.periods import SECTIONS as PERIOD_SECTIONS
from pipeline.config.periods import WAREHOUSE_KEYS as PERIOD_WAREHOUSE_KEYS
from pipeline.config.periods import PeriodSettings, parse_period_settings
from pipeline.config.pools import DEFAULT_EXCLUDE, Pool, parse_allocation, parse_pools
from pipeline.ingest.provider import IngestContext
from pipeline.ingest.registry import PROVIDERS

DEFAULT_CONFIG_NAME = "runcost.toml"
# The [[telemetry.sources]] kinds, as data: config sits below telemetry and may not import it;
# tests/unit/test_layout.py checks this list against pipeline.telemetry.adapters.REGISTRY.
TELEMETRY_SOURCE_KINDS = (
    "mlflow",
    "slurm",
    "kubernetes",
    "sagemaker",
    "checkpoint_log",
    "canonical",
    "prometheus",
)
_MEMORY = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)


@dataclass(frozen=True)
class Economics:
    """[economics]: constants of the goodput model and the waste findings (docs/economics.md)."""

    # Llama 3 405B: 419 unexpected interruptions / (16,384 GPUs x 1,296 h) = 1.97e-5 per GPU-hour
    failure_rate_per_gpu_hour: float = 1.97e-5
    recovery_minutes: float = 10.0
    checkpoint_interval_minutes: float = 60.0
    checkpoint_write_minutes: float = 1.0
    waste_idle_hours: float = 24.0
    stale_checkpoint_days: float = 7.0


@dataclass(frozen=True)
class TelemetrySource:
    """One [[telemetry.sources]] table: an adapter kind, its input path and its options."""

    kind: str
    path: Path | None
    options: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Config:
    """The whole validated configuration; paths are absolute."""

    path: Path | None
    warehouse: Path
    # each billing provider's settings, by provider name (its section's, or its defaults)
    providers: dict[str, Any] = field(default_factory=dict)
    telemetry: Path | None = None
    telemetry_sources: tuple[TelemetrySource, ...] = ()
    telemetry_on_error: str = "fail"
    telemetry_keep_published: bool = True
    attempt_tag_keys: tuple[str, ...] = ("user_attempt_id",)
    experiment_tag_keys: tuple[str, ...] = ("user_experiment_id",)
    resource_time: bool = True
    pools: tuple[Pool, ...] = ()
    allocation_exclude: str = DEFAULT_EXCLUDE
    memory_limit: str | None = None
    threads: int | None = None
    resource_partitions: int | None = None  # None: as many as memory_limit needs
    lock_timeout_seconds: float = 600.0
    raw_retention_days: int = 90
    economics: Economics = field(default_factory=Economics)
    periods: PeriodSettings = field(default_factory=PeriodSettings)
    engine: str = DEFAULT_ENGINE  # a name of the registry pipeline.config.engine.ENGINES
    # every registered engine's options, by engine name (the [spark] table under "spark")
    engine_options: dict[str, Any] = field(default_factory=default_engine_options)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        # a provider left out takes its defaults, as when runcost.toml has no section for it
        object.__setattr__(self, "providers", {**_provider_defaults(), **self.providers})

    def duckdb_limits(self, temp_directory: Path) -> dict[str, str | int | bool]:
        """DuckDB settings for a connection doing the run's large work (the build, reading a
        file source): warehouse.threads and memory_limit, spilling into ``temp_directory``."""
        settings: dict[str, str | int | bool] = {"temp_directory": str(temp_directory)}
        if self.threads:
            settings["threads"] = int(self.threads)
        if self.memory_limit:
            settings["memory_limit"] = self.memory_limit
        return settings

    def ingest_context(self) -> IngestContext:
        """What a provider's ingest needs of this configuration besides its own settings."""
        return IngestContext(
            warehouse=self.warehouse,
            raw_retention_days=self.raw_retention_days,
            duckdb_limits=self.duckdb_limits,
            resource_time=self.resource_time,
            settle_days=self.periods.gcp_settle_days,
        )

    def fingerprint(self) -> str:
        """A stable hash of the settings that change results (recorded in the run manifest)."""
        text = repr(
            (
                *(
                    part
                    for provider in PROVIDERS
                    for part in provider.fingerprint(self.providers[provider.name])
                ),
                self.attempt_tag_keys,
                self.experiment_tag_keys,
                self.resource_time,
                self.pools,
                self.allocation_exclude,
                self.economics,
                self.periods.prices,
                self.periods.gcp_settle_days,
            )
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]


_SECTIONS: dict[str, set[str]] = {
    "warehouse": {
        "path",
        "memory_limit",
        "threads",
        "resource_partitions",
        "lock_timeout_seconds",
        "raw_retention_days",
        *PERIOD_WAREHOUSE_KEYS,
    },
    "telemetry": {"path", "sources", "on_error", "keep_published"},
    "attribution": {"attempt_tag_keys", "experiment_tag_keys", "resource_time"},
    "economics": {
        "failure_rate_per_gpu_hour",
        "recovery_minutes",
        "checkpoint_interval_minutes",
        "checkpoint_write_minutes",
        "waste_idle_hours",
        "stale_checkpoint_days",
    },
    **PERIOD_SECTIONS,
}


def load_config(path: Path | str | None = None) -> Config:
    """Read and validate runcost.toml (default ./runcost.toml)."""
    config_path = Path(path) if path is not None else Path.cwd() / DEFAULT_CONFIG_NAME
    if not config_path.is_file():
        raise ConfigError(
            f"{config_path}: no such configuration file; pass --config PATH, or run "
            "`runcost scenario DIR` to write an example runcost.toml"
        )
    try:
        # utf-8-sig: Windows editors (Notepad) may start the file with a byte order mark
        data = tomllib.loads(config_path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{config_path}: not valid TOML: {error}") from error
    return parse_config(data, base=config_path.resolve().parent, path=config_path)


def parse_config(data: dict[str, Any], base: Path, path: Path | None = None) -> Config:
    """Validate a parsed TOML document; relative paths are taken from ``base``."""
    where = str(path) if path else "runcost.toml"
    sections = {provider.section: provider.keys for provider in PROVIDERS}
    allowed_top = {*_SECTIONS, *sections, "pools", "allocation", "engine", *engine_sections()}
    for key in data:
        if key not in allowed_top:
            raise ConfigError(
                f"{where}: unknown section [{key}]; allowed: {', '.join(sorted(allowed_top))}"
            )
    for section, keys in {**_SECTIONS, **sections}.items():
        value = data.get(section, {})
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: [{section}] must be a table")
        for key in value:
            if key not in keys:
                raise ConfigError(
                    f"{where}: unknown key {section}.{key}; allowed in [{section}]: "
                    f"{', '.join(sorted(keys))}"
                )

    warehouse = data.get("warehouse", {})
    telemetry = data.get("telemetry", {})
    attribution = data.get("attribution", {})

    threads = warehouse.get("threads")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ConfigError(f"{where}: warehouse.threads must be a whole number of at least 1")
    partitions = warehouse.get("resource_partitions")
    if partitions is not None and (
        isinstance(partitions, bool) or not isinstance(partitions, int) or not 1 <= partitions <= 64
    ):
        raise ConfigError(
            f"{where}: warehouse.resource_partitions must be a whole number from 1 to 64 (the "
            "passes attribution takes, one slice of the resources each), or left out to let "
            "memory_limit choose"
        )
    lock_timeout = warehouse.get("lock_timeout_seconds", 600)
    if (
        isinstance(lock_timeout, bool)
        or not isinstance(lock_timeout, int | float)
        or lock_timeout < 0
    ):
        raise ConfigError(
            f"{where}: warehouse.lock_timeout_seconds must be a number of seconds, 0 or more "
            "(how long a run waits for another run on the same warehouse)"
        )
    memory_limit = warehouse.get("memory_limit")
    if memory_limit is not None and (
        not isinstance(memory_limit, str) or not _MEMORY.fullmatch(memory_limit)
    ):
        raise ConfigError(
            f'{where}: warehouse.memory_limit must be a size such as "4GB" or "512MiB", '
            f"not {memory_limit!r}"
        )

    retention = warehouse.get("raw_retention_days", 90)
    if isinstance(retention, bool) or not isinstance(retention, int) or retention < 0:
        raise ConfigError(
            f"{where}: warehouse.raw_retention_days must be a whole number of days, 0 or more "
            "(how long superseded deliveries stay in raw/)"
        )
    telemetry_path = telemetry.get("path")
    if telemetry_path is not None and not isinstance(telemetry_path, str):
        raise ConfigError(f"{where}: telemetry.path must be a string (a folder)")
    on_error = telemetry.get("on_error", "fail")
    if on_error not in ("fail", "skip"):
        raise ConfigError(f'{where}: telemetry.on_error must be "fail" or "skip"')
    keep_published = telemetry.get("keep_published", True)
    if not isinstance(keep_published, bool):
        raise ConfigError(f"{where}: telemetry.keep_published must be true or false")

    attempt_keys = string_list(
        attribution.get("attempt_tag_keys", ["user_attempt_id"]),
        f"{where}: attribution.attempt_tag_keys",
    )
    experiment_keys = string_list(
        attribution.get("experiment_tag_keys", ["user_experiment_id"]),
        f"{where}: attribution.experiment_tag_keys",
    )
    resource_time = attribution.get("resource_time", True)
    if not isinstance(resource_time, bool):
        raise ConfigError(f"{where}: attribution.resource_time must be true or false")

    warehouse_path = _resolve_path(
        warehouse.get("path", "warehouse"), base, "warehouse.path", where
    )
    telemetry_folder = (
        None
        if telemetry_path is None
        else _resolve_path(telemetry_path, base, "telemetry.path", where)
    )
    sources = _parse_sources(telemetry.get("sources", []), base, where)
    _check_warehouse_apart(warehouse_path, telemetry_folder, sources, where)

    pools = parse_pools(data.get("pools", []), where)
    allocation_exclude = parse_allocation(data.get("allocation", {}), where)
    engine, engine_options = parse_engine(data, where)

    return Config(
        path=path,
        warehouse=warehouse_path,
        providers={
            provider.name: provider.parse(data.get(provider.section, {}), base, where)
            for provider in PROVIDERS
        },
        telemetry=telemetry_folder,
        telemetry_sources=sources,
        telemetry_on_error=on_error,
        telemetry_keep_published=keep_published,
        attempt_tag_keys=tuple(attempt_keys),
        experiment_tag_keys=tuple(experiment_keys),
        resource_time=resource_time,
        pools=pools,
        allocation_exclude=allocation_exclude,
        memory_limit=memory_limit,
        threads=threads,
        resource_partitions=partitions,
        lock_timeout_seconds=float(lock_timeout),
        raw_retention_days=retention,
        economics=_parse_economics(data.get("economics", {}), where),
        periods=parse_period_settings(data, base, where),
        engine=engine,
        engine_options=engine_options,
        raw=data,
    )


def _parse_economics(section: dict[str, Any], where: str) -> Economics:
    values: dict[str, float] = {}
    for key in sorted(section):
        value = section[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(
                f"{where}: economics.{key} must be a number above 0, such as "
                f"{getattr(Economics(), key)} (the default)"
            )
        values[key] = float(value)
    return Economics(**values)


def _parse_sources(value: Any, base: Path, where: str) -> tuple[TelemetrySource, ...]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ConfigError(f"{where}: telemetry.sources must be [[telemetry.sources]] tables")
    sources = []
    for number, item in enumerate(value, start=1):
        what = f"{where}: telemetry.sources[{number}]"
        unknown = sorted(set(item) - {"kind", "path", "options"})
        if unknown or item.get("kind") not in TELEMETRY_SOURCE_KINDS:
            raise ConfigError(
                f"{what}: needs kind = one of {', '.join(TELEMETRY_SOURCE_KINDS)}, optional path "
                "and "
                f"[telemetry.sources.options]; found keys {', '.join(sorted(item))}"
            )
        options = item.get("options", {})
        if not isinstance(options, dict):
            raise ConfigError(f"{what}: options must be a table")
        path = item.get("path")
        if path is not None and not isinstance(path, str):
            raise ConfigError(f"{what}: path must be a string")
        resolved = None if path is None else _resolve_path(path, base, "path", what)
        sources.append(TelemetrySource(item["kind"], resolved, options))
    return tuple(sources)


def _check_warehouse_apart(
    warehouse: Path,
    telemetry: Path | None,
    sources: tuple[TelemetrySource, ...],
    where: str,
) -> None:
    """The warehouse may not lie in a telemetry folder: exporters rewrite that folder, and an
    adapter reading a folder would read the warehouse's files as telemetry."""
    folders = [("telemetry.path", telemetry)] + [
        (f"telemetry.sources[{number}].path", source.path)
        for number, source in enumerate(sources, start=1)
    ]
    for key, folder in folders:
        if folder is not None and warehouse.is_relative_to(folder):
            raise ConfigError(
                f"{where}: warehouse.path {warehouse} lies inside {key} {folder}; the telemetry "
                "folder is the exporters' to rewrite and runcost reads it as telemetry, so the "
                f"warehouse must live apart: set warehouse.path to a folder outside {folder}"
            )


def _resolve_path(value: Any, base: Path, key: str, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string (a folder)")
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else (base / candidate).resolve()


def _provider_defaults() -> dict[str, Any]:
    return {provider.name: provider.default for provider in PROVIDERS}
