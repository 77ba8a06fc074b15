"""Slurm field parsers: numbers, times, TRES lists and hostlists as sacct writes them."""

from __future__ import annotations

import datetime as dt
import logging
from zoneinfo import ZoneInfo

import hostlist

log = logging.getLogger("runcost")

UTC = dt.UTC
NO_NODES = ("", "none assigned", "(null)", "none")
NO_TIME = ("", "unknown", "none", "n/a")


def parse_number(value: object) -> int | None:
    """An int from sacct JSON: plain, or {"set": true, "number": n} (data_parser v0.0.39+)."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    text = str(value or "").strip()
    return int(text) if text.isdigit() else None


def parse_epoch(value: object) -> dt.datetime | None:
    seconds = parse_number(value)  # sacct writes 0 for a time that has not come (not started/ended)
    return dt.datetime.fromtimestamp(seconds, UTC) if seconds else None


def parse_gpus(pairs: list[tuple[str, object]]) -> tuple[int | None, str | None, int | None]:
    """(gpu_count, gpu_type, node_count) from TRES: gres/gpu, else the sum of gres/gpu:<type>."""
    plain = typed = nodes = None
    types = []
    for name, count in pairs:
        if name == "gres/gpu":
            plain = parse_number(count)
        elif name.startswith("gres/gpu:"):
            typed = (typed or 0) + (parse_number(count) or 0)
            types.append(name.split(":", 1)[1])
        elif name == "node":
            nodes = parse_number(count)
    return (plain if plain is not None else typed), (",".join(sorted(types)) or None), nodes


# ---- sacct --parsable2 -------------------------------------------------------------------


def parse_tres(text: str) -> list[tuple[str, object]]:
    """billing=96,cpu=96,gres/gpu:a100=8,mem=1120G,node=1 -> [(name, count)]."""
    pairs = [item.partition("=") for item in text.split(",") if "=" in item]
    return [(name.strip(), value.strip()) for name, _, value in pairs]


def parse_local_time(text: str, zone: ZoneInfo | None, column: str) -> dt.datetime | None:
    """A sacct time (naive local, with an offset, or epoch seconds) in UTC; Unknown -> None."""
    text = text.strip()
    if text.lower() in NO_TIME:
        return None
    if text.isdigit():  # SLURM_TIME_FORMAT=%s
        return dt.datetime.fromtimestamp(int(text), UTC)
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{column} {text!r} is not a time; unset SLURM_TIME_FORMAT") from None
    if value.tzinfo is None:
        if zone is None:
            raise ValueError(
                f"{column} {text!r} has no time zone; set the cluster's zone in the source's "
                'options (timezone = "America/Toronto")'
            )
        value = value.replace(tzinfo=zone)
    return value.astimezone(UTC)


def expand_hostlist(text: str) -> list[str]:
    """Slurm hostlist -> node names (python-hostlist): gpu-[01-02,07],cpu1 -> gpu-01 ... cpu1.

    A malformed list (n[1-3, n[10-8], n[a-b]) raises ValueError naming it.
    """
    if text.strip().lower() in NO_NODES:
        return []
    try:
        names = hostlist.expand_hostlist(text.strip())
    except hostlist.BadHostlist as exc:
        raise ValueError(
            f"NodeList {text!r} is not a Slurm hostlist ({exc}); export it as sacct writes it "
            "(gpu-[01-04,07]) or check it with scontrol show hostnames"
        ) from None
    return list(dict.fromkeys(names))


# ---- attempts and resources --------------------------------------------------------------
