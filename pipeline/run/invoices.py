"""[invoices] file: the analyst's invoice amounts (CSV), loaded as raw.invoices and checked."""

from __future__ import annotations

import csv
import logging
from decimal import Decimal, InvalidOperation
from pathlib import Path

import duckdb

from pipeline.common.errors import InputError

log = logging.getLogger("runcost")

COLUMNS = ("invoice_id", "amount", "currency")


def read_invoices(path: Path) -> list[tuple[str, Decimal, str, int]]:
    """(invoice_id, amount, currency, row number) per data row; a bad file raises InputError."""
    if not path.is_file():
        raise InputError(
            f"{path}: no such invoice file; fix invoices.file in runcost.toml or remove it"
        )
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        header = [name.strip() for name in reader.fieldnames or []]
        missing = [name for name in COLUMNS if name not in header]
        if missing:
            raise InputError(
                f"{path}: missing column(s) {', '.join(missing)}; the invoice file needs a "
                f"header row with {', '.join(COLUMNS)}"
            )
        rows: list[tuple[str, Decimal, str, int]] = []
        seen: dict[str, int] = {}
        for number, raw in enumerate(reader, start=2):
            row = {(key or "").strip(): (value or "").strip() for key, value in raw.items()}
            invoice, text, currency = row["invoice_id"], row["amount"], row["currency"].upper()
            if not invoice or not currency:
                raise InputError(f"{path}: row {number}: invoice_id and currency must be filled")
            try:
                amount = Decimal(text)
            except InvalidOperation as error:
                raise InputError(
                    f"{path}: row {number}: amount {text!r} of invoice {invoice} is not a "
                    "number; write it like 1234.56, without a currency sign or thousands "
                    "separators"
                ) from error
            if not amount.is_finite():
                raise InputError(f"{path}: row {number}: amount {text!r} is not a number")
            if invoice in seen:
                raise InputError(
                    f"{path}: row {number}: invoice {invoice} is listed again (first on row "
                    f"{seen[invoice]}); keep one row per invoice"
                )
            seen[invoice] = number
            rows.append((invoice, amount, currency, number))
    return rows


def load_invoices(con: duckdb.DuckDBPyConnection, path: Path | None) -> None:
    """Fill raw.invoices (created empty by create_history_inputs) from the invoice file."""
    if path is None:
        return
    rows = read_invoices(path)
    con.execute("delete from raw.invoices")
    if rows:
        con.executemany("insert into raw.invoices values (?, ?, ?, ?)", rows)


def check_invoice_currencies(con: duckdb.DuckDBPyConnection, path: Path | None) -> None:
    """An invoice billed in one currency and listed in another is bad input: raise InputError."""
    if path is None:
        return
    rows = con.execute(
        "select invoices.invoice_id, invoices.source_row, invoices.currency, "
        "min(lines.billing_currency), count(distinct lines.billing_currency) "
        "from raw.invoices as invoices "
        "inner join normalized.cost_lines as lines on invoices.invoice_id = lines.invoice_id "
        "group by invoices.invoice_id, invoices.source_row, invoices.currency "
        "having count(distinct lines.billing_currency) > 1 "
        "or min(lines.billing_currency) <> invoices.currency "
        "order by invoices.source_row"
    ).fetchall()
    if rows:
        invoice, number, listed, billed, _count = rows[0]
        raise InputError(
            f"{path}: row {number}: invoice {invoice} is in {listed}, but the bill charges it in "
            f"{billed}; write the amount in {billed} as the invoice states it (runcost does not "
            "convert currencies)"
        )
    unknown = con.execute(
        "select invoice_id from raw.invoices where invoice_id not in "
        "(select invoice_id from normalized.cost_lines where invoice_id is not null) "
        "order by source_row"
    ).fetchall()
    if unknown:
        log.info(
            "%s: %d invoice(s) match no bill line yet (%s); they are not compared",
            path,
            len(unknown),
            ", ".join(row[0] for row in unknown[:5]),
            extra={"stage": "checks"},
        )
