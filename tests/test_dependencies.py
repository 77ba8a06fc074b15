"""Every package runcost imports at module level is declared in pyproject.toml's dependencies.

A package that only arrives through another one's requirements disappears when that one drops it,
and `pip install -e .` on a fresh machine then fails at the first import (numpy left pyarrow's
requirements this way). Imports inside functions are the optional extras' (pyspark, the BigQuery
Storage client) and are guarded where they are made.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "schemas")


def module_level_imports() -> dict[str, Path]:
    """Third-party top-level modules imported at module level, each with a file importing it."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PACKAGES:
                        found.setdefault(top, path.relative_to(ROOT))
    return found


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {normal(re.split(r"[<>=!~\[ ;]", spec)[0]) for spec in project["dependencies"]}


def normal(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def test_every_module_level_import_is_a_declared_dependency() -> None:
    distributions = importlib.metadata.packages_distributions()
    wanted = declared()
    missing = []
    for module, path in module_level_imports().items():
        providers = {normal(name) for name in distributions.get(module, [])}
        assert providers, f"{module} (imported by {path}) is not installed"
        if not providers & wanted:
            missing.append(f"{module} (imported by {path}; from {sorted(providers)})")
    assert not missing, "add to [project] dependencies in pyproject.toml: " + ", ".join(missing)


def test_the_check_sees_imports() -> None:
    imports = module_level_imports()
    assert {"duckdb", "pyarrow", "numpy"} <= set(imports)
    assert "pipeline" not in imports and "os" not in imports
