"""Rules written once and expanded into the models' SQL when a model is parsed.

A macro call in a model looks like a function call, `first_slice_takes_rest(a, b, c, d)`;
parse_model replaces it with the macro's body, its parameters replaced by the call's arguments
(each in parentheses). Both engines run the expanded SQL, so a rule means the same in DuckDB
and in Spark, and `runs/<run_id>/` keeps what ran. Calls inside comments and strings stay as
they are.
"""

from __future__ import annotations

import re

from pipeline.common.errors import ModelError
from pipeline.common.macro import Macro
from pipeline.common.money import EXACT_DECIMAL_SQL, MONEY_SQL
from pipeline.dag.allocated_macros import ALLOCATED_MACROS
from pipeline.dag.basis_macros import BASES, BASIS_MACROS
from pipeline.dag.focus_macros import FOCUS_MACROS
from pipeline.dag.key_macros import ALLOCATION_MODEL_NAMES, KEY_MACROS
from pipeline.dag.partitions import PARTITION, PARTITIONS
from pipeline.dag.profile_macros import LINE_PROFILE_COLUMNS, PROFILE_MACROS

# The rounding remainder: a line split into slices, each rounded to DECIMAL(38, 10), gives the
# slice that takes the rest (the first by the model's order) the whole amount minus the other
# slices, so the slices sum exactly to the whole. `parts_total` includes `part`.
FIRST_SLICE_TAKES_REST = Macro(
    "first_slice_takes_rest",
    ("takes_rest", "whole", "parts_total", "part"),
    "cast(case when {takes_rest} then {whole} - ({parts_total} - {part}) else {part} end "
    f"as {MONEY_SQL})",
)

# A DOUBLE amount as DECIMAL(38, 10), exactly: read through its shortest round-trip text (a
# direct cast multiplies in floating point and is wrong at 1e-10 above about 2^20) and rounded
# to 10 places. Below 1e8 the text is parsed as DECIMAL(18, 10), the same rounding on a 64-bit
# integer, then widened: about 6x less CPU than parsing into the 128-bit DECIMAL(38, 10) when the
# text has more than 10 places. The largest DOUBLE below 1e8 rounds to 99999999.99999999, so the
# narrow parse never overflows; larger values, NaN and infinities take the 128-bit parse.
# Most amounts skip the text: when the direct cast to DECIMAL(18, 10) reads back as the same
# DOUBLE below 2^19, the cast is the text's value. It reads
# back, so its 10-place decimal is one whose nearest DOUBLE is this one; below 2^19 the DOUBLEs
# are less than 1e-10 apart, so no other decimal of 10 places or fewer has this DOUBLE nearest,
# and the shortest text, which has no more places than that decimal, is that decimal. Every
# other value (more than 10 places, or 2^19 and above) takes the text.
EXACT_DECIMAL = Macro("exact_decimal", ("value",), EXACT_DECIMAL_SQL)

# A line's id, unique across sources without a lookup: the source's range (0 AWS CUR 2.0, 1 the
# Google Cloud billing export, 2 FOCUS files) times 2^56, plus the file's index times 2^28, plus
# the line's row in its file (from 0, below 2^28). The file index is its billing period's key
# and its place among the period's files (pipeline/ingest/provider.py register_files): a
# period's line ids never depend on another period's deliveries.
LINE_ID = Macro(
    "line_id_of",
    ("source_range", "file_index", "source_line"),
    "({source_range} * 72057594037927936 + {file_index} * cast(268435456 as bigint)"
    " + {source_line})",
)

# The file a line id came from (its range and file index): equal for every line of one file.
FILE_OF_LINE = Macro("file_of_line_id", ("line_id",), "({line_id} // cast(268435456 as bigint))")

# The start of the hour a timestamp falls in, in microseconds since the epoch: date_trunc('hour',
# t) in the build's time zone, UTC, as a BIGINT. Truncating a TIMESTAMPTZ, or adding an interval to
# it, goes through the time-zone calendar: about 15x the CPU of this arithmetic (0.75 against 0.05
# CPU s for 10M values). The remainder is taken modulo the hour
# twice so that a time before 1970, whose `%` is negative, floors too.
HOUR_START_US = Macro(
    "hour_start_us",
    ("timestamp",),
    "(epoch_us({timestamp}) - (epoch_us({timestamp}) % 3600000000 + 3600000000) % 3600000000)",
)

