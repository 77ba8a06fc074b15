"""A world whose bill is not a CUR: its runcost.toml (its bill section, the world's telemetry,
the tag keys as written on resources, the control-plane pool of the world's cluster) and its
expected.json (the bill's own totals beside the CUR world's telemetry counts)."""

from __future__ import annotations

from pathlib import Path

ATTEMPT_KEY, EXPERIMENT_KEY = "attempt-id", "experiment-id"
# what the CUR world's expected.json says of the world itself, whatever the bill's format
KEPT = ("spec", "billing_period", "attempts", "attempt_resources")
# the totals a bill's expected.json holds, in the order a world's query returns them
COUNTS = ("cost_lines", "tagged_lines")


def expected_bill(cur_expected: dict, names: tuple[str, ...], row: tuple) -> dict:
    """expected.json of a world: ``row`` (the bill's totals, named by ``names``; amounts as
    exact decimal text) beside the CUR world's spec and telemetry counts."""
    totals = {
        name: value if name in COUNTS else str(value)
        for name, value in zip(names, row, strict=True)
    }
    return {name: cur_expected[name] for name in KEPT} | totals


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
