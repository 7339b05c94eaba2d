"""SVG geometry for the configurator's two charts, computed from plain numbers while the page
renders: the selectors hand over figures, the templates decide how to draw them. The CSP
allows no inline style, so every position is an SVG attribute (viewBox units)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django import template

from catalog.templatetags.catalog_units import number

register = template.Library()

# The memory-by-context chart's viewBox is 0..100 x 0..66: bars stand on y = 58 between
# x = 8 and x = 98, the tallest figure (bar or usable line) reaches 55 units up, and the
# context labels sit below the baseline.
CHART_LEFT = 8
CHART_WIDTH = 90
CHART_BASELINE = 58
CHART_TALLEST = 55
BAR_FILL = 0.7  # share of each bar's slot it fills,
BAR_MARGIN = 0.15  # centred: this share of the slot on each side


@dataclass(frozen=True)
class Segment:
    """One part of the stacked memory bar, as percent of the bar's width."""

    key: str  # "weights" | "kv" | "overhead" | "offloaded"
    bytes: int
    x: float  # where it starts
    percent: float  # its width


@dataclass(frozen=True)
class MemoryBar:
    parts: tuple[Segment, ...]
    usable_bytes: int
    usable_percent: float  # where the usable-memory mark sits


@dataclass(frozen=True)
class ContextBar:
    """One context point of the memory-by-context chart; `point` is the figure it draws."""

    point: object
    x: float
    width: float
    height: float
    y: float
    label_x: float  # the centre of its slot, for the context label


@dataclass(frozen=True)
class ContextChart:
    bars: tuple[ContextBar, ...]
    usable_y: float  # the usable-memory line


def _bytes(value: object) -> int:
    """A byte count from the template; a missing figure ("", see catalog_units.number)
    draws as nothing rather than failing the page."""
    n = number(value)
    return 0 if n is None else int(n)


def _per_percent(*sizes: int) -> float:
    """Bytes per percent of the largest size (of 1 byte when all are zero, so an empty
    chart divides by something)."""
    return max(*sizes, 1) / 100


@register.simple_tag
def memory_bar(
    *,
    weights: object,
    multimodal: object,
    offloaded: object,
    kv: object,
    overhead: object,
    total: object,
    usable: object,
) -> MemoryBar:
    """The stacked bar: the weights left on the devices (text plus multimodal weights, less
    what is offloaded), KV cache, engine overhead and what stays in host memory, as shares
    of the larger of the total and the usable memory of all devices (100 units wide). Parts
    of zero bytes are left out."""
    offloaded_bytes = _bytes(offloaded)
    sizes = (
        ("weights", _bytes(weights) + _bytes(multimodal) - offloaded_bytes),
        ("kv", _bytes(kv)),
        ("overhead", _bytes(overhead)),
        ("offloaded", offloaded_bytes),
    )
    usable_bytes = _bytes(usable)
    scale = _per_percent(_bytes(total), usable_bytes)
    parts: list[Segment] = []
    start = 0.0
    for key, size in sizes:
        if size:
            share = size / scale
            parts.append(Segment(key, size, x=round(start, 2), percent=round(share, 2)))
            start += share
    return MemoryBar(tuple(parts), usable_bytes, round(usable_bytes / scale, 2))


def _per_device_bytes(point: object) -> int:
    """A context point's memory per device, from a mapping or an object alike."""
    if isinstance(point, Mapping):
        return _bytes(point.get("per_device_bytes"))
    return _bytes(getattr(point, "per_device_bytes", None))


@register.simple_tag
def context_chart(points: Sequence[object], usable: object) -> ContextChart:
    """Memory per device against context: one bar per point in equal slots across the
    chart, and the usable memory per device as a horizontal line, all on one vertical
    scale where the largest of them is CHART_TALLEST units high."""
    sizes = [_per_device_bytes(p) for p in points]
    usable_bytes = _bytes(usable)
    scale = _per_percent(usable_bytes, *sizes) / (CHART_TALLEST / 100)
    slot = CHART_WIDTH / max(len(points), 1)
    bars = []
    for i, (point, size) in enumerate(zip(points, sizes, strict=True)):
        left = CHART_LEFT + i * slot
        height = round(size / scale, 2)
        bars.append(
            ContextBar(
                point,
                x=round(left + slot * BAR_MARGIN, 2),
                width=round(slot * BAR_FILL, 2),
                height=height,
                y=round(CHART_BASELINE - height, 2),
                label_x=round(left + slot / 2, 2),
            )
        )
    return ContextChart(tuple(bars), round(CHART_BASELINE - usable_bytes / scale, 2))
