"""A run's progress: the events the CLI displays, stage timing, and the checkpoint calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Progress = Callable[[str], None]
# A checkpoint is called with each point a run reaches: the STAGES, then publish:snapshot,
# publish:database, publish:pointer and publish:prune inside publish, and manifest. The reliability
# tests pass one that waits there, so they can kill the run or read the warehouse at that point.
Checkpoint = Callable[[str], None]
STAGES = ("ingest", "telemetry", "build", "checks", "publish")


@dataclass(frozen=True)
class RunEvent:
    """Progress of a run: a stage starts (with its number of steps), takes a step, or ends."""

    stage: str
    kind: str  # "start", "step" or "done"
    message: str
    total: int | None = None
    seconds: float | None = None


class Events:
    """Sends progress to both callbacks, times stages, and calls the checkpoint at each stage."""

    def __init__(
        self,
        progress: Progress | None,
        on_event: Callable[[RunEvent], None] | None,
        stages: dict[str, float],
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.checkpoint: Checkpoint = checkpoint or (lambda _point: None)
        self.progress = progress or (lambda _message: None)
        self.on_event = on_event or (lambda _event: None)
        self.stages = stages
        self.started: dict[str, float] = {}

    def start(self, stage: str, message: str, total: int | None = None) -> None:
        self.checkpoint(stage)
        self.started[stage] = time.perf_counter()
        self.progress(f"{stage}: {message}")
        self.on_event(RunEvent(stage, "start", message, total=total))

    def step(self, stage: str, message: str) -> None:
        self.progress(f"build: {message}")  # steps are models and checks; see cli.app._progress
        self.on_event(RunEvent(stage, "step", message))

    def done(self, stage: str, message: str, seconds: float | None = None) -> None:
        if seconds is None:
            seconds = time.perf_counter() - self.started[stage]
        self.stages[stage] = seconds
        self.on_event(RunEvent(stage, "done", message, seconds=seconds))

    def rounded(self) -> dict[str, float]:
        """Seconds per stage so far, as the manifest records them."""
        return rounded(self.stages)


def rounded(seconds: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 4) for name, value in seconds.items()}
