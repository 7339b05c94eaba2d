from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import template
from django.utils.translation import gettext as gettext_now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from estimator.units import GIB
from sizing_site.core.numbers import floatformat
from sizing_site.tenancy.models import Membership, Role

register = template.Library()

# The recompute table's figures (reports.selectors.FIGURES paths). The values carry their
# unit (figure_value), so the labels do not.
FIGURE_LABELS = {
    "weights_bytes": _("Weights"),
    "kv_cache_bytes": _("KV cache"),
    "overhead_bytes": _("Engine overhead"),
    "offloaded_bytes": _("Offloaded to host memory"),
    "total_bytes": _("Total"),
    "per_device_bytes": _("Needed per GPU"),
    "usable_bytes_per_device": _("Usable per GPU"),
    "fit.utilisation": _("Memory used"),
    "decode_tokens_per_s.estimate": _("Decode, one sequence"),
    "aggregate_decode_tokens_per_s.estimate": _("Decode, all sequences"),
    "prefill_tokens_per_s.estimate": _("Prefill"),
    "ttft_s.estimate": _("Time to first token"),
    "max_context_tokens": _("Longest context that fits"),
    "max_concurrent_sequences": _("Concurrent sequences that fit"),
}


@register.filter
def can_save(memberships: Iterable[Membership] | Callable[[], Any]) -> list[Membership]:
    """The memberships whose role may save configurations (editor and up)."""
    rows = memberships() if callable(memberships) else memberships
    return [m for m in rows if m.has_role(Role.EDITOR)]


@register.filter
def figure_label(key: str) -> str:
    """A recomputed figure's name ("" for a path the page has no name for)."""
    return str(FIGURE_LABELS.get(key, ""))


def _number(value: float, decimals: int) -> str:
    """`value` rounded to `decimals` decimals (half up, as floatformat rounds), grouped, in
    the active language's format."""
    return str(floatformat(value, f"{decimals}g"))


@register.filter
def figure_value(value: object, key: str) -> str:
    """A report figure as a reader wants it, by the figure's path: bytes as GiB with two
    decimals ("65.61 GiB"), the memory share in percent ("92.0 %"), speeds in tok/s with
    one decimal, times in seconds, token and sequence counts grouped; "–" when missing.
    Strings (a name, a slug) pass through."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    if key.endswith("_bytes") or key.endswith("bytes_per_device"):
        return gettext_now("%(n)s GiB") % {"n": _number(value / GIB, 2)}
    if key == "fit.utilisation":
        return gettext_now("%(n)s %%") % {"n": _number(value * 100, 1)}
    if "tokens_per_s" in key:
        decimals = 0 if key.startswith("prefill") else 1
        return gettext_now("%(n)s tok/s") % {"n": _number(value, decimals)}
    if key.startswith("ttft_s"):
        return gettext_now("%(n)s s") % {"n": _number(value, 2)}
    if key == "max_context_tokens":
        n = int(value)
        return ngettext("%(n)s token", "%(n)s tokens", n) % {"n": _number(n, 0)}
    return str(floatformat(value, "-2g"))


@register.filter
def figure_change(change: object) -> str:
    """A change in percent with its sign: "+12.3 %", "−4.0 %"."""
    if isinstance(change, bool) or not isinstance(change, int | float):
        return ""
    sign = "+" if change > 0 else "−" if change < 0 else ""
    return gettext_now("%(n)s %%") % {"n": sign + _number(abs(change), 1)}
