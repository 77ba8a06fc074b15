"""Macros expanded at parse time: the rounding-remainder rule is written once."""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal

import duckdb
import pytest
import sqlglot
from builders import callers, dec, without_comments
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.common.errors import ModelError
from pipeline.common.money import MONEY_ARROW
from pipeline.dag.macros import expand_macros
from pipeline.dag.models import discover, parse_model, sql_root
from pipeline.dag.profile_macros import PROFILE_COLUMNS, PROFILE_SOURCES


def test_a_call_becomes_the_rule_with_its_arguments() -> None:
    sql = "select first_slice_takes_rest(rank = 1, whole, f(a, b), part) as cost"
    assert expand_macros(sql, "x") == (
        "select cast(case when (rank = 1) then (whole) - ((f(a, b)) - (part)) else (part) end "
        "as decimal(38, 10)) as cost"
    )


def test_the_rule_gives_the_first_slice_what_rounding_left() -> None:
    # 1.00 split in three: two slices of 0.3333333333, the first takes 0.3333333334
    con = duckdb.connect()
    rows = con.execute(
        expand_macros(
            "select first_slice_takes_rest(slice_rank = 1, 1.0, 0.9999999999, 0.3333333333) "
            "from (select unnest([1, 2, 3]) as slice_rank) order by slice_rank",
            "x",
        )
    ).fetchall()
    assert [row[0] for row in rows] == [Decimal("0.3333333334"), *[Decimal("0.3333333333")] * 2]
    assert sum(row[0] for row in rows) == Decimal(1)


def test_comments_strings_and_nesting() -> None:
    sql = (
        "-- first_slice_takes_rest(a) in a comment\n"
        "select 'first_slice_takes_rest(a)' as s, "
        "first_slice_takes_rest(x, first_slice_takes_rest(y, 1, 2, 3), 'a,b', p) as t"
    )
    out = expand_macros(sql, "x")
    assert out.startswith(
        "-- first_slice_takes_rest(a) in a comment\nselect 'first_slice_takes_rest(a)'"
    )
    assert out.count("case when") == 2 and "('a,b')" in out


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("select first_slice_takes_rest(a, b) as x", r"takes 4 arguments .* got 2"),
        ("select first_slice_takes_rest(a, b, c, d as x", "not closed"),
    ],
)
def test_a_bad_call_names_the_model(sql: str, message: str) -> None:
    with pytest.raises(ModelError, match=message) as caught:
        parse_model("allocation", "m", f"-- M.\n-- grain: x\n{sql}")
    assert "allocation.m" in str(caught.value)


def test_the_remainder_rule_is_written_once() -> None:
    """No model spells `whole - (parts - part)` itself; three call the macro."""
    spelled = re.compile(r"-\s*\(\s*[\w.]+_parts\s*-\s*[\w.]+_part\s*\)")
    copies = [
        path.name for path in sql_root().rglob("*.sql") if spelled.search(path.read_text("utf-8"))
    ]
    assert copies == []
    # each model places the remainder of the four bases at once (slices_taking_rest)
    assert callers("first_slice_takes_rest(") == []
    assert callers("slices_taking_rest(") == [
        "allocation.pool_shares",
        "allocation.split_unused_shares",
        "attribution.line_attributions",
    ]


def test_line_ids_are_disjoint_per_source_and_name_their_file() -> None:
    """line_id_of gives each source its range and each file its block; file_of_line_id undoes it."""
    sql = expand_macros(
        "select source_range, file_index, source_line, "
        "line_id_of(source_range, file_index, source_line) as line_id, "
        "file_of_line_id(line_id_of(source_range, file_index, source_line)) as file_key "
        "from (select unnest([0, 1, 2]) as source_range), "
        "(select unnest([0, 1, 268435455]) as file_index), "
        "(select unnest([1, 268435455]) as source_line)",
        "x",
    )
    rows = duckdb.connect().execute(sql).fetchall()
    assert len({row[3] for row in rows}) == len(rows) == 18  # no two (source, file, row) collide
    for source_range, file_index, source_line, line_id, file_key in rows:
        assert line_id == source_range * 2**56 + file_index * 2**28 + source_line
        assert file_key == source_range * 2**28 + file_index  # one key per file, whatever the row


def test_the_line_id_rule_is_written_once() -> None:
    """No model multiplies by 2^28 itself: the staging models call line_id_of."""
    copies = [
        path.name for path in sql_root().rglob("*.sql") if "268435456" in path.read_text("utf-8")
    ]
    assert copies == []
    assert callers("line_id_of(") == [
        "staging.aws_cur2_line_items",
        "staging.aws_cur2_split_line_items",
        "staging.focus_line_items",
        "staging.gcp_billing_line_items",
    ]


