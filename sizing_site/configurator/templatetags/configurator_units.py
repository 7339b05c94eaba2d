"""Unit conversions for the configurator (bytes: catalog_units); the templates localise
the numbers."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def percent(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100


@register.filter
def kilo(tokens: int | None) -> float | None:
    """Tokens to thousands of tokens (32,768 -> 32.768, shown as "32K")."""
    return None if tokens is None else tokens / 1024


@register.filter
def item(mapping: dict[str, object] | None, key: str) -> object:
    return None if mapping is None else mapping.get(key)
