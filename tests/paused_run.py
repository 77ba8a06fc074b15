"""Test support: `runcost ARGS` in a child process whose run waits at one checkpoint.

python tests/paused_run.py POINT MARKER ARGS...: on reaching POINT (a stage, publish:snapshot,
publish:database, publish:pointer, publish:prune or manifest) the run writes MARKER and waits while
it exists (at most LIMIT seconds), so a test can kill it there or read the warehouse. The
checkpoint is injected through run_pipeline's parameter; the product reads no test switch.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path

from pipeline.cli import main
from pipeline.run import nightly

LIMIT = 120


def wait_at(point: str, marker: Path, reached: str) -> None:
    """The checkpoint: wait at ``point`` while ``marker`` exists."""
    if reached != point:
        return
    marker.write_text(f"{reached} {os.getpid()}\n", encoding="utf-8")
    deadline = time.monotonic() + LIMIT
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


if __name__ == "__main__":
    point, marker, *args = sys.argv[1:]
    checkpoint = functools.partial(wait_at, point, Path(marker))
    nightly.run_pipeline = functools.partial(nightly.run_pipeline, checkpoint=checkpoint)
    sys.argv = ["runcost", *args]
    main()