# A row of one resource-hash partition of the pass the engine builds (pipeline.dag.partitions):
# a model calling it is built in passes, each keeping the rows whose resource falls in it.
# Written for the planner: one pass folds to true, so every row is counted; a pass of many is a
# range on the hash, estimated as a share of the rows. An equality on the hash is estimated like
# one on the resource (a handful of rows), which built the anti join against the tagged lines
# on the millions of lines joined to their windows.
_PARTITION_HASH = f"hash({{resource_id}}) % {PARTITIONS}"
IN_RESOURCE_PARTITION = Macro(
    "in_resource_partition",
    ("resource_id",),
    f"({PARTITIONS} = 1 or ({_PARTITION_HASH} >= {PARTITION} "
    f"and {_PARTITION_HASH} < {PARTITION} + 1))",
)

# The line-weighted checksums of checks.slices_sum_to_line, in the four bases: each row's cost
# times its line's weight (1 to 1021 from its line_id), summed. The same sums on the lines' side
# (normalized.profile_line_sums) and the slices' side (allocation.profile_slice_sums), so a slice
# moved to another line changes the checksum unless the two lines weigh the same.
_LINE_WEIGHT = "cast(1 + abs(hash({relation}.line_id) % 1021) as integer)"
LINE_CHECKSUMS = Macro(
    "line_checksums",
    ("relation",),
    ", ".join(
        f"sum({{relation}}.{basis}_cost * {_LINE_WEIGHT}) as {basis}_checksum" for basis in BASES
    ),
    relations=("relation",),
)

# Text in Unicode NFC, as telemetry ids are: a tag holding a decomposed 'att-café' (NFD, as
# some tools write it) names the attempt 'att-café'. DuckDB's nfc_normalize returns ASCII text
# as it is (10M ASCII values: 0.21 CPU s against 0.16 read as they are; a regexp test for
# non-ASCII first cost 0.72), but cuts text at a NUL ('a<NUL>café' became 'a', a look-alike that
# would place the line on attempt 'a'): text holding one stays as it is, never matches, and is
# warned (pipeline/run/lookalikes.py). An attempt tag of 5M lines, one key: 0.50-0.53 CPU s
# against 0.46 for the lookup alone; two keys, 0.76-0.82 against 0.67-0.74 (load 5-10 on 2
# CPUs). Testing `strlen(v) = length(v)` (ASCII) first as well changed nothing measurable.
# Spark has no nfc_normalize: its session registers a UDF of that name (engines/spark/session.py).
NFC_TEXT = Macro(
    "nfc_text",
    ("value",),
    "(case when contains({value}, chr(0)) then {value} else nfc_normalize({value}) end)",
)

# A line's attribution tag: the first non-empty value in its tags map among the configured keys,
# in their order (NULL when none has one). The first key is looked up alone: most configurations
# name one key, and most lines have no value under it, so the lambdas over the key list run only
# when there is a second key to try (half the CPU of the lambdas on every line: 0.68 against 1.2
# CPU s for both tags of 10M lines). The empty list is tested
# first, so Spark never indexes an empty array.
# The value is in Unicode NFC, as telemetry ids are (nfc_text).
FIRST_TAG_VALUE = Macro(
    "first_tag_value",
    ("tags", "tag_keys"),
    "nfc_text(case when array_length({tag_keys}) = 0 then null "
    "when coalesce({tags}[{tag_keys}[1]], '') <> '' then {tags}[{tag_keys}[1]] "
    "when array_length({tag_keys}) > 1 then "
    "list_filter(list_transform({tag_keys}, lambda tag_key: {tags}[tag_key]), "
    "lambda tag_value: coalesce(tag_value, '') <> '')[1] end)",
)

