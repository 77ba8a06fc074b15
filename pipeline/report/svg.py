"""Charts drawn as inline SVG from already aggregated numbers: stacked bars, lines, a scatter,
timelines."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")
PALETTE += ("#ff9da7", "#9c755f", "#bab0ac")
FONT = "font-family='system-ui, sans-serif' font-size='11'"


@dataclass(frozen=True)
class Box:
    """A label's room in chart units: left, top, right, bottom."""

    left: float
    top: float
    right: float
    bottom: float

    def overlaps(self, other: Box) -> bool:
        """Whether the two boxes share any area."""
        return (
            self.left < other.right
            and other.left < self.right
            and self.top < other.bottom
            and other.top < self.bottom
        )

    def inside(self, other: Box) -> bool:
        """Whether this box lies wholly in ``other``."""
        return (
            self.left >= other.left
            and self.right <= other.right
            and self.top >= other.top
            and self.bottom <= other.bottom
        )


LABEL_HEIGHT = 13
# Where a point's label may go, tried in order: (dx, dy of the box's anchor corner, anchor)
LABEL_SPOTS = (
    (8, -6, "start"), (-8, -6, "end"), (8, 16, "start"), (-8, 16, "end"),
    (0, -10, "middle"), (0, 22, "middle"),
)  # fmt: skip


def label_width(text: str) -> float:
    """A generous width for ``text`` at the charts' 11 px font (no font metrics in Python)."""
    return 7.0 * len(text) + 2


def place_label(
    x: float, y: float, width: float, area: Box, taken: Sequence[Box]
) -> tuple[float, str, Box] | None:
    """(text x, text-anchor, box) of the first spot by the point at (x, y) inside ``area`` that
    overlaps nothing ``taken``; None when every spot collides (the label is left out)."""
    for dx, dy, anchor in LABEL_SPOTS:
        baseline = y + dy
        start = x + dx - (width if anchor == "end" else width / 2 if anchor == "middle" else 0)
        box = Box(start, baseline - LABEL_HEIGHT + 3, start + width, baseline + 3)
        if box.inside(area) and not any(box.overlaps(other) for other in taken):
            return x + dx, anchor, box
    return None


@dataclass(frozen=True)
class Stack:
    """One layer of a stacked bar chart: a value per category (0 draws nothing)."""

    name: str
    color: str
    values: Sequence[float]


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high], about ``count`` of them."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    values = []
    value = start
    while value < high + step * 0.999:
        values.append(round(value, 10))
        value += step
    return values


def short(value: float) -> str:
    """Axis label: 1.2k, 35, 0.5."""
    size = abs(value)
    if size >= 1_000_000:
        return f"{value / 1_000_000:.1f}M".replace(".0M", "M")
    if size >= 1_000:
        return f"{value / 1_000:.1f}k".replace(".0k", "k")
    if size >= 10 or value == 0:
        return f"{value:.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def stacked_bars(
    chart_id: str,
    title: str,
    categories: Sequence[str],
    stacks: Sequence[Stack],
    *,
    horizontal: bool = False,
    money: Callable[[float], str] = short,
    width: int = 960,
) -> str:
    """Bars per category, stacked by layer; negative values stack below zero."""
    positive = [sum(max(s.values[i], 0.0) for s in stacks) for i in range(len(categories))]
    negative = [sum(min(s.values[i], 0.0) for s in stacks) for i in range(len(categories))]
    scale_ticks = ticks(min([0.0, *negative]), max([0.0, *positive]))
    low, high = scale_ticks[0], scale_ticks[-1]
    if horizontal:
        label_width = min(220, 12 + 7 * max((len(c) for c in categories), default=4))
        band = 34
        # room right of the longest bar for its total, so the label is never clipped
        totals = [money(positive[i] + negative[i]) for i in range(len(categories))]
        right = 12 + 7 * max((len(text) for text in totals), default=4)
        left, top, bottom = label_width, 12, 32
        height = top + bottom + band * max(1, len(categories))
        length = width - left - right
    else:
        height = 320
        left, right, top, bottom = 64, 16, 12, 56
        band = (width - left - right) / max(1, len(categories))
        length = height - top - bottom

    def at(value: float) -> float:
        return (value - low) / (high - low) * length

    parts = [_open(chart_id, title, width, height)]
    for tick in scale_ticks:
        if horizontal:
            x = left + at(tick)
            parts.append(_line(x, top, x, height - bottom, "#e3e6ea"))
            parts.append(_text(x, height - bottom + 16, short(tick), "middle"))
        else:
            y = top + length - at(tick)
            parts.append(_line(left, y, width - right, y, "#e3e6ea"))
            parts.append(_text(left - 6, y + 4, short(tick), "end"))
    label_every = max(1, math.ceil(len(categories) / 31)) if not horizontal else 1
    for index, category in enumerate(categories):
        up, down = 0.0, 0.0
        for stack in stacks:
            value = stack.values[index]
            if value == 0:
                continue
            base = up if value > 0 else down
            start, end = at(base), at(base + value)
            if value > 0:
                up += value
            else:
                down += value
            tip = f"{category} · {stack.name}: {money(value)}"
            if horizontal:
                y = top + index * band + 6
                rect = (left + min(start, end), y, max(abs(end - start), 0.5), band - 12)
            else:
                x = left + index * band + band * 0.12
                y0, y1 = top + length - start, top + length - end
                rect = (x, min(y0, y1), band * 0.76, max(abs(y1 - y0), 0.5))
            parts.append(_rect(*rect, stack.color, tip))
        if horizontal:
            y = top + index * band + band / 2 + 4
            parts.append(_text(left - 8, y, category, "end"))
            total = f"{money(positive[index] + negative[index])}"
            parts.append(_text(left + at(positive[index]) + 6, y, total, "start"))
        elif index % label_every == 0:
            x = left + index * band + band / 2
            y = height - bottom + 10
            parts.append(
                f"<text x='{x:.1f}' y='{y:.1f}' {FONT} text-anchor='end' "
                f"transform='rotate(-55 {x:.1f} {y:.1f})'>{escape(category)}</text>"
            )
    zero = at(0.0)
    if horizontal:
        parts.append(_line(left + zero, top, left + zero, height - bottom, "#6b7280"))
    else:
        parts.append(
            _line(left, top + length - zero, width - right, top + length - zero, "#6b7280")
        )
    parts.append("</svg>")
    return "\n".join(parts)