def test_a_stored_slice_belongs_to_both_models_or_to_its_own() -> None:
    sql = expand_macros(
        "select models, model, in_allocation_model(models, model) as belongs, "
        "in_both_allocation_models(models) as shared "
        "from (select unnest(['both', 'marginal', 'fully_loaded']) as models), "
        "(select unnest(['marginal', 'fully_loaded']) as model) order by all",
        "x",
    )
    rows = duckdb.connect().execute(sql).fetchall()
    assert [(models, model) for models, model, belongs, _ in rows if belongs] == [
        ("both", "fully_loaded"),
        ("both", "marginal"),
        ("fully_loaded", "fully_loaded"),
        ("marginal", "marginal"),
    ]
    # a slice of both models belongs to each; any other belongs to the model it names alone
    assert [(models, model) for models, model, belongs, shared in rows if shared] == [
        ("both", "fully_loaded"),
        ("both", "marginal"),
    ]
    assert all(belongs == (shared or models == model) for models, model, belongs, shared in rows)


def test_the_allocation_model_rule_is_written_once() -> None:
    """No model tests `in ('both', ...)` or `= 'both'` itself: the readers of the stored slices
    call the macros."""
    spelled = re.compile(r"\bin\s*\(\s*'both'\s*,|(=|<>|!=)\s*'both'", re.IGNORECASE)
    copies = [
        path.name
        for path in sql_root().rglob("*.sql")
        if spelled.search(without_comments(path.read_text("utf-8")))
    ]
    assert copies == []
    assert callers("in_allocation_model(") == [
        "allocation.focus_ratio_splits",
        "allocation.model_slices",
        "checks.one_currency_per_attempt",
        "checks.slices_sum_to_line",
        "marts.attempt_costs",
        "marts.cost_changes",
        "marts.experiment_costs",
        "marts.gpu_utilisation",
        "marts.reconciliation",
        "marts.tco_breakdown",
        "marts.unallocated_costs",
    ]
    assert callers("in_both_allocation_models(") == ["marts.attempt_costs"]


@pytest.mark.parametrize("source", sorted(PROFILE_SOURCES))
def test_a_profile_key_hashes_the_sources_name_and_every_profile_source(source: str) -> None:
    sql = expand_macros(f"select {source}_profile_key(lines) as k", "x")
    assert sql.startswith(f"select cast(hash('{source}', lines.")
    assert sql.endswith(") >> 1 as bigint) as k")
    assert sql.count("lines.") == len(PROFILE_SOURCES[source])
    listed = expand_macros(f"select {source}_profile_sources(p)", "x")
    names = [item if isinstance(item, str) else item[0] for item in PROFILE_SOURCES[source]]
    assert sqlglot.parse_one(listed, read="duckdb").named_selects == names


def test_profiles_whose_sources_differ_in_one_column_or_a_null_get_other_keys() -> None:
    """Each source column and its position counts: NULL, '' and a value moved to the next one;
    and two sources' lines with the same values never share a key."""
    con = duckdb.connect()
    sources = PROFILE_SOURCES["aws"]
    names = ", ".join(sources)
    base = ["'x'"] * len(sources)
    variants = [base]
    for index in range(len(sources)):
        for value in ("null", "''", "'y'"):
            variants.append([*base[:index], value, *base[index + 1 :]])
    rows = " union all ".join(
        f"select {', '.join(f'{v} as {n}' for v, n in zip(row, sources, strict=True))}"
        for row in variants
    )
    sql = expand_macros(f"select aws_profile_key(t) from ({rows}) as t({names})", "x")
    keys = [row[0] for row in con.execute(sql).fetchall()]
    assert len(set(keys)) == len(variants) == 1 + 3 * len(sources)
    assert all(0 <= key < 2**63 for key in keys)  # a BIGINT on both engines
    focus = PROFILE_SOURCES["focus"]
    same = "select " + ", ".join(f"'x' as {name}" for name in focus)
    other = expand_macros(f"select focus_profile_key(t) from ({same}) as t", "x")
    assert con.execute(other).fetchone()[0] not in keys


