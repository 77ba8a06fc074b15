"""The run manifest (runs/<run_id>/manifest.json): what a run read, did and produced."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# a running run's record is written padded to this size (JSON allows trailing spaces), so that
# its outcome can be written over it in place on a full disk (rewrite_in_place); a failed run's
# record is 1-2 KB without its inputs
RESERVED_BYTES = 16_384
# what a record written in place keeps when the whole record does not fit
OUTCOME_FIELDS = (
    "run_id",
    "runcost_version",
    "config_file",
    "config_fingerprint",
    "config_hash",
    "clock",
    "started_at",
    "status",
    "pid",
    "allow_shrink",
    "error",
    "finished_at",
    "stage_seconds",
)


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class RunManifest:
    """One run's record. Fields the run never reached are not written (a failed run has no
    outputs); a field it set is written even when None (previous_snapshot: there was none)."""

    run_id: str
    runcost_version: str
    config_file: str | None
    config_fingerprint: str
    config_hash: str
    clock: str
    started_at: str = field(default_factory=now_text)
    status: str = "running"  # published, unchanged, failed, failed_checks (interrupted: recovery)
    pid: int = field(default_factory=os.getpid)
    allow_shrink: list[str] | None = None  # runcost run --allow-shrink: periods allowed once
    # the current snapshot's damaged files this run found and publishes whole again
    repaired: list[dict[str, str | None]] | None = None
    inputs: dict[str, Any] | None = None
    previous_snapshot: str | None = None
    code_hash: str | None = None
    model_seconds: dict[str, float] | None = None
    checks: dict[str, str] | None = None
    totals: list[dict[str, str]] | None = None
    periods: list[dict[str, str]] | None = None
    estimates: dict[str, object] | None = None
    unchanged_from: str | None = None
    # per billing month: built or carried forward, why, and whether its rows changed
    period_builds: dict[str, dict[str, object]] | None = None
    catalog: str | None = None
    error: str | None = None
    finished_at: str | None = None
    stage_seconds: dict[str, float] | None = None
    outputs: dict[str, int] | None = None
    content_hashes: dict[str, str] | None = None
    content_hash: str | None = None
    snapshot: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "_reached", {"config_file"})

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if hasattr(self, "_reached"):
            self._reached.add(name)

    def finish(self, status: str, stage_seconds: dict[str, float], **fields: Any) -> None:
        """Record how the run ended (and what it produced; None values are not recorded)."""
        self.status, self.stage_seconds, self.finished_at = status, stage_seconds, now_text()
        for name, value in fields.items():
            if not hasattr(self, name):
                raise AttributeError(f"RunManifest has no field {name}")
            if value is not None:
                setattr(self, name, value)

    def record(self) -> dict[str, Any]:
        return {
            name: value
            for name, value in asdict(self).items()
            if value is not None or name in self._reached
        }

    def write(self, run_dir: Path) -> Path:
        """Write the record; a running run's keeps RESERVED_BYTES for its outcome."""
        reserve = RESERVED_BYTES if self.status == "running" else 0
        return write_manifest(run_dir, self.record(), reserve)


def write_manifest(run_dir: Path, manifest: dict[str, Any], reserve: int = 0) -> Path:
    """Write a run's manifest.json atomically (readers see the old or the new one), padded with
    spaces (still JSON) to ``reserve`` bytes."""
    path = run_dir / "manifest.json"
    temporary = run_dir / ".manifest.json.tmp"
    temporary.write_bytes(_encoded(manifest).ljust(reserve, b" "))
    temporary.replace(path)
    return path


def rewrite_in_place(run_dir: Path, manifest: dict[str, Any]) -> bool:
    """Write ``manifest`` over runs/<run_id>/manifest.json within the bytes it holds already,
    for a full disk, where the new file write_manifest writes gets no block: rewriting blocks
    a file has needs none. A record too long keeps only OUTCOME_FIELDS (the others named in
    ``left_out``), then only the start of its error; False when even that does not fit."""
    path = run_dir / "manifest.json"
    size = path.stat().st_size
    content = _fitting(manifest, size)
    if content is None:
        return False
    with path.open("r+b") as handle:  # not truncated: the old bytes past the record are spaces
        handle.write(content.ljust(size, b" "))
    return True


def _fitting(manifest: dict[str, Any], size: int) -> bytes | None:
    content = _encoded(manifest)
    if len(content) <= size:
        return content
    kept = {name: value for name, value in manifest.items() if name in OUTCOME_FIELDS}
    kept["left_out"] = [name for name in manifest if name not in OUTCOME_FIELDS]
    content = _encoded(kept)
    error = str(kept.get("error") or "")
    if len(content) > size and error:
        room = len(error) - (len(content) - size) - 3
        if room <= 0:
            return None
        kept["error"] = error[:room] + "..."
        content = _encoded(kept)
    return content if len(content) <= size else None


def _encoded(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, default=str) + "\n").encode("utf-8")
