"""Unit conversions for catalog templates; the templates localise the numbers."""

from __future__ import annotations

import math
from typing import Any

from django import template
from django.utils import formats
from django.utils.html import format_html
from django.utils.safestring import SafeString

from estimator.units import GB, GIB

register = template.Library()


def number(value: object) -> int | float | None:
    """A real number, or None: a missing context variable reaches a filter as "" (the
    template engine's string_if_invalid), and a page must not 500 on it. Every unit filter
    (here and configurator_units) reads its input through this."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def divided(value: object, unit: float) -> float | None:
    """value / unit for a real number, else None (see number)."""
    n = number(value)
    return None if n is None else n / unit


@register.filter
def gb(n_bytes: object) -> float | None:
    """Bytes to decimal gigabytes (10^9), as vendors and Hugging Face listings count."""
    return divided(n_bytes, GB)


@register.filter
def gib(n_bytes: object) -> float | None:
    """Bytes to binary gibibytes (2^30), as nvidia-smi and the engines' logs count."""
    return divided(n_bytes, GIB)


@register.filter
def billions(count: object) -> float | None:
    return divided(count, 1e9)


@register.filter
def scientific(value: float | None) -> SafeString | str:
    """1.224e24 -> '1.22 × 10²⁴' with the mantissa in the active locale's format."""
    if not value:
        return ""
    exponent = math.floor(math.log10(abs(value)))
    mantissa = formats.number_format(value / 10**exponent, 2, use_l10n=True)
    return format_html("{} × 10<sup>{}</sup>", mantissa, exponent)


@register.filter
def source(sources: dict[str, Any] | None, field: str) -> str:
    return str((sources or {}).get(field, ""))