def test_a_profile_is_computed_from_its_sources_alone() -> None:
    """Each *_line_profiles view reads its line items only in the distinct sources, so a profile
    column cannot read a column the lines' key leaves out (it would not bind), and keys each
    distinct combination by the key of the lines' sources."""
    models = {model.qualified: model for model in discover()}
    for source in PROFILE_SOURCES:
        sql = models[f"staging.{source}_line_profiles"].sql
        lines = f"{source}_line_items" if source != "aws" else "billed"
        listed = expand_macros(f"{source}_profile_sources({lines})", "x")
        key = expand_macros(f"{source}_sources_profile_key(distinct_sources)", "x")
        keyed = (
            f"(select {key} as profile_key, distinct_sources.* from "
            f"(select distinct {listed} from {lines}) as distinct_sources)"
        )
        assert f"select * from {keyed}\n)," in sql, source
        assert f"{lines}." not in sql.split(keyed, 1)[1], source


@pytest.mark.parametrize("source", sorted(PROFILE_SOURCES))
def test_the_key_of_a_combination_is_the_key_of_its_lines(source: str) -> None:
    """The profiles view hashes each distinct combination of sources; the lines hash their own
    sources (some of them expressions, such as a Google Cloud system label): the same key."""
    con = duckdb.connect()
    con.execute(
        "create table lines (system_label_entries struct(key varchar, value varchar)[], "
        "cost double, credit_committed_usage_discount double)"
    )
    columns = [item for item in PROFILE_SOURCES[source] if isinstance(item, str)]
    for column in columns:
        con.execute(f"alter table lines add column {column} varchar")
    labels = "[{'key': 'compute.googleapis.com/machine_spec', 'value': 'a2-highgpu-1g'}]"
    con.execute(
        f"insert into lines by name select {labels} as system_label_entries, 1.5 as cost, "
        + ", ".join(f"'v{index}' as {column}" for index, column in enumerate(columns))
    )
    con.execute("insert into lines (cost) values (-2.0)")  # every source NULL
    lines = expand_macros(f"select {source}_profile_key(lines) from lines order by cost", "x")
    combinations = expand_macros(
        f"select {source}_sources_profile_key(s) from "
        f"(select {source}_profile_sources(lines), lines.cost from lines) as s order by s.cost",
        "x",
    )
    from_lines = [row[0] for row in con.execute(lines).fetchall()]
    assert from_lines == [row[0] for row in con.execute(combinations).fetchall()]
    assert len(set(from_lines)) == 2


def test_a_profile_macro_takes_the_alias_of_a_table() -> None:
    with pytest.raises(ModelError, match="takes the alias of a table as relation"):
        parse_model("normalized", "m", "-- M.\n-- grain: x\nselect aws_profile_key(f(a)) as k")


def test_the_profile_columns_are_the_lines_columns_the_facts_leave_out() -> None:
    """normalized.cost_lines is facts + profiles: each column from exactly one of the two."""
    models = {model.qualified: model for model in discover()}
    view = models["normalized.cost_lines"].sql
    from_profiles = re.findall(r"^\s+profiles\.(\w+),?$", view, re.MULTILINE)
    from_facts = re.findall(r"^\s+facts\.(\w+),?$", view, re.MULTILINE)
    assert sorted(from_profiles) == sorted(PROFILE_COLUMNS)
    facts = models["normalized.cost_line_facts"].sql
    made = re.findall(
        r"^\s+provider_lines\.(\w+),$|\bas (\w+)(?:  -- noqa: RF02)?,?$", facts, re.MULTILINE
    )
    assert from_facts == [a or b for a, b in made if (a or b) != "profile_key"]
    assert not set(from_facts) & set(PROFILE_COLUMNS)


def test_rows_no_resource_splits_are_built_in_the_first_pass_only() -> None:
    assert expand_macros("select 1 where in_first_pass()", "x") == (
        "select 1 where (__runcost_partition__ = 0)"
    )
    with pytest.raises(ModelError, match=r"takes 0 arguments"):
        expand_macros("select in_first_pass(a)", "x")


def test_the_first_tag_rule_is_written_once() -> None:
    """The first non-empty tag among the configured keys: one macro, called by both line tables."""
    sql = expand_macros("select first_tag_value(t.m, t.k) from t", "x")
    con = duckdb.connect()
    rows = []
    for tags in ("'a': '', 'b': 'x', 'c': 'y'", "'c': 'y'", "'z': 'w'"):
        con.execute(f"create or replace table t as select map {{{tags}}} as m, ['a', 'b', 'c'] k")
        rows.append(con.execute(sql).fetchone()[0])
    assert rows == ["x", "y", None]
    copies = [
        path.name
        for path in sql_root().rglob("*.sql")
        if "lambda tag_value" in without_comments(path.read_text("utf-8"))
    ]
    assert copies == []


