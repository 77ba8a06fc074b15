"""Model tests: put tests/ on sys.path for the shared builders, and a build fixture."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import builders  # noqa: E402


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
