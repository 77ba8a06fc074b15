"""A publish switch whose renames fail on demand, for the tests of what a failed switch leaves."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.warehouse import publish as publish_module


def failing_switch(monkeypatch: pytest.MonkeyPatch, fails: Callable[[int], bool]) -> list[str]:
    """Make the Nth os.replace inside the publish switch raise where ``fails(N)``; returns the
    renames tried, by target name."""
    real_switch, real_replace, tried = publish_module.switch, os.replace, []

    def replace(source: object, target: object) -> None:
        tried.append(Path(str(target)).name)
        if fails(len(tried)):
            raise PermissionError(errno.EACCES, "Permission denied", str(source), None, str(target))
        real_replace(source, target)

    def switch(*args: object) -> None:
        with monkeypatch.context() as patched:
            patched.setattr(os, "replace", replace)
            real_switch(*args)

    monkeypatch.setattr(publish_module, "switch", switch)
    return tried