@pytest.mark.parametrize("keys", ["['a']", "['z', 'a']"])
def test_the_first_tag_is_read_in_nfc(keys: str) -> None:
    """A decomposed value (NFD, as some tools write) is read as the composed one telemetry ids
    are in; ASCII comes out as it is, and so does text with a NUL, which DuckDB's nfc_normalize
    would cut short ('a<NUL>café' to 'a', a look-alike of attempt 'a')."""
    nfd, nfc = unicodedata.normalize("NFD", "att-café"), unicodedata.normalize("NFC", "att-café")
    assert nfd != nfc
    con = duckdb.connect()
    con.execute("create table t (m map(varchar, varchar), k varchar[])")
    values = [nfd, nfc, "att-llm-01", "att-llm-01\x00", f"{nfd}\x00", f"a\x00{nfd}", "é\x1b"]
    con.executemany(f"insert into t values (map {{'a': ?}}, {keys})", [(v,) for v in values])
    macro = expand_macros("first_tag_value(t.m, t.k)", "x")
    got = [row[0] for row in con.execute(f"select {macro} from t").fetchall()]
    assert got == [nfc, nfc, "att-llm-01", "att-llm-01\x00", f"{nfd}\x00", f"a\x00{nfd}", "é\x1b"]


# the plain rule first_tag_value must equal: every configured key looked up, the first non-empty
_FIRST_TAG_RULE = (
    "list_filter(list_transform(t.k, lambda tag_key: t.m[tag_key]), "
    "lambda tag_value: coalesce(tag_value, '') <> '')[1]"
)


@pytest.mark.parametrize(
    "keys", ["['a']", "['b']", "['a', 'b']", "['b', 'a']", "['z', 'c', 'b']", "[]", "NULL"]
)
def test_the_first_tag_equals_every_key_looked_up(keys: str) -> None:
    """The first key's fast path gives what looking up every key gives: one key or several, a
    key with an empty value, no key in the map, no keys configured, no tags."""
    con = duckdb.connect()
    con.execute(
        "create table t as select m, cast("
        + keys
        + " as varchar[]) as k from (values (map {'a': 'x', 'b': 'y'}), (map {'a': '', 'b': 'y'}), "
        "(map {'c': 'w'}), (map {'b': ''}), (cast(map {} as map(varchar, varchar))), "
        "(cast(null as map(varchar, varchar)))) as rows (m)"
    )
    macro = expand_macros("first_tag_value(t.m, t.k)", "x")
    got = con.execute(f"select {macro}, {_FIRST_TAG_RULE} from t").fetchall()
    assert [fast for fast, _ in got] == [rule for _, rule in got]
    assert len(got) == 6


# the plain rule the macro must equal: a DOUBLE's shortest text parsed as DECIMAL(38, 10)
_TEXT_CAST = "cast(cast(x as varchar) as decimal(38, 10))"


def _both_casts(values: list[float | None]) -> list[tuple[object, object]]:
    """(exact_decimal, the text cast) of each value; an error is its class, so both must fail
    alike (NaN, infinities and values past DECIMAL(38, 10) cannot be cast either way)."""
    con = duckdb.connect()
    con.execute("create table t (i integer, x double)")
    con.executemany("insert into t values (?, ?)", list(enumerate(values)))
    outcomes = []
    for index in range(len(values)):
        pair = []
        for expression in (expand_macros("exact_decimal(x)", "x"), _TEXT_CAST):
            try:
                pair.append(
                    con.execute(f"select {expression} from t where i = ?", [index]).fetchone()[0]
                )
            except duckdb.Error as error:
                pair.append(type(error))
        outcomes.append(tuple(pair))
    return outcomes


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.floats(min_value=-1e9, max_value=1e9),
            st.floats(min_value=-1e-6, max_value=1e-6),
            # ties at the 11th place: the rounding must go the same way in both parses
            st.integers(-(10**17), 10**17).map(lambda n: (n * 10 + 5) / 1e11),
            # amounts of 10 places or fewer, which skip the text below 2^19, and the edge
            st.tuples(st.integers(-(10**16), 10**16), st.integers(0, 10)).map(
                lambda pair: pair[0] / 10 ** pair[1]
            ),
            st.floats(min_value=524287.0, max_value=524289.0),
            st.tuples(st.integers(524288, 10**8), st.integers(0, 99)).map(
                lambda pair: pair[0] + pair[1] / 100
            ),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_exact_decimal_is_the_text_cast_for_every_double(values: list[float]) -> None:
    for fast, text in _both_casts(values):
        assert fast == text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.12345678905, "0.1234567891"),  # a tie rounds away from zero
        (-0.12345678905, "-0.1234567891"),
        (2.6881720430107525, "2.6881720430"),
        (99999999.99999999, "99999999.9999999900"),  # the largest DOUBLE below 1e8
        (1e8, "100000000.0000000000"),  # the wide parse
        (12345678901234.566, "12345678901234.5660000000"),  # the text, not the binary value
        (5e-11, "0.0000000001"),
        (0.1, "0.1"),  # the direct cast, read back as the same DOUBLE
        (524287.9999999999, "524287.9999999999"),  # 10 places, just below 2^19
        (524288.0000000001, "524288.0000000001"),  # 2^19 and above: the text
        (4194304.98046875, "4194304.98046875"),  # the direct cast gives 4194304.9804687504
        (-0.0, "0"),
        (4.9e-11, "0.0000000000"),
        (None, None),
    ],
)
def test_exact_decimal_rounds_the_shortest_text(value: float | None, expected: str | None) -> None:
    [(got, text)] = _both_casts([value])
    assert got == text == (Decimal(expected) if expected is not None else None)


