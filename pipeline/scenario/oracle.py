"""Ground truth: the cost rules applied to the scenario in exact Python arithmetic, no SQL."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from pipeline.scenario.cur_writer import CurLine, Money, money
from pipeline.scenario.oracle_pools import (
    BASES,
    ZERO,
    Expectation,
    OraclePool,
    PoolSpreader,
    overlap_of,
    round_places,
    seconds_between,
    split,
)
from pipeline.scenario.telemetry_writer import (
    Attempt,
    AttemptResource,
    Experiment,
)

SPLIT_OPERATIONS = ("EKSPod-EC2", "ECSTask-EC2")  # split rows re-split instance rows: never billed
INSTANCE_LINE_TYPES = ("Usage", "DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation")
MODELS = ("fully_loaded", "marginal")


@dataclass(frozen=True)
class Part:
    """A share of one line: to an attempt, to an experiment alone, or unattributed (both None)."""

    share: Fraction
    attempt_id: str | None = None
    experiment_id: str | None = None
    method: str = "unattributed"


def _amount(value: Money | None) -> Decimal:
    return ZERO if value is None else money(value)


def cost_bases(line: CurLine) -> dict[str, Decimal]:
    """billed, effective, list and net cost of one line, per the brief's CASE."""
    kind = line.line_item_type
    billed = _amount(line.unblended_cost)
    listed = ZERO if kind == "SavingsPlanNegation" else _amount(line.public_on_demand_cost)

    def amortized(net: bool) -> Decimal:
        def pick(net_value: Money | None, value: Money | None) -> Decimal:
            return _amount(net_value if net and net_value is not None else value)

        if kind == "SavingsPlanCoveredUsage":
            return pick(line.savings_plan_net_effective_cost, line.savings_plan_effective_cost)
        if kind == "SavingsPlanRecurringFee":  # no net twins exist for these two columns
            return _amount(line.savings_plan_total_commitment_to_date) - _amount(
                line.savings_plan_used_commitment
            )
        if kind in ("SavingsPlanNegation", "SavingsPlanUpfrontFee"):
            return ZERO
        if kind == "DiscountedUsage":
            return pick(line.reservation_net_effective_cost, line.reservation_effective_cost)
        if kind == "RIFee":
            return pick(
                line.reservation_net_unused_amortized_upfront_fee,
                line.reservation_unused_amortized_upfront_fee,
            ) + pick(
                line.reservation_net_unused_recurring_fee, line.reservation_unused_recurring_fee
            )
        if kind == "Fee" and line.reservation_arn:
            return ZERO
        if net and kind in ("EdpDiscount", "PrivateRateDiscount"):
            return ZERO
        return pick(line.net_unblended_cost, line.unblended_cost)

    return {
        "billed_cost": billed,
        "effective_cost": amortized(net=False),
        "list_cost": listed,
        "net_cost": amortized(net=True),
    }


@dataclass
class SplitGroups:
    """An instance-hour's pods: (attempt_id, experiment_id) -> (split cost, unused cost) of the
    placed ones, the split + unused cost of the pods no tag places, and the hour's total."""

    placed: dict[tuple[str | None, str | None], tuple[Fraction, Fraction]] = field(
        default_factory=dict
    )
    unplaced: Fraction = Fraction(0)
    total: Fraction = Fraction(0)


