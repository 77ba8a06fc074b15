"""The published contract: docs/data-dictionary.md names every published column with its type."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from pipeline.config.loader import load_config
from pipeline.dag.models import discover, intermediates
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database

ROOT = Path(__file__).resolve().parent.parent
DICTIONARY = ROOT / "docs" / "data-dictionary.md"
HEADING = re.compile(r"^(#{2,3}) `?([a-z_]+\.[a-z_]+)`?\s*$")
# a model built for later models and never published (`-- materialized: intermediate`)
BUILD_STEP = re.compile(r"^(#{2,3}) `?([a-z_]+\.[a-z_]+)`? \(build step, not published\)\s*$")
ANY_HEADING = re.compile(r"^#{1,3} ")
# the FOCUS sample's header (FOCUS 1.0) and the FOCUS 1.2 and 1.3 names normalized.focus exports
FOCUS_COLUMNS = {
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName",
    "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass",
    "ChargeDescription", "ChargePeriodEnd", "ChargePeriodStart", "ConsumedQuantity",
    "ConsumedUnit", "ContractedCost", "EffectiveCost", "InvoiceId", "InvoiceIssuerName",
    "ListCost", "PricingUnit", "ProviderName", "PublisherName", "RegionId", "ResourceId",
    "ServiceName", "SkuId", "SubAccountId", "SubAccountName", "Tags", "ChargeFrequency",
    "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName",
    "CommitmentDiscountStatus", "CommitmentDiscountType", "ContractedUnitPrice", "ListUnitPrice",
    "PricingCategory", "PricingQuantity", "RegionName", "ResourceName", "ResourceType",
    "ServiceCategory", "SkuPriceId", "BillingAccountType", "CapacityReservationId",
    "CapacityReservationStatus", "CommitmentDiscountQuantity", "CommitmentDiscountUnit",
    "PricingCurrency", "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice", "ServiceSubcategory", "SkuMeter", "SkuPriceDetails",
    "SubAccountType",
    # FOCUS 1.3
    "AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId", "AllocatedResourceName",
    "AllocatedTags", "ContractApplied", "HostProviderName", "ServiceProviderName",
}  # fmt: skip


def documented_tables(text: str) -> dict[str, dict[str, str]]:
    """schema.table -> {column: type} from each table's `| column | type |` table."""
    tables: dict[str, dict[str, str]] = {}
    current: str | None = None
    in_table = False
    for line in text.splitlines():
        heading = HEADING.match(line)
        if heading or ANY_HEADING.match(line):
            current = heading.group(2) if heading else None
            in_table = False
            if current:
                tables[current] = {}
            continue
        if current is None:
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[:2] == ["column", "type"]:
            in_table = not tables[current]  # only the first column table of a section
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        if in_table and not set(cells[0]) <= set("-: "):
            for name in re.findall(r"`([^`]+)`", cells[0]):
                tables[current][name] = cells[1]
    return tables


def normalize_type(text: str) -> str:
    """DuckDB's spelling of a type, whichever way the dictionary writes it."""
    compact = re.sub(r"\s+", "", text.upper())
    return compact.replace("TIMESTAMPTZ", "TIMESTAMPWITHTIMEZONE")


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    from pipeline.run.nightly import run_pipeline

    folder = tmp_path_factory.mktemp("contract")
    result = run_pipeline(load_config(write_scenario(folder)))
    con = open_database(result.database)
    yield con
    con.close()