def test_the_exact_decimal_rule_is_written_once() -> None:
    """No model casts a DOUBLE through text itself: the AWS staging models call exact_decimal."""
    copies = [
        path.name
        for path in sql_root().rglob("*.sql")
        if "as varchar) as decimal" in without_comments(path.read_text("utf-8"))
    ]
    assert copies == []
    assert callers("exact_decimal(") == [
        "marts.focus_allocated",  # a DOUBLE ratio written into JSON at the money type's places
        "staging.aws_cost_lines",
        "staging.aws_cur2_line_items",
        "staging.aws_cur2_split_line_items",
    ]


def test_the_gcp_reader_reads_a_float64_amount_by_the_same_rule() -> None:
    """A FLOAT64 money leaf of the Google Cloud export takes exact_decimal; NUMERIC and text keep
    their own digits."""
    import pyarrow as pa

    from pipeline.ingest.gcp.raw import _gcp_expr

    wanted = MONEY_ARROW
    assert _gcp_expr("t.cost", "cost", wanted, pa.float64()) == expand_macros(
        "exact_decimal(t.cost)", "x"
    )
    for present in (pa.decimal128(38, 9), pa.string()):
        assert "decimal(18, 10)" not in _gcp_expr("t.cost", "cost", wanted, present)


# The four cost bases and the money type, written once (pipeline/dag/basis_macros.py)


@pytest.mark.parametrize(
    ("call", "expanded"),
    [
        ("money(a + b)", "cast((a + b) as decimal(38, 10))"),
        ("bases(t)", "t.billed_cost, t.effective_cost, t.list_cost, t.net_cost"),
        (
            "line_bases(t)",
            "t.billed_cost as line_billed_cost, t.effective_cost as line_effective_cost, "
            "t.list_cost as line_list_cost, t.net_cost as line_net_cost",
        ),
        (
            "line_costs(t)",
            "t.line_billed_cost, t.line_effective_cost, t.line_list_cost, t.line_net_cost",
        ),
        (
            "sum_bases(t)",
            "sum(t.billed_cost) as billed_cost, sum(t.effective_cost) as effective_cost, "
            "sum(t.list_cost) as list_cost, sum(t.net_cost) as net_cost",
        ),
        (
            "money_sum_bases(t)",
            "cast(sum(t.billed_cost) as decimal(38, 10)) as billed_cost, "
            "cast(sum(t.effective_cost) as decimal(38, 10)) as effective_cost, "
            "cast(sum(t.list_cost) as decimal(38, 10)) as list_cost, "
            "cast(sum(t.net_cost) as decimal(38, 10)) as net_cost",
        ),
        (
            "checksums_differ(a, b)",
            "(a.billed_checksum is distinct from b.billed_checksum "
            "or a.effective_checksum is distinct from b.effective_checksum "
            "or a.list_checksum is distinct from b.list_checksum "
            "or a.net_checksum is distinct from b.net_checksum)",
        ),
        (
            "parts(s.part)",
            "s.part.billed_part, s.part.effective_part, s.part.list_part, s.part.net_part",
        ),
        ("pool_window(w)", "w.pool_order, w.window_start, w.window_end"),
        (
            "same_ledger(a, b)",
            "(a.provider = b.provider and a.billing_account_id is not distinct from "
            "b.billing_account_id and a.billing_period = b.billing_period "
            "and a.billing_currency is not distinct from b.billing_currency)",
        ),
    ],
)
def test_a_basis_macro_is_the_rule_in_every_basis(call: str, expanded: str) -> None:
    assert expand_macros(f"select {call} from t", "x") == f"select {expanded} from t"


