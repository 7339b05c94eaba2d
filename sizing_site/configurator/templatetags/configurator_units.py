"""Unit conversions for the configurator (bytes: catalog_units); the templates localise
the numbers."""

from __future__ import annotations

from django import template

from catalog.templatetags.catalog_units import divided, number

register = template.Library()


@register.filter
def percent(fraction: object) -> float | None:
    value = number(fraction)
    return None if value is None else value * 100


@register.filter
def kilo(tokens: object) -> float | None:
    """Tokens to thousands of tokens (32,768 -> 32.768, shown as "32K")."""
    return divided(tokens, 1024)


@register.filter
def item(mapping: dict[str, object] | None, key: str) -> object:
    return None if mapping is None else mapping.get(key)
