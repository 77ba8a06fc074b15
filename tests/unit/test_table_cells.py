"""How a value reads in a terminal table: money to the cent, other numbers to 6 places."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pipeline.cli.cells import cell_text, is_money
from pipeline.common.money import MONEY_SQL


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [
        (Decimal("1464.5149999999"), "DECIMAL(38,10)", "1,464.51"),
        (Decimal("0.0050000000"), "DECIMAL(38,10)", "0.00"),  # half-even: to the even cent
        (Decimal("0.0150000000"), "DECIMAL(38,10)", "0.02"),
        (Decimal("-0.0010000000"), "DECIMAL(38,10)", "0.00"),  # never "-0.00"
        (Decimal("-250.0000000000"), "DECIMAL(38,10)", "-250.00"),
        (Decimal("1234567.8900000000"), "DECIMAL(38,10)", "1,234,567.89"),
        (Decimal("3.5000000000"), "DECIMAL(38,6)", "3.5"),  # not money: 6 places, no zeros
        (Decimal("0.0000001234"), "DECIMAL(38,10)", "0.00"),
        (Decimal("0.0000001234"), "DECIMAL(38,20)", "1.23e-7"),  # tiny: 3 significant digits
        (14.333333333333334, "DOUBLE", "14.333333"),
        (0.6842033799, "DOUBLE", "0.684203"),
        (24.0, "DOUBLE", "24"),
        (1.5e-9, "DOUBLE", "1.5e-9"),
        (float("nan"), "DOUBLE", "nan"),
        (0.0, "DOUBLE", "0"),
        (22222, "BIGINT", "22222"),
        ("222222222222", "VARCHAR", "222222222222"),
        (None, "DECIMAL(38,10)", ""),
    ],
)
def test_cell_text_rounds_for_reading(value: object, kind: str, text: str) -> None:
    assert cell_text(value, kind) == text


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [
        (Decimal("1464.5149999999"), "DECIMAL(38,10)", "1,464.5149999999"),
        (Decimal("17.0160000000"), "DECIMAL(38,10)", "17.016"),
        (14.333333333333334, "DOUBLE", "14.333333333333334"),
    ],
)
def test_exact_keeps_every_digit(value: object, kind: str, text: str) -> None:
    assert cell_text(value, kind, exact=True) == text


def test_the_money_type_is_money() -> None:
    assert is_money(MONEY_SQL) and is_money("DECIMAL(38,10)")
    assert not is_money("DECIMAL(38,6)") and not is_money("DOUBLE")