def _given(con: duckdb.DuckDBPyConnection) -> None:
    """Two lines whose amounts a DOUBLE would round, and what was taken of line 1 alone (a NULL
    net cost): the rows the basis macros are evaluated on."""
    con.execute(
        "create table lines as select line_id, "
        "cast(billed as decimal(38, 10)) as billed_cost, "
        "cast(effective as decimal(38, 10)) as effective_cost, "
        "cast(list as decimal(38, 10)) as list_cost, cast(net as decimal(38, 10)) as net_cost "
        "from (values (1, '0.1000000001', '12345678901234.1234567891', '-0.0000000001', '3'), "
        "(2, '0.2000000002', '0.0000000009', '1', '-2.5')) "
        "as given(line_id, billed, effective, list, net)"
    )
    con.execute(
        "create table taken as select 1 as line_id, "
        "cast(0.0000000001 as decimal(38, 10)) as billed_cost, "
        "cast(1 as decimal(38, 10)) as effective_cost, cast(-1 as decimal(38, 10)) as list_cost, "
        "cast(null as decimal(38, 10)) as net_cost"
    )


def _run(sql: str) -> tuple[list[str], list[tuple]]:
    """The expanded query's column types and rows, on the given lines."""
    con = duckdb.connect()
    _given(con)
    relation = con.sql(expand_macros(sql, "x"))
    return [str(kind) for kind in relation.types], relation.fetchall()


def test_summed_bases_are_exact_money_under_their_names() -> None:
    kinds, rows = _run("select money_sum_bases(lines) from lines")
    assert kinds == ["DECIMAL(38,10)"] * 4
    assert rows == [
        (
            Decimal("0.3000000003"),
            Decimal("12345678901234.1234567900"),
            Decimal("0.9999999999"),
            Decimal("0.5"),
        )
    ]
    assert _run("select sum_bases(lines) from lines")[1] == rows


def test_added_and_subtracted_bases_count_a_missing_side_as_zero() -> None:
    join = "from lines left join taken on lines.line_id = taken.line_id order by lines.line_id"
    kinds, added = _run(f"select added_bases(lines, taken) {join}")
    assert kinds == ["DECIMAL(38,10)"] * 4
    assert added == [
        (dec("0.1000000002"), dec("12345678901235.1234567891"), dec("-1.0000000001"), dec(3)),
        (dec("0.2000000002"), dec("0.0000000009"), dec(1), dec("-2.5")),
    ]
    assert _run(f"select subtracted_bases(lines, taken) {join}")[1] == [
        (dec("0.1"), dec("12345678901233.1234567891"), dec("0.9999999999"), dec(3)),
        (dec("0.2000000002"), dec("0.0000000009"), dec(1), dec("-2.5")),
    ]


def test_basis_amounts_unpivot_one_row_per_basis() -> None:
    _, rows = _run("select lines.line_id, basis_amounts(lines) from lines where lines.line_id = 2")
    assert [row[1] for row in rows] == [
        {"cost_basis": "billed_cost", "amount": dec("0.2000000002")},
        {"cost_basis": "effective_cost", "amount": dec("0.0000000009")},
        {"cost_basis": "list_cost", "amount": dec(1)},
        {"cost_basis": "net_cost", "amount": dec("-2.5")},
    ]


def test_checksums_differ_in_any_basis_and_a_null_differs() -> None:
    sides = (
        "with a as (select line_id, 1 as billed_checksum, 2 as effective_checksum, "
        "3 as list_checksum, 4 as net_checksum from lines), "
        "b as (select line_id, 1 as billed_checksum, 2 as effective_checksum, "
        "case when line_id = 1 then 3 end as list_checksum, 4 as net_checksum from lines) "
    )
    _, rows = _run(
        sides + "select a.line_id, checksums_differ(a, b), checksums_differ(a, a) "
        "from a inner join b on a.line_id = b.line_id order by a.line_id"
    )
    assert rows == [(1, False, False), (2, True, False)]


