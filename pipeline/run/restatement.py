"""A restated final billing period may not lose a whole account the published one holds."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb

from pipeline.common.errors import InputError
from pipeline.run.carry import in_months
from pipeline.warehouse.snapshots import snapshot_record, sql_path

# The published tables the accounts of a final period are read from.
_TABLES = (
    "normalized.billing_periods",
    "normalized.cost_line_facts",
    "normalized.cost_line_profiles",
)
# An account is the sub-account (AWS linked account, GCP project, FOCUS SubAccountId) where the
# bill names one, else the billing account.
_ACCOUNTS = """
    select
        profiles.provider,
        coalesce(profiles.billing_account_id, '') as billing_account_id,
        facts.billing_period,
        coalesce(profiles.sub_account_id, profiles.billing_account_id, '') as account_id,
        count(*) as cost_lines
    from {facts} as facts
    inner join {profiles} as profiles on facts.profile_key = profiles.profile_key
    where {built}
    group by all
"""


def check_restated_accounts(
    con: duckdb.DuckDBPyConnection,
    folder: Path | None,
    allowed: Iterable[str] = (),
    built: tuple[str, ...] | None = None,
) -> None:
    """Refuse a build in which a period final in the published snapshot ``folder`` lost an
    account: a restatement corrects amounts and adds lines, it does not drop an account, and
    one dropped stays under the 10% line guard of ingest when the account is small. A period
    with no lines left at all is the ingest guard's (pipeline.ingest.redelivery), which has
    stopped it already unless --allow-shrink named it.

    ``allowed``: the periods runcost run --allow-shrink names (YYYY-MM), taken as restated so.
    ``built``: the billing months the night built (None: every month); a carried month's lines
    are the snapshot's own, so only the built months' are compared.
    """
    readers = _published(folder)
    if readers is None:
        return
    periods, facts, profiles = readers
    months = in_months("facts.billing_period", built)
    published = _ACCOUNTS.format(facts=facts, profiles=profiles, built=months)
    lines = _ACCOUNTS.format(
        facts="normalized.cost_line_facts", profiles="normalized.cost_line_profiles", built=months
    )
    lost = con.execute(
        f"""
        with published as ({published}),
        final_periods as (
            select provider, coalesce(billing_account_id, '') as billing_account_id,
                billing_period
            from {periods}
            where is_final
        ),
        built as ({lines}),
        built_periods as (
            select distinct provider, billing_account_id, billing_period from built
        )
        select published.provider, published.billing_account_id, published.billing_period,
            published.account_id, published.cost_lines
        from published
        semi join final_periods using (provider, billing_account_id, billing_period)
        semi join built_periods using (provider, billing_account_id, billing_period)
        anti join built using (provider, billing_account_id, billing_period, account_id)
        order by all
        """
    ).fetchall()
    lost = [row for row in lost if row[2] not in set(allowed)]
    if not lost:
        return
    provider, billing_account, period = lost[0][:3]
    accounts = [row for row in lost if row[:3] == (provider, billing_account, period)]
    named = ", ".join(
        f"{account} ({lines} line{'s' if lines != 1 else ''})" for *_, account, lines in accounts
    )
    others = len(lost) - len(accounts)
    more = f"; {others} more account(s) of other periods are missing too" if others else ""
    raise InputError(
        f"billing period {period} of {provider} billing account {billing_account} is final in "
        f"the published snapshot {folder.name}, but its restatement has no lines of "
        f"account{'s' if len(accounts) > 1 else ''} {named}{more}; a restatement corrects "
        "amounts and adds lines, it does not drop a whole account, so nothing was published and "
        "the current snapshot stays current. If the provider really restated it so, run once "
        f"with `runcost run --allow-shrink {period}`; otherwise fix the export (it left the "
        "account out) and run again"
    )


def _published(folder: Path | None) -> tuple[str, str, str] | None:
    """read_parquet() of the published billing periods, line facts and profiles, or None."""
    record = snapshot_record(folder) if folder is not None else None
    if folder is None or record is None:
        return None
    entries = [record.get("tables", {}).get(name) for name in _TABLES]
    if any(entry is None or not entry.get("rows") for entry in entries):
        return None
    readers = []
    for entry in entries:
        location = folder / entry["path"]
        column = entry.get("partition_by")
        readers.append(
            f"read_parquet('{sql_path(location)}/*/*.parquet', hive_partitioning = true, "
            f"hive_types = {{'{column}': 'varchar'}})"
            if column
            else f"read_parquet('{sql_path(location)}')"
        )
    return readers[0], readers[1], readers[2]
