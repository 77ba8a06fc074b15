"""The code map as a rule: each pipeline package imports only the packages below it, no circles.

The map is the table between the code-map markers in docs/architecture.md, read here, so the doc
and the rule cannot drift. A change that needs an upward import belongs in a higher package (or
moves the shared piece down); a new package needs its row in that table.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

from pipeline.config.loader import TELEMETRY_SOURCE_KINDS
from pipeline.telemetry.adapters import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "pipeline"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
_CODE_MAP = re.compile(r"<!-- code-map: begin[^\n]*-->\n(.*?)<!-- code-map: end -->", re.DOTALL)
_NAME = re.compile(r"`([a-z_]+)`")


def code_map(text: str) -> dict[str, set[str]]:
    """package -> the packages it may import, from the `| package | ... | may import |` table."""
    found = _CODE_MAP.search(text)
    if found is None:
        raise ValueError("no table between <!-- code-map: begin --> and <!-- code-map: end -->")
    allowed: dict[str, set[str]] = {}
    for line in found.group(1).strip().splitlines()[2:]:  # below the header and its rule
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        package, may_import = _NAME.fullmatch(cells[0]), cells[-1]
        names = _NAME.findall(may_import)
        if package is None or may_import != (", ".join(f"`{n}`" for n in names) or "nothing"):
            raise ValueError(f"code map row {line!r}: write `package` | ... | `a`, `b` or nothing")
        allowed[package.group(1)] = set(names)
    return allowed


# package -> the packages it may import (besides itself and the `pipeline` root's __version__)
ALLOWED = code_map(ARCHITECTURE.read_text(encoding="utf-8"))
ENTRY_POINTS = {"__init__.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PIPELINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every pipeline module a file imports, at module level or inside a function."""
    found = set()
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    )
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("pipeline")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith("pipeline"):
                # `from pipeline.x import y` imports the module pipeline.x.y if there is one
                found |= {target} | {f"{target}.{alias.name}" for alias in node.names}
    return found


def graph(root: Path = PIPELINE) -> dict[str, set[str]]:
    """module -> the pipeline modules it imports (only names that are modules)."""
    files = {module_name(path): path for path in root.rglob("*.py")}
    return {name: _resolve(imports_of(path), files, name) for name, path in files.items()}


def _resolve(found: set[str], files: dict[str, Path], name: str) -> set[str]:
    # `from pipeline.report import data` names the module pipeline.report.data, not the package
    modules = {item for item in found if item in files and item != name}
    return {item for item in modules if not any(other.startswith(f"{item}.") for other in modules)}


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Imports that go up the map, or into a package the map does not know."""
    found = []
    for module, targets in sorted(edges.items()):
        source = package_of(module)
        for target in sorted(targets):
            wanted = package_of(target)
            if source is None or wanted is None or wanted == source:
                continue  # the root package (only __version__) and imports within a package
            if source not in ALLOWED or wanted not in ALLOWED[source]:
                found.append(
                    f"{module} imports {target}: {source} may import only "
                    f"{', '.join(sorted(ALLOWED.get(source, set()))) or 'nothing'}"
                )
    return found


def cycles(edges: dict[str, set[str]]) -> str | None:
    # the root package's __init__ imports nothing; imports of it are for __version__ only
    try:
        graphlib.TopologicalSorter(
            {name: targets - {"pipeline"} for name, targets in edges.items()}
        ).prepare()
    except graphlib.CycleError as error:
        return " -> ".join(error.args[1])
    return None


def test_no_package_imports_a_package_above_it() -> None:
    assert violations(graph()) == []


def test_no_import_circles() -> None:
    assert cycles(graph()) is None


def test_only_entry_points_sit_directly_in_pipeline() -> None:
    loose = sorted(path.name for path in PIPELINE.glob("*.py") if path.name not in ENTRY_POINTS)
    assert loose == []
    packages = {
        path.parent.relative_to(PIPELINE).parts[0]
        for path in PIPELINE.rglob("*.py")
        if path.parent != PIPELINE
    }
    assert packages == set(ALLOWED), "a new package needs its row in the code map"


def test_the_map_is_a_hierarchy_of_known_packages() -> None:
    unknown = {name for targets in ALLOWED.values() for name in targets} - set(ALLOWED)
    assert unknown == set()
    graphlib.TopologicalSorter(ALLOWED).prepare()  # raises CycleError on a circle in the map


def test_the_map_is_read_from_its_table() -> None:
    text = (
        "prose\n<!-- code-map: begin (read by a test) -->\n"
        "| package | what it owns | may import |\n|---|---|---|\n"
        "| `common` | errors | nothing |\n| `run` | the job: `nightly.py` | `common`, `dag` |\n"
        "<!-- code-map: end -->\n| `cli` | outside the markers | `run` |\n"
    )
    assert code_map(text) == {"common": set(), "run": {"common", "dag"}}
    with pytest.raises(ValueError, match="no table between"):
        code_map("| `common` | errors | nothing |\n")
    with pytest.raises(ValueError, match="code map row"):
        code_map(text.replace("`common`, `dag`", "common and dag"))


def test_no_module_is_over_400_lines() -> None:
    long = {
        module_name(path): count
        for path in PIPELINE.rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 420
    }
    assert long == {}


def test_config_knows_every_telemetry_adapter_kind() -> None:
    assert set(TELEMETRY_SOURCE_KINDS) == set(REGISTRY)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # an upward import: the warehouse reaching into the run
        (
            {
                "warehouse/publish.py": "from pipeline.run.record import totals\n",
                "run/record.py": "",
            },
            "pipeline.warehouse.publish imports pipeline.run.record",
        ),
        # a package the map does not know
        (
            {"extras/thing.py": "", "run/nightly.py": "import pipeline.extras.thing\n"},
            "pipeline.run.nightly imports pipeline.extras.thing",
        ),
    ],
)
def test_the_rule_catches_an_upward_import(tmp_path: Path, files: dict, expected: str) -> None:
    root = _tree(tmp_path, files)
    found = violations(_graph_at(root))
    assert len(found) == 1 and found[0].startswith(expected)


def test_the_rule_catches_a_circle(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "dag/models.py": "from pipeline.dag.build import build\n",
            "dag/build.py": "def build():\n    from pipeline.dag import models\n",
        },
    )
    assert cycles(_graph_at(root)) is not None


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pipeline"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(text, encoding="utf-8")
    return root


def _graph_at(root: Path) -> dict[str, set[str]]:
    files = {
        ".".join(("pipeline", *path.relative_to(root).with_suffix("").parts)).removesuffix(
            ".__init__"
        ): path
        for path in root.rglob("*.py")
    }
    return {name: _resolve(_imports(path, name), files, name) for name, path in files.items()}


def _imports(path: Path, name: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found