def test_a_line_shared_in_thirds_sums_exactly_in_every_basis() -> None:
    """shared_parts rounds each slice, sum_parts totals them and slices_taking_rest gives the
    first slice the rest: the three slices of each line sum to it to the last decimal."""
    kinds, rows = _run(
        "with shares as (select unnest([1, 2, 3]) as slice_rank, 1.0 / 3 as share), "
        "parts as (select lines.line_id, shares.slice_rank, line_bases(lines), "
        "shared_parts(lines, shares.share) from lines cross join shares), "
        "totals as (select parts.line_id, sum_parts(parts) from parts group by parts.line_id), "
        "placed as (select parts.*, parts_totals(totals) from parts inner join totals "
        "on parts.line_id = totals.line_id) "
        "select placed.line_id, slices_taking_rest(placed.slice_rank = 1, placed, 'line') "
        "from placed"
    )
    assert kinds == ["INTEGER"] + ["DECIMAL(38,10)"] * 4
    con = duckdb.connect()
    _given(con)
    lines = {row[0]: row[1:] for row in con.execute("select * from lines").fetchall()}
    for line_id, amounts in lines.items():
        slices = [row[1:] for row in rows if row[0] == line_id]
        assert len(slices) == 3
        assert tuple(sum(column) for column in zip(*slices, strict=True)) == amounts


def test_a_column_word_is_a_quoted_name() -> None:
    with pytest.raises(ModelError, match=r"takes part of a column's name as whole"):
        expand_macros("select slices_taking_rest(a, t, line) from t", "allocation.m")
    with pytest.raises(ModelError, match="takes the alias of a table as relation"):
        expand_macros("select bases(f(t)) from t", "allocation.m")


def test_gcp_credits_of_type_sums_that_type_or_zero() -> None:
    _, rows = _run(
        "select gcp_credits_of_type(entries, 'PROMOTION'), "
        "gcp_credits_of_type(entries, 'FREE_TIER') "
        "from (select [{'type': 'PROMOTION', 'amount': -1.25::decimal(38, 10)}, "
        "{'type': 'DISCOUNT', 'amount': -2::decimal(38, 10)}, "
        "{'type': 'PROMOTION', 'amount': -0.0000000001::decimal(38, 10)}] as entries)"
    )
    assert rows == [(dec("-1.2500000001"), 0)]


def test_a_ledger_and_a_period_match_an_account_of_null() -> None:
    _, rows = _run(
        "with a as (select * from (values ('aws', null, '2026-10', 'USD'), "
        "('aws', '1', '2026-10', 'EUR')) as a(provider, billing_account_id, billing_period, "
        "billing_currency)), b as (select * from (values ('aws', null, '2026-10', 'USD'), "
        "('aws', '1', '2026-10', 'USD')) as b(provider, billing_account_id, billing_period, "
        "billing_currency)) select a.billing_account_id, a.billing_currency, "
        "same_billing_period(a, b), same_ledger(a, b) from a, b "
        "where a.billing_account_id is not distinct from b.billing_account_id "
        "order by a.billing_account_id nulls first"
    )
    assert rows == [(None, "USD", True, True), ("1", "EUR", True, False)]


def test_a_slice_no_attempt_holds_has_typed_empty_attribution() -> None:
    kinds, rows = _run("select unattributed()")
    assert kinds == ["VARCHAR"] * 4 and rows == [(None,) * 4]


def test_the_money_type_and_the_bases_are_written_once() -> None:
    """No model spells DECIMAL(38, 10) for money (a quantity, a ratio and the credits map keep
    their types), nor lists the four bases one line each: they call the macros."""
    spelled = {
        path.relative_to(sql_root()).as_posix(): without_comments(path.read_text("utf-8")).count(
            "decimal(38, 10)"
        )
        for path in sql_root().rglob("*.sql")
    }
    assert {path: count for path, count in spelled.items() if count} == {
        "marts/tag_coverage.sql": 2,  # the tagged share of the cost, a ratio
        "staging/aws_cost_lines.sql": 1,  # map(varchar, decimal(38, 10)): a type, not a cast
        "staging/focus_cost_lines.sql": 1,
        "staging/focus_line_items.sql": 3,  # consumed, pricing and commitment quantities
    }
    by_hand = re.compile(
        r"\b(\w+)\.billed_cost\b[^\n]*\n\s*\1\.effective_cost\b[^\n]*\n"
        r"\s*\1\.list_cost\b[^\n]*\n\s*\1\.net_cost\b"
    )
    assert [
        path.name
        for path in sql_root().rglob("*.sql")
        if by_hand.search(without_comments(path.read_text("utf-8")))
    ] == []


