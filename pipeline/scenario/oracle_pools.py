"""The oracle's exact arithmetic and its pools: expectations, rounding, drivers, spreading."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from pipeline.scenario.cur_writer import CurLine, period_bounds
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource

BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
PLACES = Decimal("0.0000000001")
ZERO = Decimal(0)


@dataclass(frozen=True)
class OraclePool:
    """A shared pool as the oracle sees it: a Python predicate standing in for the SQL selector."""

    name: str
    matches: Callable[[CurLine], bool]
    driver: str = "gpu_seconds"
    spread: str = "charge_period"
    eligible: Callable[[Attempt], bool] = lambda _attempt: True  # the pool's `attempts` filter
    basis: str = "effective_cost"  # what cost_weighted weighs attempts by


@dataclass
class Expectation:
    """Expected marts, keyed like the CSVs; money is Decimal with at most 10 places."""

    attempt_costs: dict[tuple[str, str], dict[str, Decimal]] = field(default_factory=dict)
    experiment_only: dict[tuple[str, str], dict[str, Decimal]] = field(default_factory=dict)
    pooled: dict[str, Decimal] = field(default_factory=lambda: dict.fromkeys(BASES, ZERO))
    # pool name -> basis -> what the pool spread over attempts (fully loaded)
    pool_spread: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    # (attempt_id, experiment_id, method) -> basis -> amount, for split_cost and split_unused
    split_slices: dict[tuple[str, str, str], dict[str, Decimal]] = field(default_factory=dict)
    bill_totals: dict[str, dict[str, Decimal]] = field(default_factory=dict)


def seconds_between(start: datetime, end: datetime) -> int:
    """Whole seconds from start to end, 0 when end is not after start."""
    return max(0, int((end - start).total_seconds()))


def overlap_of(start: datetime | None, end: datetime | None, lo: datetime, hi: datetime) -> int:
    """Seconds of [start, end) inside [lo, hi); a missing end runs to hi, no start is 0."""
    if start is None:
        return 0
    return seconds_between(max(start, lo), min(end or hi, hi))


def split(amount: Decimal, weights: list[Fraction]) -> list[Decimal]:
    """Slices of amount in proportion to weights, each to 10 places; the rounding remainder goes
    to the largest slice (the first of equals), so the slices sum exactly to amount."""
    if len(weights) == 1:
        return [amount]
    total = sum(weights, Fraction(0))
    slices = [
        round_places(Fraction(amount) * weight / total) if total else ZERO for weight in weights
    ]
    largest = max(range(len(weights)), key=lambda index: (weights[index], -index))
    slices[largest] += amount - sum(slices, ZERO)
    return slices


def round_places(value: Fraction) -> Decimal:
    """value rounded half-even to 10 decimal places, as DECIMAL(38, 10) casts round."""
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(
        PLACES, rounding=ROUND_HALF_EVEN
    )


class PoolSpreader:
    """fully_loaded only: the first matching pool spreads a line's unattributed part. Spreads
    wait until every line is attributed (flush), as cost_weighted needs the attributed costs."""

    def __init__(
        self, pools: list[OraclePool], attempts: list[Attempt], resources: list[AttemptResource]
    ) -> None:
        self.pools = pools
        self.attempts = attempts
        self.requests: dict[str, list[AttemptResource]] = defaultdict(list)
        for row in resources:
            if (row.vcpu_count or 0) > 0 or (row.memory_gib or 0) > 0:
                self.requests[row.attempt_id].append(row)
        self._weights: dict[tuple[str, datetime, datetime], list[tuple[str, Fraction]]] = {}
        self._attributed: list[tuple[str, datetime, datetime, str, Decimal]] = []
        self._pending: list[tuple[CurLine, str, Decimal]] = []

    def attributed(self, attempt_id: str, line: CurLine, basis: str, piece: Decimal) -> None:
        """Remember an attributed slice: cost_weighted weighs attempts by them."""
        self._attributed.append((attempt_id, line.usage_start, line.usage_end, basis, piece))

    def weights(self, pool: OraclePool, lo: datetime, hi: datetime) -> list[tuple[str, Fraction]]:
        """Eligible attempts that ran in [lo, hi), weighted by the pool's driver; weights above
        0 only (none: the line stays unallocated)."""
        key = (pool.name, lo, hi)
        if key in self._weights:
            return self._weights[key]
        ran = [
            attempt
            for attempt in self.attempts
            if pool.eligible(attempt) and overlap_of(attempt.started_at, attempt.ended_at, lo, hi)
        ]
        raw: dict[str, Fraction] = {}
        if pool.driver == "cpu_memory_requested":
            raw = self._requested(ran, lo, hi)
        for attempt in ran:
            seconds = overlap_of(attempt.started_at, attempt.ended_at, lo, hi)
            if pool.driver == "gpu_seconds":
                weight = Fraction(seconds * (attempt.gpu_count or 0))
            elif pool.driver == "attempt_count":
                weight = Fraction(int(attempt.started_at is not None and attempt.started_at >= lo))
            elif pool.driver == "cost_weighted":
                weight = sum(
                    (
                        Fraction(piece)
                        for attempt_id, start, end, basis, piece in self._attributed
                        if attempt_id == attempt.attempt_id
                        and basis == pool.basis
                        and start < hi
                        and end > lo
                    ),
                    Fraction(0),
                )
            elif pool.driver == "cpu_memory_requested":
                weight = raw.get(attempt.attempt_id, Fraction(0))
            else:
                weight = Fraction(1)
            if weight > 0:
                raw[attempt.attempt_id] = weight
        weights = [(a.attempt_id, raw[a.attempt_id]) for a in ran if raw.get(a.attempt_id, 0) > 0]
        self._weights[key] = weights
        return weights

    def _requested(self, ran: list[Attempt], lo: datetime, hi: datetime) -> dict[str, Fraction]:
        """vCPU share + memory share of each attempt's requested seconds in [lo, hi)."""
        cpu: dict[str, Fraction] = defaultdict(Fraction)
        memory: dict[str, Fraction] = defaultdict(Fraction)
        for attempt in ran:
            for row in self.requests.get(attempt.attempt_id, []):
                start = row.started_at or attempt.started_at
                held = overlap_of(start, row.ended_at or attempt.ended_at, lo, hi)
                cpu[attempt.attempt_id] += held * Fraction(str(row.vcpu_count or 0))
                memory[attempt.attempt_id] += held * Fraction(str(row.memory_gib or 0))
        cpu_total, memory_total = sum(cpu.values(), Fraction(0)), sum(memory.values(), Fraction(0))
        return {
            attempt.attempt_id: (cpu[attempt.attempt_id] / cpu_total if cpu_total else 0)
            + (memory[attempt.attempt_id] / memory_total if memory_total else 0)
            for attempt in ran
        }

    def spread(self, result: Expectation, line: CurLine, basis: str, amount: Decimal) -> None:
        """Queue a line's unattributed part for its pool (spread by flush)."""
        self._pending.append((line, basis, amount))

    def flush(self, result: Expectation) -> None:
        """Spread every queued part by its first matching pool."""
        for line, basis, amount in self._pending:
            self._spread(result, line, basis, amount)
        self._pending.clear()

    def _spread(self, result: Expectation, line: CurLine, basis: str, amount: Decimal) -> None:
        pool = next((pool for pool in self.pools if pool.matches(line)), None)
        if pool is None or not amount:
            return
        if pool.spread == "billing_period":
            lo, hi = period_bounds(line.billing_period)
        else:
            lo, hi = line.usage_start, line.usage_end
        weights = self.weights(pool, lo, hi)
        if not weights:
            return  # unallocated: pool_no_eligible_attempts or pool_driver_no_usage
        slices = split(amount, [weight for _, weight in weights])
        for (attempt_id, _), piece in zip(weights, slices, strict=True):
            result.attempt_costs[attempt_id, "fully_loaded"][basis] += piece
        result.pooled[basis] += amount
        spread = result.pool_spread.setdefault(pool.name, dict.fromkeys(BASES, ZERO))
        spread[basis] += amount
