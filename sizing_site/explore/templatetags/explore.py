"""Links for the explore pages (units: catalog_units)."""

from __future__ import annotations

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode

register = template.Library()


@register.simple_tag
def configure_url(model_slug: str, accelerator_slug: str, quant: str | None, ctx: int) -> str:
    """The configurator for this pair; "" while the configurator is not installed."""
    try:
        url = reverse("configurator:configure", args=[model_slug, accelerator_slug])
    except NoReverseMatch:
        return ""
    params: dict[str, str | int] = {"ctx": ctx}
    if quant:
        params["quant"] = quant
    return f"{url}?{urlencode(params)}"


@register.simple_tag(takes_context=True)
def sort_param(context: template.Context, column: str, descending_first: bool = True) -> str:
    """The sort value a column header links to: its first direction, or the reverse when
    the table is already sorted by this column."""
    current = context.get("current_sort", "")
    first = f"-{column}" if descending_first else column
    if current == first:
        return column if descending_first else f"-{column}"
    return first