def line_chart(
    chart_id: str,
    title: str,
    series: Sequence[tuple[str, str, Sequence[tuple[str, float]]]],
    *,
    percent: bool = True,
    width: int = 960,
    height: int = 280,
) -> str:
    """Lines over ordered x labels: (name, color, [(x label, y)]); y in [0, 1] when percent."""
    labels = sorted({x for _, _, points in series for x, _ in points})
    values = [y for _, _, points in series for _, y in points]
    scale_ticks = [i / 5 for i in range(6)] if percent else ticks(min([0.0, *values]), max(values))
    low, high = scale_ticks[0], scale_ticks[-1]
    left, right, top, bottom = 56, 24, 12, 56
    step = (width - left - right) / max(1, len(labels) - 1) if len(labels) > 1 else 0
    inner = height - top - bottom

    def point(label: str, value: float) -> tuple[float, float]:
        x = left + (labels.index(label) * step if len(labels) > 1 else (width - left - right) / 2)
        return x, top + inner - (value - low) / (high - low) * inner

    parts = [_open(chart_id, title, width, height)]
    for tick in scale_ticks:
        y = top + inner - (tick - low) / (high - low) * inner
        parts.append(_line(left, y, width - right, y, "#e3e6ea"))
        parts.append(_text(left - 6, y + 4, f"{tick:.0%}" if percent else short(tick), "end"))
    label_every = max(1, math.ceil(len(labels) / 16))
    for index, label in enumerate(labels):
        if index % label_every == 0:
            x, _ = point(label, low)
            anchor = "start" if index == 0 else "end" if index == len(labels) - 1 else "middle"
            parts.append(_text(x, height - bottom + 18, label, anchor))
    for name, color, points in series:
        coordinates = [point(x, y) for x, y in points]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coordinates)
        parts.append(f"<polyline points='{path}' fill='none' stroke='{color}' stroke-width='2'/>")
        for (x, y), (label, value) in zip(coordinates, points, strict=True):
            shown = f"{value:.1%}" if percent else short(value)
            parts.append(_circle(x, y, 4, color, f"{name} · {label}: {shown}"))
    parts.append("</svg>")
    return "\n".join(parts)