# The keys a line's tags are searched under for an attempt's or an experiment's tag ('attempt' or
# 'experiment'), as [attribution] configures them (DESIGN.md section 7): CUR's normalized
# resource_tags keys for an AWS CUR line, the keys as written (labels, FOCUS Tags) for the others.
ATTRIBUTION_TAG_KEYS = Macro(
    "attribution_tag_keys",
    ("source_format", "settings", "kind"),
    "(case when {source_format} = 'aws_cur' then {settings}.{kind}_tag_keys "
    "else {settings}.{kind}_label_keys end)",
    relations=("settings",),
    words=("kind",),
)

# The experiments a tag may name: those an attempt belongs to and those the experiments table
# lists (an experiment without attempts yet still takes its tagged lines), as a relation.
KNOWN_EXPERIMENTS = Macro(
    "known_experiments",
    (),
    "(select attempts.experiment_id from staging.attempts as attempts "
    "union select experiments.experiment_id from staging.experiments as experiments)",
)

# Rows a model partitioned by resource computes whole in one pass, the first (rows that no
# resource splits, such as a line placed by its tag): with in_resource_partition on its other
# rows, the passes' union is the model.
IN_FIRST_PASS = Macro("in_first_pass", (), f"({PARTITION} = 0)")

# A slice of allocation.cost_slices belongs to an allocation model: its allocation_models is
# 'both' or that model's name (a slice the two models share is stored once).
IN_ALLOCATION_MODEL = Macro(
    "in_allocation_model",
    ("allocation_models", "allocation_model"),
    "({allocation_models} in ('both', {allocation_model}))",
)

# The allocation models (DESIGN.md section 8), one row each: a reader expands the stored slices'
# sums to the models by joining them on in_allocation_model, or lists every attempt under each.
ALLOCATION_MODELS = Macro(
    "allocation_models",
    (),
    "(select unnest(["
    + ", ".join(f"'{model}'" for model in ALLOCATION_MODEL_NAMES)
    + "]) as allocation_model)",
)

# The part of that rule a reader joins on its own: the slice belongs to both models (not only to
# the one it is stored for). A model's slices are these and the others in_allocation_model keeps.
IN_BOTH_ALLOCATION_MODELS = Macro(
    "in_both_allocation_models", ("allocation_models",), "({allocation_models} = 'both')"
)

# The columns of a slice no attempt holds (unallocated, or shared before a pool places it): no
# attempt, experiment or attribution, typed so the slice unions with attributed ones.
UNATTRIBUTED = Macro(
    "unattributed",
    (),
    ", ".join(
        f"cast(null as varchar) as {column}"
        for column in ("attempt_id", "experiment_id", "attribution_method", "confidence")
    ),
)

# A cost row of this snapshot (current) against the previous snapshot's (previous), outer-joined
# on `key` and the allocation model (same_row_and_model): its key, which sides hold it, and both
# sides' billed cost, unbilled estimate and cost status. A snapshot from before estimates has no
# cost_status: everything in it was billed.
SNAPSHOT_COST_PAIR = Macro(
    "snapshot_cost_pair",
    ("current", "previous", "key"),
    "coalesce({current}.{key}, {previous}.{key}) as {key}, "
    "coalesce({current}.allocation_model, {previous}.allocation_model) as allocation_model, "
    "{previous}.{key} is not null as in_previous, "
    "{current}.{key} is not null as in_current, "
    "{previous}.billed_cost as previous_billed_cost, "
    "{current}.billed_cost, "
    "coalesce({previous}.unbilled_estimate, 0) as previous_unbilled_estimate, "
    "{current}.unbilled_estimate, "
    "case when {previous}.{key} is not null "
    "then coalesce({previous}.cost_status, 'billed') end as previous_cost_status, "
    "{current}.cost_status",
    relations=("current", "previous"),
    words=("key",),
)

# A resource finding's period, currency, cost, idle hours and evidence, over its unplaced rests:
# the hours are summed as exact decimals, so the total does not depend on the order of the sum.
RESOURCE_FINDING_TOTALS = Macro(
    "resource_finding_totals",
    ("relation",),
    "min({relation}.billing_period) as billing_period, "
    "min({relation}.billing_currency) as billing_currency, "
    "sum({relation}.effective_cost) as effective_cost, "
    "exact_double_sum({relation}.idle_hours) as idle_hours, "
    "list_sort(list_distinct(list({relation}.line_id))) as evidence_line_ids",
    relations=("relation",),
)

