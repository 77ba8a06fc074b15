"""Why an AWS check failed when the CUR export is the cause: the delivery, file, row and
column to fix (pipeline.run.check_causes says it on the first line of CheckFailed's message)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry loads this module on every command
    import duckdb


def split_parents_without_resource_id(
    con: duckdb.DuckDBPyConnection, rows: list[dict[str, object]]
) -> str | None:
    """A split cost row names its EC2 instance by resource id; an instance line of that hour
    without one (line_item_resource_id empty) leaves the split rows with no instance."""
    hours = sorted(
        {
            (row["charge_period_start"], row["charge_period_end"])
            for row in rows
            if row.get("instance_lines") == 0
        }
    )
    if not hours:
        return None
    con.execute(
        "create or replace temp table runcost_failed_hours "
        "(start_at timestamptz, end_at timestamptz)"
    )
    con.executemany("insert into runcost_failed_hours values (?, ?)", hours)
    found = con.execute(
        """
        with unnamed as (
            select
                lines.source_delivery,
                lines.source_file,
                lines.source_line,
                lines.instance_type,
                lines.charge_period_start
            from normalized.cost_lines as lines
            semi join runcost_failed_hours as hours
                on lines.charge_period_start = hours.start_at
                and lines.charge_period_end = hours.end_at
            where
                lines.provider = 'aws'
                and lines.charge_category = 'Usage'
                and coalesce(lines.instance_type, '') <> ''
                and lines.resource_id is null
        ),

        first_file as (
            select source_delivery, source_file from unnamed
            order by source_delivery, source_file limit 1
        )

        select
            deliveries.export_name,
            deliveries.billing_period,
            first_file.source_delivery,
            first_file.source_file,
            (
                select list(unnamed.source_line order by unnamed.source_line)
                from unnamed
                where unnamed.source_file = first_file.source_file
                and unnamed.source_delivery = first_file.source_delivery
            ) as source_lines,
            (select count(*) from unnamed) as lines_in_hours
        from first_file
        left join raw.billing_deliveries as deliveries
            on deliveries.delivery_id = first_file.source_delivery
        """
    ).fetchone()
    con.execute("drop table runcost_failed_hours")
    if found is None:
        return None
    export, period, delivery, file, lines, count = found
    if str(file).startswith("converted/"):  # the CSV's line 1 is its header
        where = f"the CSV converted to {file}, line"
        numbers = [line + 2 for line in lines]
    else:
        where, numbers = f"{file}, row", [line + 1 for line in lines]
    shown = ", ".join(str(number) for number in numbers[:5])
    more = f" and {count - len(numbers[:5])} more" if count > len(numbers[:5]) else ""
    plural = "s" if len(numbers) > 1 else ""
    return (
        f"{count} EC2 instance line(s) of those hours have no resource id, so the split cost "
        f"rows find no instance line to add up to: {export} {period} (delivery {delivery}), "
        f"{where}{plural} {shown}{more}, column line_item_resource_id is empty. Enable "
        '"Include resource IDs" in the CUR export (split cost allocation data needs them) and '
        "let AWS re-deliver the period, or re-deliver the file as AWS wrote it"
    )


EXPLAINED = {"split_cost_matches_instance": split_parents_without_resource_id}
