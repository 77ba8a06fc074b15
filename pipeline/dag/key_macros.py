"""The keys models group and join on, written once: a ledger, a billing period, a profile's
period, a pool's window, a charge window, an attempt's resource, a slice (expanded by
pipeline.dag.macros)."""

from __future__ import annotations

from pipeline.common.macro import Macro, relation_columns, same_columns

# Two relations' rows of the same billing period: one provider's account's period (DESIGN.md section
# 10). A line without an account (NULL) belongs to the period of the lines without one.
_SAME_PERIOD = (
    "{left}.provider = {right}.provider "
    "and {left}.billing_account_id is not distinct from {right}.billing_account_id "
    "and {left}.billing_period = {right}.billing_period"
)
SAME_BILLING_PERIOD = Macro(
    "same_billing_period", ("left", "right"), f"({_SAME_PERIOD})", relations=("left", "right")
)

# A ledger's keys, for a select list or a group by: the provider's account's billing period in one
# currency, the grain a bill is reconciled at (DESIGN.md section 9).
LEDGER_KEYS = relation_columns(
    "ledger_keys", ("provider", "billing_account_id", "billing_period", "billing_currency")
)

# Two relations' rows of the same ledger: a billing period in one currency, the grain a bill is
# reconciled at (DESIGN.md section 9).
SAME_LEDGER = Macro(
    "same_ledger",
    ("left", "right"),
    f"({_SAME_PERIOD} "
    "and {left}.billing_currency is not distinct from {right}.billing_currency)",
    relations=("left", "right"),
)

# Two relations' rows of one profile in one billing period: a line's provider, account and currency
# are its profile's (normalized.cost_line_profiles), so lines and slices meet a period's facts on
# (profile_key, billing_period) instead of carrying the profile's columns.
SAME_PROFILE_PERIOD = same_columns("same_profile_period", ("profile_key", "billing_period"))

# Two relations' rows of one attempt's use of one resource (the grain of staging.attempt_resources
# and of the estimates, which price an attempt's resources before the bill arrives).
SAME_ATTEMPT_RESOURCE = same_columns("same_attempt_resource", ("attempt_id", "resource_id"))

# Two relations' rows of the same charge window (a line's usage interval): an instance line and
# the split rows or pods that re-split it, a line and its resource's held window.
SAME_CHARGE_PERIOD = same_columns(
    "same_charge_period", ("charge_period_start", "charge_period_end")
)

# A line's two windows: when its usage was charged, and the billing period it was billed in (a
# pool spreads a line over the attempts of one or the other, its `spread`).
LINE_WINDOWS = relation_columns(
    "line_windows",
    ("charge_period_start", "charge_period_end", "billing_period_start", "billing_period_end"),
)

# The allocation models (DESIGN.md section 8), by name: a stored slice belongs to one of them or to
# 'both' (in_allocation_model); allocation_models() lists them, and a FOCUS split by ratio places
# each model's rounding remainders (focus_ratio_sums).
ALLOCATION_MODEL_NAMES = ("marginal", "fully_loaded")

# A slice's key under an allocation model: its model, line, kind and attempt (the grain of
# allocation.cost_allocations, with the experiment of a slice no attempt holds).
SLICE_KEY = relation_columns(
    "slice_key", ("allocation_model", "line_id", "allocation_kind", "attempt_id")
)

# A pool's window: a pool spreads the lines charged in one window over the attempts running in it,
# so its weights, totals and shares are keyed by (pool_order, window_start, window_end).
_WINDOW_KEYS = ("pool_order", "window_start", "window_end")
POOL_WINDOW = relation_columns("pool_window", _WINDOW_KEYS)
SAME_POOL_WINDOW = same_columns("same_pool_window", _WINDOW_KEYS)

# Two relations' rows of one attempt or experiment (`key`) under one allocation model: a cost
# row and the previous snapshot's, a model's totals and its flags or outcomes.
SAME_ROW_AND_MODEL = Macro(
    "same_row_and_model",
    ("left", "right", "key"),
    "({left}.{key} = {right}.{key} and {left}.allocation_model = {right}.allocation_model)",
    relations=("left", "right"),
    words=("key",),
)


KEY_MACROS = (
    SAME_BILLING_PERIOD,
    SAME_LEDGER,
    LEDGER_KEYS,
    SAME_PROFILE_PERIOD,
    SAME_ATTEMPT_RESOURCE,
    SAME_CHARGE_PERIOD,
    LINE_WINDOWS,
    SLICE_KEY,
    POOL_WINDOW,
    SAME_POOL_WINDOW,
    SAME_ROW_AND_MODEL,
)