@pytest.fixture(scope="module")
def published_columns(published: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    tables = published.execute(
        "select table_schema || '.' || table_name from information_schema.tables order by 1"
    ).fetchall()
    return {
        name: {row[0]: str(row[1]) for row in published.execute(f"describe {name}").fetchall()}
        for (name,) in tables
    }


@pytest.fixture(scope="module")
def dictionary() -> dict[str, dict[str, str]]:
    return documented_tables(DICTIONARY.read_text(encoding="utf-8"))


def test_the_parser_reads_names_and_types() -> None:
    text = (
        "## marts.example\n\n| column | type | meaning |\n|---|---|---|\n"
        "| `a` | VARCHAR | x |\n| `b`, `c` | DECIMAL(38,10) | y |\n\n"
        "| column | type | meaning |\n|---|---|---|\n| `ignored` | INT | a second table |\n"
        "## Prose\n| `not_a_column` | X | |\n"
    )
    assert documented_tables(text) == {
        "marts.example": {"a": "VARCHAR", "b": "DECIMAL(38,10)", "c": "DECIMAL(38,10)"}
    }
    assert normalize_type("TIMESTAMPTZ") == "TIMESTAMPWITHTIMEZONE"
    assert normalize_type("MAP(VARCHAR, VARCHAR)") == "MAP(VARCHAR,VARCHAR)"


def test_every_published_table_is_documented(
    published_columns: dict[str, dict[str, str]], dictionary: dict[str, dict[str, str]]
) -> None:
    missing = sorted(set(published_columns) - set(dictionary))
    assert missing == [], f"add a section with a | column | type | table to {DICTIONARY.name}"


def test_every_documented_table_is_published(
    published_columns: dict[str, dict[str, str]], dictionary: dict[str, dict[str, str]]
) -> None:
    assert sorted(set(dictionary) - set(published_columns)) == []


def test_columns_and_types_match_the_dictionary(
    published_columns: dict[str, dict[str, str]], dictionary: dict[str, dict[str, str]]
) -> None:
    drift = []
    for table, columns in sorted(published_columns.items()):
        documented = dictionary.get(table, {})
        for name, kind in columns.items():
            if name not in documented:
                drift.append(f"{table}.{name} ({kind}) is published but not documented")
            elif normalize_type(documented[name]) != normalize_type(kind):
                drift.append(f"{table}.{name} is {kind}, documented as {documented[name]}")
        for name in documented.keys() - columns.keys():
            drift.append(f"{table}.{name} is documented but not published")
    assert drift == [], "\n".join(drift)


def test_the_contract_is_versioned() -> None:
    text = DICTIONARY.read_text(encoding="utf-8")
    version = re.search(r"^Contract version: (\d+)$", text, re.MULTILINE)
    assert version, "the dictionary states `Contract version: N` on a line of its own"
    changelog = text.split("## Contract changelog", 1)
    assert len(changelog) == 2, "the dictionary has a `## Contract changelog` section"
    entries = re.findall(r"^### Version (\d+)\b", changelog[1], re.MULTILINE)
    assert entries and int(entries[0]) == int(version.group(1)), (
        "the newest changelog entry (first) is the current contract version"
    )


def test_focus_export_uses_focus_names(published_columns: dict[str, dict[str, str]]) -> None:
    columns = published_columns["normalized.focus"]
    assert columns.keys() >= FOCUS_COLUMNS
    extensions = [name for name in columns if name not in FOCUS_COLUMNS]
    assert extensions == [
        "x_AttemptTag",
        "x_ExperimentTag",
        "x_LineId",
        "x_ProviderLineType",
        "x_SourceDelivery",
        "x_SourceFormat",
    ], "custom columns carry the x_ prefix and come after the FOCUS columns"
    for money in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost"):
        assert columns[money] == "DECIMAL(38,10)"
    assert columns["Tags"] == "JSON"


def test_focus_export_keeps_every_line_and_total(published: duckdb.DuckDBPyConnection) -> None:
    """Every line once, plus a row per unused commitment fee part (BilledCost 0): the billed and
    effective totals are the lines'."""
    focus = published.execute(
        "select count(*) filter (where x_ProviderLineType not like '%:Unused'), "
        'sum("BilledCost"), sum("EffectiveCost"), count(distinct x_LineId), '
        "bool_and(\"ProviderName\" = 'AWS') from normalized.focus"
    ).fetchone()
    lines = published.execute(
        "select count(*), sum(billed_cost), sum(effective_cost), count(*), true "
        "from normalized.cost_lines"
    ).fetchone()
    assert focus == lines
    tags = published.execute(
        "select \"Tags\"->>'user_attempt_id', x_AttemptTag from normalized.focus "
        "where x_AttemptTag is not null limit 1"
    ).fetchone()
    assert tags is not None and tags[0] == tags[1]


def grain_keys(grain: str) -> set[str] | None:
    """The key columns a SQL header names in parentheses: `one row per (a, b) ...` -> {a, b}."""
    found = re.search(r"\(([^)]*)\)", grain)
    if found is None:
        return None
    return {
        part.strip() for part in found.group(1).split(",") if re.fullmatch(r"\s*[a-z_]+\s*", part)
    }


def documented_grain_keys(text: str, table: str) -> set[str]:
    """The columns in backticks in the first clause of the table's **Grain:** sentence."""
    lines, inside = [], False
    for line in text.splitlines():
        heading = HEADING.match(line) or BUILD_STEP.match(line)
        if heading:
            inside = heading.group(2) == table
            continue
        if ANY_HEADING.match(line):
            inside = False
        if inside:
            lines.append(line)
    sentence = re.search(r"\*\*Grain:\*\*(.*?)(?:\.\s|\.$|$)", " ".join(lines))
    assert sentence, f"{table}: the dictionary states no **Grain:**"
    spans = re.findall(r"`([^`]*)`", sentence.group(1).split(";")[0])
    return {word for span in spans for word in re.findall(r"[a-z_]+", span)}


def test_grains_match_the_sql_headers() -> None:
    """Each model's `-- grain:` key columns are the ones the dictionary gives for that table."""
    text = DICTIONARY.read_text(encoding="utf-8")
    checked = 0
    for model in discover():
        keys = grain_keys(model.grain)
        if model.layer in ("staging", "checks") or keys is None:
            continue
        assert documented_grain_keys(text, model.qualified) == keys, model.qualified
        checked += 1
    assert checked >= 15


def test_grain_drift_is_caught() -> None:
    text = DICTIONARY.read_text(encoding="utf-8")
    drifted = text.replace(
        "**Grain:** one row per `(resource_id, charge_period_start, charge_period_end)` window",
        "**Grain:** one row per `(resource_id, charge_period_start, hour_start)` window",
    )
    assert drifted != text
    table = "attribution.resource_time_overlaps"
    assert documented_grain_keys(drifted, table) != documented_grain_keys(text, table)


def test_build_steps_are_the_intermediate_models() -> None:
    """A section marked `(build step, not published)` is exactly an intermediate model."""
    text = DICTIONARY.read_text(encoding="utf-8")
    documented = {match.group(2) for match in map(BUILD_STEP.match, text.splitlines()) if match}
    generated = {"attribution.excluded_lines", "allocation.pool_line_matches"}  # dag/pools.py
    assert documented == intermediates(discover()) | generated
