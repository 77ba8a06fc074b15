"""The provider registry as a rule: each provider is one package found through
pipeline/ingest/registry.py, and the run, config, CLI and DAG reach it only through the registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_layout import PIPELINE, graph, package_of

from pipeline.common.errors import ConfigError
from pipeline.config.loader import parse_config
from pipeline.ingest.provider import Provider
from pipeline.ingest.registry import BY_NAME, PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
STAGING = ROOT / "sql" / "staging"
_STAGING_READ = re.compile(r"staging\.(\w+)")


def test_names_sections_and_source_formats_are_each_one_providers() -> None:
    for field in ("name", "section", "source_format"):
        values = [getattr(provider, field) for provider in PROVIDERS]
        assert len(set(values)) == len(values), field
    assert set(BY_NAME) == {provider.name for provider in PROVIDERS}


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda provider: provider.name)
def test_a_provider_owns_its_staging_models_and_no_other(provider: Provider) -> None:
    """Its staging_models are its sql/staging/<name>_*.sql, all of them."""
    files = {path.stem for path in STAGING.glob(f"{provider.name}_*.sql")}
    assert set(provider.staging_models) == files


@pytest.mark.parametrize(
    ("union", "suffix"),
    [("provider_cost_lines", "cost_lines"), ("provider_line_profiles", "line_profiles")],
)
def test_the_provider_unions_read_every_registered_provider(union: str, suffix: str) -> None:
    """A provider added to the registry but not to the unions would publish none of its lines."""
    read = set(_STAGING_READ.findall((STAGING / f"{union}.sql").read_text(encoding="utf-8")))
    assert read == {f"{provider.name}_{suffix}" for provider in PROVIDERS}
    for provider in PROVIDERS:
        assert f"{provider.name}_{suffix}" in provider.staging_models


def test_run_config_cli_and_dag_reach_a_provider_only_through_the_registry() -> None:
    """No module of run/, config/, cli/ or dag/ imports a provider's package."""
    packages = {f"pipeline.ingest.{provider.name}" for provider in PROVIDERS}
    found = [
        f"{module} imports {target}"
        for module, targets in graph(PIPELINE).items()
        if package_of(module) in ("run", "config", "cli", "dag")
        for target in targets
        if any(target == name or target.startswith(f"{name}.") for name in packages)
    ]
    assert found == []


def test_each_section_is_parsed_by_its_provider(tmp_path: Path) -> None:
    config = parse_config(
        {
            "aws": {"exports": ["cur/export"], "region": "eu-west-1"},
            "gcp": {"files": ["gcp/*.json"]},
            "focus": {"files": ["focus/*.csv"]},
        },
        base=tmp_path,
    )
    assert config.providers["aws"].exports == (str((tmp_path / "cur/export").resolve()),)
    assert config.providers["gcp"].files == (str(tmp_path / "gcp/*.json"),)
    assert [source.name for source in config.providers["focus"]] == ["focus"]
    # a section left out takes the provider's defaults
    assert parse_config({}, base=tmp_path).providers == {
        provider.name: provider.default for provider in PROVIDERS
    }


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda provider: provider.name)
def test_an_unknown_key_names_the_providers_allowed_keys(provider: Provider, tmp_path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({provider.section: {"nonsense": 1}}, base=tmp_path)
    assert str(caught.value) == (
        f"runcost.toml: unknown key {provider.section}.nonsense; allowed in "
        f"[{provider.section}]: {', '.join(sorted(provider.keys))}"
    )
