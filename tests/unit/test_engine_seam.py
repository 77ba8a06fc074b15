"""The run never names an engine: it opens the configured one through the registry and reads
what it needs from the engine's BuildOutcome, so an engine added to the registry needs no
change in pipeline/run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipeline.config.engine import ENGINES

RUN = Path(__file__).resolve().parents[2] / "pipeline" / "run"
# what the run may import of pipeline.dag.engines: the interface and the registry's factory
SEAM = {"pipeline.dag.engines.base", "pipeline.dag.engines.factory"}
PROBES = {"getattr", "hasattr", "isinstance"}


def engine_names_used(source: str, names: tuple[str, ...]) -> list[str]:
    """Where ``source`` names an engine, each as `line: what`.

    A name is an engine's when it is a string (`engine.name == "duckdb"`), an attribute
    (`config.spark`), a variable, or an engine package imported; the same word as a library
    the module imports (`import duckdb`, for the build database) is not the engine. Also found:
    an engine's `.name` read and an engine probed with getattr, hasattr or isinstance.
    """
    tree = ast.parse(source)
    libraries = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [f"{line}: {word!r}" for word in names if node.value.lower() == word]
        elif isinstance(node, ast.Attribute):
            if node.attr.lower() in names:
                found.append(f"{line}: .{node.attr}")
            if node.attr == "name" and "engine" in ast.unparse(node.value).lower():
                found.append(f"{line}: {ast.unparse(node)}")
        elif isinstance(node, ast.Name) and node.id.lower() in names and node.id not in libraries:
            found.append(f"{line}: {node.id}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "pipeline.dag.engines"
        ):
            if node.module not in SEAM:
                found.append(f"{line}: from {node.module} import ...")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in PROBES
            and node.args
            and "engine" in ast.unparse(node.args[0]).lower()
        ):
            found.append(f"{line}: {ast.unparse(node)}")
    return found


def test_the_run_never_names_an_engine() -> None:
    names = tuple(ENGINES)
    found = {
        path.name: used
        for path in sorted(RUN.glob("*.py"))
        if (used := engine_names_used(path.read_text(encoding="utf-8"), names))
    }
    assert found == {}


def test_the_run_never_mentions_an_engine_it_does_not_import() -> None:
    """Not even in a comment: `duckdb` is the library of the build database in pipeline/run,
    any other engine's name has no business there."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in sorted(RUN.glob("*.py")))
    words = [name for name in ENGINES if name != "duckdb" and name in text.lower()]
    assert words == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('if engine.name == "duckdb":\n    pass\n', ["1: engine.name", "1: 'duckdb'"]),
        ('import duckdb\nif config.engine == "spark":\n    pass\n', ["2: 'spark'"]),
        ("catalog = config.spark.catalog\n", ["1: .spark"]),
        (
            'files = getattr(engine, "published_files", {})\n',
            ["1: getattr(engine, 'published_files', {})"],
        ),
        (
            "from pipeline.dag.engines.spark import SparkEngine\n",
            ["1: from pipeline.dag.engines.spark import ..."],
        ),
        (
            "from pipeline.dag.engines import duckdb\n",
            [
                "1: from pipeline.dag.engines import ...",
            ],
        ),
        ("spark = None\n", ["1: spark"]),
        # the DuckDB library of the build database, and the interface and factory, are fine
        (
            "import duckdb\n"
            "from pipeline.dag.engines.base import BuildOutcome, Engine\n"
            "from pipeline.dag.engines.factory import open_engine\n"
            "con: duckdb.DuckDBPyConnection = duckdb.connect('runcost.duckdb')\n"
            "if outcome.in_connection:\n    pass\n",
            [],
        ),
    ],
)
def test_the_rule_finds_an_engine_named(source: str, expected: list[str]) -> None:
    assert sorted(engine_names_used(source, ("duckdb", "spark"))) == sorted(expected)