@pytest.mark.parametrize(
    ("call", "expanded"),
    [
        (
            "same_profile_period(a, b)",
            "(a.profile_key = b.profile_key and a.billing_period = b.billing_period)",
        ),
        (
            "same_attempt_resource(a, b)",
            "(a.attempt_id = b.attempt_id and a.resource_id = b.resource_id)",
        ),
        (
            "same_charge_period(a, b)",
            "(a.charge_period_start = b.charge_period_start "
            "and a.charge_period_end = b.charge_period_end)",
        ),
        (
            "same_pool_window(a, b)",
            "(a.pool_order = b.pool_order and a.window_start = b.window_start "
            "and a.window_end = b.window_end)",
        ),
        (
            "same_row_and_model(a, b, 'attempt_id')",
            "(a.attempt_id = b.attempt_id and a.allocation_model = b.allocation_model)",
        ),
        (
            "ledger_keys(t)",
            "t.provider, t.billing_account_id, t.billing_period, t.billing_currency",
        ),
        ("slice_key(t)", "t.allocation_model, t.line_id, t.allocation_kind, t.attempt_id"),
        (
            "line_windows(t)",
            "t.charge_period_start, t.charge_period_end, "
            "t.billing_period_start, t.billing_period_end",
        ),
        ("exact_double_sum(t.hours)", "cast(sum(cast((t.hours) as decimal(38, 18))) as double)"),
    ],
)
def test_a_key_macro_is_its_columns(call: str, expanded: str) -> None:
    assert expand_macros(f"select {call} from t", "x") == f"select {expanded} from t"


def test_the_allocation_models_are_listed_once() -> None:
    _, rows = _run("select * from allocation_models() as allocation_models")
    assert rows == [("marginal",), ("fully_loaded",)]
    assert [
        path.name
        for path in sql_root().rglob("*.sql")
        if "'fully_loaded']" in without_comments(path.read_text("utf-8"))
    ] == []


def test_an_exact_double_sum_does_not_depend_on_the_order() -> None:
    """0.1 + 0.2 + 0.3 is 0.6000000000000001 in one order of DOUBLE additions, 0.6 in another."""
    _, rows = _run(
        "select exact_double_sum(hours), exact_double_sum_where(hours, hours > 0.15) "
        "from (select unnest([0.1, 0.2, 0.3]::double[]) as hours)"
    )
    assert rows == [(0.6, 0.5)]


def test_a_line_is_searched_under_its_formats_tag_keys() -> None:
    _, rows = _run(
        "with settings as (select ['user_attempt_id'] as attempt_tag_keys, "
        "['attempt-id'] as attempt_label_keys), "
        "formats as (select unnest(['aws_cur', 'gcp_billing_export', 'focus']) as source_format) "
        "select formats.source_format, "
        "attribution_tag_keys(formats.source_format, settings, 'attempt') "
        "from formats cross join settings"
    )
    assert rows == [
        ("aws_cur", ["user_attempt_id"]),
        ("gcp_billing_export", ["attempt-id"]),
        ("focus", ["attempt-id"]),
    ]


def test_a_snapshot_cost_pair_says_which_sides_hold_the_row() -> None:
    """A row of both snapshots, one only in the current (new) and one only in the previous, whose
    snapshot predates cost_status (so it was billed)."""
    _, rows = _run(
        "with current_costs as (select * from (values ('a', 'marginal', 1.5::decimal(38, 10), "
        "0.5::decimal(38, 10), 'estimated'), ('b', 'marginal', 2.0::decimal(38, 10), "
        "null::decimal(38, 10), 'billed')) as c(attempt_id, allocation_model, billed_cost, "
        "unbilled_estimate, cost_status)), "
        "previous_costs as (select * from (values ('a', 'marginal', 1.0::decimal(38, 10), "
        "null::decimal(38, 10), null), ('c', 'marginal', 3.0::decimal(38, 10), "
        "null::decimal(38, 10), null)) as p(attempt_id, allocation_model, billed_cost, "
        "unbilled_estimate, cost_status)) "
        "select snapshot_cost_pair(current_costs, previous_costs, 'attempt_id') "
        "from current_costs full outer join previous_costs "
        "on same_row_and_model(current_costs, previous_costs, 'attempt_id') order by 1"
    )
    assert rows == [
        ("a", "marginal", True, True, dec("1.0"), dec("1.5"), 0, dec("0.5"), "billed", "estimated"),
        ("b", "marginal", False, True, None, dec(2), 0, None, None, "billed"),
        ("c", "marginal", True, False, dec(3), None, 0, None, "billed", None),
    ]
