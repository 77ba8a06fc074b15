"""[estimates], [invoices], [periods] and warehouse.snapshot_retention_days in runcost.toml."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from pipeline.common.errors import ConfigError

SECTIONS: dict[str, set[str]] = {
    "estimates": {"prices"},
    "invoices": {"file"},
    "periods": {"gcp_settle_days"},
}
WAREHOUSE_KEYS = {"snapshot_retention_days"}
_PRICE_KEYS = {"instance_type", "region", "price_per_hour", "currency"}


@dataclass(frozen=True)
class EstimatePrice:
    """One [[estimates.prices]] row: the hourly price of an instance type in a region."""

    instance_type: str
    region: str
    price_per_hour: Decimal
    currency: str


@dataclass(frozen=True)
class PeriodSettings:
    """How estimates are priced, how periods close, the analyst's invoices, snapshot history."""

    prices: tuple[EstimatePrice, ...] = ()
    invoice_file: Path | None = None
    gcp_settle_days: int = 3
    snapshot_retention_days: int = 35


def parse_period_settings(data: dict[str, Any], base: Path, where: str) -> PeriodSettings:
    """Validate the sections this module owns; relative paths are taken from ``base``."""
    estimates = data.get("estimates", {})
    invoices = data.get("invoices", {})
    periods = data.get("periods", {})
    warehouse = data.get("warehouse", {})

    settle = periods.get("gcp_settle_days", 3)
    if isinstance(settle, bool) or not isinstance(settle, int) or settle < 0:
        raise ConfigError(
            f"{where}: periods.gcp_settle_days must be a whole number of days, 0 or more (how "
            "long a closed GCP invoice month must receive no rows before it counts as final)"
        )
    retention = warehouse.get("snapshot_retention_days", 35)
    if isinstance(retention, bool) or not isinstance(retention, int) or retention < 0:
        raise ConfigError(
            f"{where}: warehouse.snapshot_retention_days must be a whole number of days, 0 or "
            "more (how long a replaced snapshot stays readable with runcost sql --as-of)"
        )
    invoice_file = invoices.get("file")
    if invoice_file is not None and (not isinstance(invoice_file, str) or not invoice_file):
        raise ConfigError(f'{where}: invoices.file must be a file name, such as "invoices.csv"')
    resolved = None
    if invoice_file is not None:
        candidate = Path(invoice_file).expanduser()
        resolved = candidate if candidate.is_absolute() else (base / candidate).resolve()
    return PeriodSettings(
        prices=_parse_prices(estimates.get("prices", []), where),
        invoice_file=resolved,
        gcp_settle_days=settle,
        snapshot_retention_days=retention,
    )


def _parse_prices(value: Any, where: str) -> tuple[EstimatePrice, ...]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ConfigError(f"{where}: estimates.prices must be [[estimates.prices]] tables")
    prices: list[EstimatePrice] = []
    seen: set[tuple[str, str]] = set()
    for number, item in enumerate(value, start=1):
        what = f"{where}: estimates.prices[{number}]"
        if set(item) != _PRICE_KEYS:
            raise ConfigError(
                f"{what}: needs exactly instance_type, region, price_per_hour and currency; "
                f"found {', '.join(sorted(item)) or 'nothing'}"
            )
        for key in ("instance_type", "region", "currency"):
            if not isinstance(item[key], str) or not item[key]:
                raise ConfigError(f"{what}: {key} must be a non-empty string")
        price = _price(item["price_per_hour"], what)
        key = (item["instance_type"], item["region"])
        if key in seen:
            raise ConfigError(f"{what}: {key[0]} in {key[1]} is priced twice; keep one row")
        seen.add(key)
        prices.append(EstimatePrice(item["instance_type"], item["region"], price, item["currency"]))
    return tuple(prices)


MAX_PRICE = Decimal("1e9")


def _price(value: Any, what: str) -> Decimal:
    # a TOML float such as 32.77 is read back through its text, so the decimal is exact
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f'{what}: price_per_hour must be a number, such as 32.7726 or "32.7726"')
    try:
        price = Decimal(str(value))
    except InvalidOperation as error:
        raise ConfigError(f"{what}: price_per_hour {value!r} is not a number") from error
    if not price.is_finite() or price < 0:
        raise ConfigError(f"{what}: price_per_hour must be 0 or more, not {value!r}")
    if price >= MAX_PRICE:
        raise ConfigError(
            f"{what}: price_per_hour {value!r} is not a price per hour (it must be below "
            f"{MAX_PRICE:.0e}, and DECIMAL(38, 10) sums overflow beyond); write the hourly price"
        )
    return price