class Attributor:
    """Rules 1-4 of the brief: tag, experiment tag, resource+time, else unattributed."""

    def __init__(
        self,
        attempts: list[Attempt],
        resources: list[AttemptResource],
        experiments: list[Experiment],
        attempt_keys: tuple[str, ...],
        experiment_keys: tuple[str, ...],
    ) -> None:
        self.attempts = {attempt.attempt_id: attempt for attempt in attempts}
        self.experiments = {item.experiment_id for item in experiments} | {
            attempt.experiment_id for attempt in attempts
        }
        self.attempt_keys = attempt_keys
        self.experiment_keys = experiment_keys
        self.held: dict[str, list[AttemptResource]] = defaultdict(list)
        for row in resources:
            self.held[row.resource_id].append(row)
        # (parent instance, start, end) -> pod -> [tags, split cost, unused cost]
        self.pods: dict[tuple, dict[str, list]] = defaultdict(dict)

    def add_split_row(self, line: CurLine) -> None:
        """Remember one split row (a pod's vCPU, GB or accelerator share of an instance-hour)."""
        parent = line.columns.get("split_line_item_parent_resource_id") or ""
        if not parent:
            return
        pod = self.pods[parent, line.usage_start, line.usage_end].setdefault(
            line.resource_id, [line.resource_tags, Fraction(0), Fraction(0)]
        )
        pod[1] += Fraction(money(line.columns.get("split_line_item_split_cost") or 0))
        pod[2] += Fraction(money(line.columns.get("split_line_item_unused_cost") or 0))

    def _tag_parts(self, tags: dict[str, str]) -> Part | None:
        attempt_tag = next((tags[k] for k in self.attempt_keys if tags.get(k)), None)
        if attempt_tag in self.attempts:
            experiment = self.attempts[attempt_tag].experiment_id
            return Part(Fraction(1), attempt_tag, experiment, "tag")
        experiment_tag = next((tags[k] for k in self.experiment_keys if tags.get(k)), None)
        if experiment_tag in self.experiments:
            return Part(Fraction(1), None, experiment_tag, "experiment_tag")
        return None

    def split_groups(self, line: CurLine) -> SplitGroups | None:
        """The pods of an untagged instance line's hour, by attempt; None when split does not
        apply (not an instance usage line, tagged, no pods, or no pod placed)."""
        instance = line.line_item_type in INSTANCE_LINE_TYPES and line.instance_type
        pods = self.pods.get((line.resource_id, line.usage_start, line.usage_end))
        if not instance or not pods or self._tag_parts(line.resource_tags) is not None:
            return None
        groups = SplitGroups()
        for tags, split_cost, unused_cost in pods.values():
            part = self._tag_parts(tags)
            groups.total += split_cost + unused_cost
            if part is None:
                groups.unplaced += split_cost + unused_cost
                continue
            key = (part.attempt_id, part.experiment_id)
            split_sum, unused_sum = groups.placed.get(key, (Fraction(0), Fraction(0)))
            groups.placed[key] = (split_sum + split_cost, unused_sum + unused_cost)
        if groups.total <= 0 or groups.total == groups.unplaced:
            return None
        return groups

    def parts(self, line: CurLine) -> list[Part]:
        tagged = self._tag_parts(line.resource_tags)
        if tagged is not None:
            return [tagged]
        parts = self._resource_time(line) if line.resource_id else []
        rest = 1 - sum((part.share for part in parts), Fraction(0))
        return [*parts, Part(rest)] if rest else parts

    def _resource_time(self, line: CurLine) -> list[Part]:
        lo, hi = line.usage_start, line.usage_end
        overlap: dict[str, int] = defaultdict(int)
        for row in self.held.get(line.resource_id, []):
            attempt = self.attempts[row.attempt_id]
            start = row.started_at or attempt.started_at
            end = row.ended_at or attempt.ended_at
            seconds = overlap_of(start, end, lo, hi)
            if seconds:
                overlap[row.attempt_id] += seconds
        if not overlap:
            return []
        window = seconds_between(lo, hi)
        active = Fraction(window)
        if line.pricing_unit == "Hrs":
            active = min(Fraction(Decimal(str(line.usage_amount))) * 3600, active)
        denominator = max(active, Fraction(sum(overlap.values())))
        return [
            Part(
                Fraction(seconds) / denominator,
                attempt_id,
                self.attempts[attempt_id].experiment_id,
                "resource_time",
            )
            for attempt_id, seconds in sorted(overlap.items())
        ]


def compute(
    lines: list[CurLine],
    attempts: list[Attempt],
    resources: list[AttemptResource],
    experiments: list[Experiment],
    pools: list[OraclePool],
    attempt_keys: tuple[str, ...] = ("user_attempt_id",),
    experiment_keys: tuple[str, ...] = ("user_experiment_id",),
    excluded: Callable[[CurLine], bool] = lambda _line: False,
) -> Expectation:
    """Every attempt's and experiment's cost under both models, and the bill totals. Lines
    `excluded` selects (inference) stay unallocated in both models; pools spread last, once
    every line is attributed (cost_weighted weighs attempts by what they were attributed)."""
    attributor = Attributor(attempts, resources, experiments, attempt_keys, experiment_keys)
    spreader = PoolSpreader(pools, attempts, resources)
    result = empty_expectation(attempts)
    for line in lines:
        if line.operation in SPLIT_OPERATIONS:
            attributor.add_split_row(line)
    for line in lines:
        if line.operation in SPLIT_OPERATIONS:
            continue
        bases = cost_bases(line)
        totals = result.bill_totals.setdefault(line.billing_period, dict.fromkeys(BASES, ZERO))
        if excluded(line):
            for basis, amount in bases.items():
                totals[basis] += amount  # unallocated as excluded_inference, in both models
            continue
        groups = attributor.split_groups(line)
        if groups is not None:
            _split_line(result, spreader, line, groups)
            continue
        place_line(result, spreader, line, bases, attributor.parts(line))
    spreader.flush(result)
    return result


