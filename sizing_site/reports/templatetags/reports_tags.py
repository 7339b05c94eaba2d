from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import template
from django.utils.translation import gettext_lazy as _

from sizing_site.tenancy.models import Membership, Role

register = template.Library()

# The recompute table's figures (reports.selectors.FIGURES paths); the msgids are the
# ones the template used, so the existing translations apply.
FIGURE_LABELS = {
    "weights_bytes": _("Weights (bytes)"),
    "kv_cache_bytes": _("KV cache (bytes)"),
    "overhead_bytes": _("Engine overhead (bytes)"),
    "offloaded_bytes": _("Offloaded to host memory (bytes)"),
    "total_bytes": _("Total (bytes)"),
    "per_device_bytes": _("Needed per GPU (bytes)"),
    "usable_bytes_per_device": _("Usable per GPU (bytes)"),
    "fit.utilisation": _("Memory used (share)"),
    "decode_tokens_per_s.estimate": _("Decode, one sequence (tok/s)"),
    "aggregate_decode_tokens_per_s.estimate": _("Decode, all sequences (tok/s)"),
    "prefill_tokens_per_s.estimate": _("Prefill (tok/s)"),
    "ttft_s.estimate": _("Time to first token (s)"),
    "max_context_tokens": _("Longest context that fits (tokens)"),
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