# A DOUBLE quantity (hours, seconds) summed through exact decimals of 18 places: a DOUBLE sum
# depends on the order of the rows (threads, passes), this one does not, so a mart's hours are
# the same on every run. exact_double_sum_where sums the rows that meet a condition.
_EXACT_SUM = "cast(sum(cast({value} as decimal(38, 18))){where} as double)"
EXACT_DOUBLE_SUM = Macro(
    "exact_double_sum", ("value",), _EXACT_SUM.format(value="{value}", where="")
)
EXACT_DOUBLE_SUM_WHERE = Macro(
    "exact_double_sum_where",
    ("value", "condition"),
    _EXACT_SUM.format(value="{value}", where=" filter (where {condition})"),
)

MACROS = {
    macro.name: macro
    for macro in (
        FIRST_SLICE_TAKES_REST,
        EXACT_DECIMAL,
        LINE_ID,
        FILE_OF_LINE,
        HOUR_START_US,
        IN_RESOURCE_PARTITION,
        IN_FIRST_PASS,
        NFC_TEXT,
        FIRST_TAG_VALUE,
        ATTRIBUTION_TAG_KEYS,
        KNOWN_EXPERIMENTS,
        IN_ALLOCATION_MODEL,
        ALLOCATION_MODELS,
        IN_BOTH_ALLOCATION_MODELS,
        LINE_CHECKSUMS,
        LINE_PROFILE_COLUMNS,
        *PROFILE_MACROS,
        UNATTRIBUTED,
        EXACT_DOUBLE_SUM,
        EXACT_DOUBLE_SUM_WHERE,
        SNAPSHOT_COST_PAIR,
        RESOURCE_FINDING_TOTALS,
        *BASIS_MACROS,
        *KEY_MACROS,
        *ALLOCATED_MACROS,
        *FOCUS_MACROS,
    )
}
_CALL = re.compile(r"\b(" + "|".join(MACROS) + r")\s*\(", re.IGNORECASE)


def expand_macros(sql: str, where: str) -> str:
    """The SQL with every macro call replaced by its body (calls may nest)."""
    out, position = [], 0
    while (found := _next_call(sql, position)) is not None:
        start, name, open_paren = found
        arguments, end = _arguments(sql, open_paren, where)
        out.append(sql[position:start])
        expanded = [expand_macros(argument, where) for argument in arguments]
        # a body may call other macros (slices_taking_rest calls first_slice_takes_rest)
        out.append(expand_macros(MACROS[name.lower()].expand(expanded, where), where))
        position = end
    out.append(sql[position:])
    return "".join(out)


def _next_call(sql: str, position: int) -> tuple[int, str, int] | None:
    for match in _CALL.finditer(sql, position):
        if not _in_comment_or_string(sql, match.start()):
            return match.start(), match.group(1), match.end() - 1
    return None


def _in_comment_or_string(sql: str, index: int) -> bool:
    line_start = sql.rfind("\n", 0, index) + 1
    before = sql[line_start:index]
    return "--" in before.replace("'--'", "") or before.count("'") % 2 == 1


def _arguments(sql: str, open_paren: int, where: str) -> tuple[list[str], int]:
    """The top-level comma-separated arguments after ``open_paren``, and the index past ')'."""
    depth, quoted, current, arguments = 0, False, [], []
    comment = False  # a `--` comment inside the call (a noqa) is no part of an argument
    for index in range(open_paren + 1, len(sql)):
        char = sql[index]
        if comment or (not quoted and sql.startswith("--", index)):
            comment = char != "\n"
            if comment:
                continue
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            if depth == 0:
                arguments.append("".join(current))
                return arguments, index + 1
            depth -= 1
        elif not quoted and char == "," and depth == 0:
            arguments.append("".join(current))
            current = []
            continue
        current.append(char)
    raise ModelError(f"{where}: a macro call is not closed with ')'")