def scatter(
    chart_id: str,
    title: str,
    points: Sequence[tuple[str, float, float, bool]],
    *,
    x_label: str,
    y_label: str,
    reference: float | None = None,
    width: int = 960,
    height: int = 360,
) -> str:
    """Points (label, x, y, highlighted), and a dashed line at y = ``reference`` (a bar)."""
    x_ticks = ticks(min([0.0, *(p[1] for p in points)]), max(p[1] for p in points))
    y_ticks = ticks(min(p[2] for p in points), max(p[2] for p in points))
    left, right, top, bottom = 64, 24, 12, 48
    inner_w, inner_h = width - left - right, height - top - bottom

    def at(x: float, y: float) -> tuple[float, float]:
        px = left + (x - x_ticks[0]) / (x_ticks[-1] - x_ticks[0]) * inner_w
        return px, top + inner_h - (y - y_ticks[0]) / (y_ticks[-1] - y_ticks[0]) * inner_h

    parts = [_open(chart_id, title, width, height)]
    for tick in x_ticks:
        x, _ = at(tick, y_ticks[0])
        parts.append(_line(x, top, x, top + inner_h, "#eef0f2"))
        parts.append(_text(x, top + inner_h + 16, short(tick), "middle"))
    for tick in y_ticks:
        _, y = at(x_ticks[0], tick)
        parts.append(_line(left, y, width - right, y, "#eef0f2"))
        parts.append(_text(left - 6, y + 4, short(tick), "end"))
    parts.append(_text(left + inner_w / 2, height - 8, x_label, "middle"))
    parts.append(_text(left + 4, top + 10, y_label, "start"))
    if reference is not None and y_ticks[0] <= reference <= y_ticks[-1]:
        _, y = at(x_ticks[0], reference)
        parts.append(
            f"<line x1='{left}' y1='{y:.1f}' x2='{width - right}' y2='{y:.1f}' "
            "stroke='#59a14f' stroke-width='1.5' stroke-dasharray='6 4'/>"
        )
    centers = [(*at(x_value, y_value), highlighted) for _, x_value, y_value, highlighted in points]
    for (label, x_value, y_value, highlighted), (x, y, _) in zip(points, centers, strict=True):
        color = "#e15759" if highlighted else "#4e79a7"
        tip = f"{label}: {short(x_value)}, {y_value:g}" + (" (frontier)" if highlighted else "")
        parts.append(_circle(x, y, 6 if highlighted else 5, color, tip))
    area = Box(left, top, left + inner_w, top + inner_h)
    # the y axis title sits inside the plot, top left: no label may cover it
    taken = [Box(left + 2, top, left + 6 + label_width(y_label), top + 14)]
    taken += [Box(x - 6, y - 6, x + 6, y + 6) for x, y, _ in centers]
    order = sorted(range(len(points)), key=lambda i: (not points[i][3], centers[i][0]))
    for index in order:
        x, y, _ = centers[index]
        placed = place_label(x, y, label_width(points[index][0]), area, taken)
        if placed is None:
            continue  # no free room: the point keeps its tooltip, the chart stays readable
        anchor_x, anchor, box = placed
        taken.append(box)
        parts.append(_text(anchor_x, box.bottom - 3, points[index][0], anchor, "point-label"))
    parts.append("</svg>")
    return "\n".join(parts)


@dataclass(frozen=True)
class Span:
    """One bar of a timeline row: from ``start`` to ``end`` (epoch seconds), its color and tip."""

    start: float
    end: float
    color: str
    tip: str


def timeline(
    chart_id: str,
    title: str,
    rows: Sequence[tuple[str, Sequence[Span]]],
    start: float,
    end: float,
    tick_label: Callable[[float], str],
    *,
    width: int = 960,
) -> str:
    """One row of spans per label over [start, end] (epoch seconds), time ticks below."""
    band = 22
    left = min(240, 12 + 7 * max((len(label) for label, _ in rows), default=4))
    right, top, bottom = 48, 8, 28
    height = top + bottom + band * max(1, len(rows))
    inner = width - left - right
    scale = inner / max(end - start, 1.0)
    parts = [_open(chart_id, title, width, height)]
    steps = (60, 300, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
    step = next((item for item in steps if (end - start) / item <= 6), 2592000)
    tick = math.ceil(start / step) * step
    while tick <= end:
        x = left + (tick - start) * scale
        parts.append(_line(x, top, x, height - bottom, "#e3e6ea"))
        parts.append(_text(x, height - bottom + 16, tick_label(tick), "middle"))
        tick += step
    for index, (label, spans) in enumerate(rows):
        y = top + index * band
        parts.append(_text(left - 8, y + band / 2 + 4, label, "end"))
        for span in spans:
            x = left + (max(span.start, start) - start) * scale
            length = max((min(span.end, end) - max(span.start, start)) * scale, 0.5)
            parts.append(_rect(x, y + 4, length, band - 8, span.color, span.tip))
    parts.append("</svg>")
    return "\n".join(parts)


def _open(chart_id: str, title: str, width: int, height: int) -> str:
    return (
        f"<svg id='{escape(chart_id)}' data-chart='{escape(chart_id)}' class='chart' "
        f"xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='{escape(title)}'>"
        f"<title>{escape(title)}</title>"
    )


def _rect(x: float, y: float, w: float, h: float, color: str, tip: str) -> str:
    return (
        f"<rect class='mark' x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' height='{h:.1f}' "
        f"fill='{color}'><title>{escape(tip)}</title></rect>"
    )


def _circle(x: float, y: float, r: float, color: str, tip: str) -> str:
    return (
        f"<circle class='mark' cx='{x:.1f}' cy='{y:.1f}' r='{r}' fill='{color}'>"
        f"<title>{escape(tip)}</title></circle>"
    )


def _line(x1: float, y1: float, x2: float, y2: float, color: str) -> str:
    return (
        f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' "
        f"stroke='{color}' stroke-width='1'/>"
    )


def _text(x: float, y: float, text: str, anchor: str, css: str = "") -> str:
    kind = f" class='{css}'" if css else ""
    return (
        f"<text{kind} x='{x:.1f}' y='{y:.1f}' {FONT} fill='#374151' "
        f"text-anchor='{anchor}'>{escape(text)}</text>"
    )
