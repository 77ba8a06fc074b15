"""Model tests: a build fixture over the shared builders (tests/ is on pytest's pythonpath)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import builders
import pytest


@pytest.fixture
def build(tmp_path: Path) -> Callable[..., Any]:
    """build(lines, attempts, resources, experiments=None, config=None) -> (con, report)."""
    return lambda *args, **kwargs: builders.build_models(tmp_path, *args, **kwargs)


@pytest.fixture(scope="module")
def build_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """Like build, for module-scoped fixtures that build one DAG for many test cases."""
    return lambda *args, **kwargs: builders.build_models(
        tmp_path_factory.mktemp("build"), *args, **kwargs
    )
