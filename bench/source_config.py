"""The runcost.toml of a world whose bill is not a CUR: its bill section, the world's telemetry,
the tag keys as written on resources, and the control-plane pool of the world's cluster."""

from __future__ import annotations

from pathlib import Path

ATTEMPT_KEY, EXPERIMENT_KEY = "attempt-id", "experiment-id"


def source_config_text(
    *,
    writer: str,
    warehouse: Path,
    bill: str,
    telemetry: Path,
    pool: tuple[str, str],
    memory_limit: str | None = None,
) -> str:
    """``bill``: the source's section ([focus] or [gcp]); ``pool``: (name, the control plane's
    service_name)."""
    limit = f'memory_limit = "{memory_limit}"\n' if memory_limit else ""
    name, service = pool
    return f"""\
# Written by {writer}.
[warehouse]
path = "{warehouse}"
{limit}
{bill}
[telemetry]
path = "{telemetry}"

[attribution]
attempt_tag_keys = ["{ATTEMPT_KEY}"]
experiment_tag_keys = ["{EXPERIMENT_KEY}"]

[[pools]]
name = "{name}"
selector = "service_name = '{service}'"
driver = "gpu_seconds"
spread = "charge_period"
"""
