"""Fixtures of the reliability tests: what clean runs publish, to compare recovered runs with."""

from __future__ import annotations

from pathlib import Path

import pytest
from worlds import change_telemetry, make_world, published_hashes, run_in_process

from pipeline.config.loader import load_config


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario written once; make_world copies it."""
    return make_world(tmp_path_factory.mktemp("template") / "world").parent


@pytest.fixture(scope="session")
def reference_hashes(tmp_path_factory: pytest.TempPathFactory, template: Path) -> dict[str, str]:
    """What one clean run on the scenario publishes."""
    config = make_world(tmp_path_factory.mktemp("reference") / "world", template)
    assert run_in_process(config) == "published"
    return published_hashes(load_config(config).warehouse)


@pytest.fixture(scope="session")
def changed_hashes(tmp_path_factory: pytest.TempPathFactory, template: Path) -> dict[str, str]:
    """What one clean run publishes with the changed telemetry."""
    config = make_world(tmp_path_factory.mktemp("changed") / "world", template)
    change_telemetry(config)
    assert run_in_process(config) == "published"
    return published_hashes(load_config(config).warehouse)
