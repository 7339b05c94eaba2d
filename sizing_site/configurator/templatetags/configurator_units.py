"""Unit conversions for the configurator (bytes: catalog_units); the templates localise
the numbers."""

from __future__ import annotations

from django import template

register = template.Library()


def _number(value: object) -> int | float | None:
    # A missing context variable arrives as "" (string_if_invalid): None, not a 500.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


@register.filter
def percent(fraction: object) -> float | None:
    value = _number(fraction)
    return None if value is None else value * 100


@register.filter
def kilo(tokens: object) -> float | None:
    """Tokens to thousands of tokens (32,768 -> 32.768, shown as "32K")."""
    value = _number(tokens)
    return None if value is None else value / 1024


@register.filter
def item(mapping: dict[str, object] | None, key: str) -> object:
    return None if mapping is None else mapping.get(key)
