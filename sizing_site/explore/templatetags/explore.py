"""Links to the configurator and words for the explore pages' codes (units: catalog_units).
The msgids are the ones the templates used, so the existing translations apply."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode as urlencode_safe

from django import template
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from estimator import quality
from sizing_site.configurator import links
from sizing_site.configurator.fields import tier_label

register = template.Library()

FIT_LABELS = {
    "comfortable": _("Comfortable"),
    "tight": _("Tight"),
    "no_engine": _("No engine in the catalog runs here"),
}
FIT_CLASSES = {"comfortable": "fit-ok", "tight": "fit-tight"}
# The compare pages' rows (explore.compare.COMPARE_ROWS labels).
COMPARE_LABELS = {
    "fit": _("Fit"),
    "utilisation": _("Memory used"),
    "weights": _("Weights"),
    "kv": _("KV cache"),
    "overhead": _("Engine overhead"),
    "per_device": _("Needed per GPU"),
    "usable": _("Usable per GPU"),
    "decode": _("Decode tok/s (range)"),
    "prefill": _("Prefill tok/s (range)"),
    "ttft": _("Time to first token (s)"),
    "max_context": _("Longest context that fits (tokens)"),
    "max_sequences": _("Concurrent sequences that fit"),
    "cost": _("Cost per 1M output tokens"),
    "cloud_price": _("Cloud price (cheapest offer)"),
    "hardware_price": _("Hardware price (to own)"),
}
# Why a compare column has no figures (explore.compare.CompareColumn.error); any other
# error is the message of the configurator state's refusal.
COMPARE_ERRORS = {
    "unknown": _("unknown model or accelerator."),
    "unsized": _("this accelerator lacks memory or bandwidth figures."),
    "no_engine": _("no inference engine in the catalog runs on this accelerator."),
}


@register.simple_tag
def configure_url(
    model_slug: str,
    accelerator_slug: str,
    query: Mapping[str, str] | None = None,
    **params: str | int | None,
) -> str:
    """The configurator's address for this pair with a saved `query` and then `params` as
    its query string, in that order; a param without a value (None, or "" for a missing
    template variable) is left out, and so is the "?" of an empty query. "" while the
    configurator is not installed. Every page builds its configurator links here
    (configurator.links, which reverses each pair's path once)."""
    return links.configure_url(model_slug, accelerator_slug, query, **params)


# A row's confidence in its speed (explore.tables.confidence).
CONFIDENCE_LABELS = {"high": _("high"), "medium": _("medium"), "low": _("low")}
COMPARE_MAX_COLUMNS = 4  # explore.forms.MAX_COLUMNS


@register.filter
def confidence_label(level: str) -> str:
    return str(CONFIDENCE_LABELS.get(level, ""))


@register.simple_tag
def compare_url(
    rows: Iterable[Any],
    model_slug: str = "",
    accelerator_slug: str = "",
    ctx: int | None = None,
) -> str:
    """The compare page for up to four explore rows: card rows (each `row.accelerator`)
    of `model_slug`, or model rows (each `row.model`) on `accelerator_slug`, each at its
    own quant under the card's default engine (as the rows are sized); rows that fit
    nothing are left out. "" with fewer than two columns."""
    params: dict[str, str] = {}
    for row in rows:
        quant = row.fit.quant
        if not quant:
            continue
        model = model_slug or row.model.slug
        card = accelerator_slug or row.accelerator.slug
        params[f"c{len(params) + 1}"] = f"{model}:{card}:{quant}:1"
        if len(params) == COMPARE_MAX_COLUMNS:
            break
    if len(params) < 2:
        return ""
    if ctx:
        params["ctx"] = str(ctx)
    return f"{reverse('explore:compare')}?{urlencode_safe(params, safe=':')}"


@register.simple_tag(takes_context=True)
def sort_param(context: template.Context, column: str, descending_first: bool = True) -> str:
    """The sort value a column header links to: its first direction, or the reverse when
    the table is already sorted by this column."""
    current = context.get("current_sort", "")
    first = f"-{column}" if descending_first else column
    if current == first:
        return column if descending_first else f"-{column}"
    return first


@register.filter
def fit_label(verdict: str) -> str:
    """A card's fit in the explore tables ("Comfortable", "Tight", ...)."""
    return str(FIT_LABELS.get(verdict, _("Does not fit")))


@register.filter
def fit_class(verdict: str) -> str:
    """The fit's CSS class: ok, tight, or no (does not fit, or no engine)."""
    return FIT_CLASSES.get(verdict, "fit-no")


@register.filter
def quality_tier(quant: str | None) -> str:
    """A weights format's quality tier (estimator.quality: "recommended", "good",
    "degraded", "experimental"; "" when unknown): the tier badge's class."""
    return (quality.tier_of(quant) or "") if quant else ""


@register.filter
def tier_name(quant: str | None) -> str:
    """A weights format's quality tier in the reader's language."""
    return tier_label(quant) if quant else ""


@register.filter
def compare_label(label: str) -> str:
    """A compare row's name ("" for a label the page does not know)."""
    return str(COMPARE_LABELS.get(label, ""))


@register.filter
def compare_error(error: str) -> str:
    """Why a compare column has no figures."""
    return str(COMPARE_ERRORS.get(error, error))