def empty_expectation(attempts: list[Attempt]) -> Expectation:
    """An Expectation with every attempt at zero in both models and every basis."""
    result = Expectation()
    for attempt in attempts:
        for model in MODELS:
            result.attempt_costs[attempt.attempt_id, model] = dict.fromkeys(
                (*BASES, "estimated_cost"), ZERO
            )
    return result


def place_line(
    result: Expectation,
    spreader: PoolSpreader,
    line: Any,
    bases: dict[str, Decimal],
    parts: list[Part],
) -> None:
    """Add a line's bases to its billing period's totals and place each part of every basis
    (both models); a part nobody took goes to the first matching pool (fully loaded)."""
    totals = result.bill_totals.setdefault(line.billing_period, dict.fromkeys(BASES, ZERO))
    for basis, amount in bases.items():
        totals[basis] += amount
        slices = split(amount, [part.share for part in parts])
        for part, piece in zip(parts, slices, strict=True):
            for model in MODELS:
                _place(result, model, basis, part, piece)
            if part.attempt_id is None and part.experiment_id is None:
                spreader.spread(result, line, basis, piece)
            elif part.attempt_id is not None:
                spreader.attributed(part.attempt_id, line, basis, piece)


def _rank(item: tuple[tuple[str | None, str | None], Fraction]) -> tuple:
    """SQL's slice order: weight descending, then attempt_id and experiment_id, NULLs last."""
    (attempt_id, experiment_id), weight = item
    return (
        -weight,
        attempt_id is None,
        attempt_id or "",
        experiment_id is None,
        experiment_id or "",
    )


def _slices(
    amount: Decimal, weights: dict, total: Fraction, rest: Decimal | None
) -> dict[tuple[str | None, str | None], Decimal]:
    """amount * weight / total per key, rounded to 10 places; when rest is given, the first
    slice in SQL's order takes rest - sum(others) so the slices sum exactly to rest."""
    ordered = sorted(((key, weight) for key, weight in weights.items() if weight > 0), key=_rank)
    slices = {key: round_places(Fraction(amount) * weight / total) for key, weight in ordered}
    if rest is not None and ordered:
        first = ordered[0][0]
        slices[first] = rest - (sum(slices.values(), ZERO) - slices[first])
    return slices


def _split_line(
    result: Expectation, spreader: PoolSpreader, line: CurLine, groups: SplitGroups
) -> None:
    """An instance line split among its hour's pods: each placed pod's split cost share is
    attributed (both models); in fully loaded each placed pod also takes its unused cost share,
    and the part of pods no tag places goes to a pool or stays unallocated."""
    split_weights = {key: split for key, (split, _) in groups.placed.items()}
    unused_weights = {key: unused for key, (_, unused) in groups.placed.items()}
    whole = sum(split_weights.values(), Fraction(0)) == groups.total
    bases = cost_bases(line)
    totals = result.bill_totals.setdefault(line.billing_period, dict.fromkeys(BASES, ZERO))
    for basis, amount in bases.items():
        totals[basis] += amount
        attributed = _slices(amount, split_weights, groups.total, amount if whole else None)
        rest = amount - sum(attributed.values(), ZERO)
        idle = _slices(amount, unused_weights, groups.total, None if groups.unplaced else rest)
        for key, piece in attributed.items():
            part = Part(Fraction(0), key[0], key[1], "split_cost")
            for model in MODELS:
                _place(result, model, basis, part, piece)
            _record_split(result, key, "split_cost", basis, piece)
            if key[0] is not None:
                spreader.attributed(key[0], line, basis, piece)
        for key, piece in idle.items():
            _place(result, "fully_loaded", basis, Part(Fraction(0), key[0], key[1]), piece)
            _record_split(result, key, "split_unused", basis, piece)
        unplaced = rest - sum(idle.values(), ZERO)
        if unplaced:
            spreader.spread(result, line, basis, unplaced)


def _record_split(result: Expectation, key: tuple, method: str, basis: str, piece: Decimal) -> None:
    row = result.split_slices.setdefault(
        (key[0] or "", key[1] or "", method), dict.fromkeys(BASES, ZERO)
    )
    row[basis] += piece


def _place(result: Expectation, model: str, basis: str, part: Part, piece: Decimal) -> None:
    if part.attempt_id is not None:
        row = result.attempt_costs[part.attempt_id, model]
        row[basis] += piece
        if part.method == "resource_time" and basis == "effective_cost":
            row["estimated_cost"] += piece
    elif part.experiment_id is not None:
        row = result.experiment_only.setdefault(
            (part.experiment_id, model), dict.fromkeys(BASES, ZERO)
        )
        row[basis] += piece
