"""The explore pages: a model on every card (explore:model-gpus), a card across every
model (explore:gpu-models), search and the home page. The two table pages parse their
GET form into a typed query, call the table's selector (the one the sweeps API calls
too: sizing_site.explore.selectors) and render; an HTMX request gets the page's
`results` partial, which is kept rendered beside the table it shows."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from catalog import sizing
from catalog.models import Accelerator, LLMModel
from catalog.sizing import candidates
from estimator.api import RequestError
from estimator.cost import HOST_ALLOWANCE_USD, HOST_POWER_W
from pricing.costs import DEFAULT_AMORTIZATION_YEARS, DEFAULT_USD_PER_KWH, DEFAULT_UTILIZATION
from sizing_site.explore import selectors
from sizing_site.explore.costs import offers_key
from sizing_site.explore.faq import OUTLOOK_CONTEXTS, model_faq
from sizing_site.explore.forms import CardModelsForm, ExploreForm, ModelCardsForm, SearchForm
from sizing_site.explore.queries import PAGE_SIZE, CardModelsQuery, ModelCardsQuery, page_number
from sizing_site.explore.tables import (
    HIGH_CONFIDENCE_MAX_RATIO,
    MEDIUM_CONFIDENCE_MAX_RATIO,
    TOY_PARAMS,
)
from sizing_site.explore.templatetags.explore import configure_url
from sizing_site.tenancy.selectors import demo_login_seeded
from sizing_site.tenancy.viewer import page_viewer

GROUP_PAGE_SIZE = 30  # model families per page of the card page
# What the cost column assumes, said once above each table (pricing.costs' defaults).
COST_ASSUMPTIONS = {
    "years": DEFAULT_AMORTIZATION_YEARS,
    "utilization": round(DEFAULT_UTILIZATION * 100),
    "hours": round(24 * DEFAULT_UTILIZATION),
    "kwh": DEFAULT_USD_PER_KWH,
    "host_usd": HOST_ALLOWANCE_USD,
    "host_w": HOST_POWER_W,
    "high": HIGH_CONFIDENCE_MAX_RATIO,
    "medium": MEDIUM_CONFIDENCE_MAX_RATIO,
}


def _template(request: HttpRequest, name: str, partial: str = "results") -> str:
    """An HTMX request gets the named partial of the page's own template."""
    return f"{name}#{partial}" if getattr(request, "htmx", False) else name


@dataclass(frozen=True)
class _Part:
    """The rendered results part of a table page and its status code."""

    html: str
    status: int


def _render_part(request: HttpRequest, template: str, context: dict[str, Any]) -> _Part:
    """The page's results part with the context and sort the table was computed with (the
    submitted values if bad); 400 while the form has errors."""
    form: ExploreForm = context["form"]
    data = form.cleaned_data if form.is_valid() else {}
    echo = {"ctx": data.get("ctx"), "current_sort": data.get("sort") or form.data.get("sort")}
    context = {**context, **echo, "assumptions": COST_ASSUMPTIONS}
    html = render_to_string(f"{template}#results", context, request)
    return _Part(html, 400 if form.errors else 200)


def _results_part(
    request: HttpRequest,
    template: str,
    parts: tuple[object, ...],
    reads: selectors.ExploreViewer,
    build: Callable[[], dict[str, Any]],
) -> _Part:
    """The results part of a valid query, rendered once per table (selectors.remembered_for:
    the table's figures only, no user or token, so every viewer of the same rows gets the
    same part): a warm page renders no table."""
    return selectors.remembered_for(
        f"page:{template}", parts, reads, lambda: _render_part(request, template, build())
    )


def _respond(
    request: HttpRequest, template: str, context: dict[str, Any], part: _Part
) -> HttpResponse:
    if getattr(request, "htmx", False):
        return HttpResponse(part.html, status=part.status)
    return render(
        request, template, {**context, "results": mark_safe(part.html)}, status=part.status
    )


def _model_results(
    context: dict[str, Any], query: ModelCardsQuery, reads: selectors.ExploreViewer
) -> dict[str, Any]:
    """The model page's results: its table, the page of rows and the FAQ, or the
    estimator's refusal as a form error."""
    model, form = context["model"], context["form"]
    try:
        table = selectors.model_card_table_for(model=model, query=query, viewer=reads)
    except RequestError as exc:
        form.add_error(None, exc.message)
        return context
    outlooks = selectors.context_outlooks_for(
        model=model, query=query, viewer=reads, contexts=OUTLOOK_CONTEXTS
    )
    faq = model_faq(model=model, table=table, ctx=query.ctx, outlooks=outlooks, offers=reads.offers)
    return {**context, "table": table, "page": table.page, "faq": faq}


@login_required
def model_gpus(request: HttpRequest, model_slug: str) -> HttpResponse:
    # A model or card an organisation added for itself is its members' alone: anyone
    # else gets the 404 of an unknown slug, and the cached parts are keyed by those rows.
    viewer = page_viewer(request)
    reads = selectors.ExploreViewer(viewer.organizations)
    try:
        model = candidates.explore_model(slug=model_slug, organizations=viewer.organizations)
    except LLMModel.DoesNotExist:
        raise Http404 from None
    max_context = sizing.model_context_limit(model)
    if max_context is None:  # a config the estimator cannot read: nothing to size
        raise Http404
    form = ModelCardsForm(
        request.GET, ladder=reads.ladder, max_context=max_context, vendors=reads.vendors
    )
    template, context = "explore/model_gpus.html", {"model": model, "form": form}
    if form.is_valid():
        page = page_number(request.GET.get("page"))
        query = ModelCardsQuery.from_form(form, page=page, page_size=PAGE_SIZE)
        parts = (model.pk, offers_key(reads.offers), query.table_key(), page)
        build = functools.partial(_model_results, context, query, reads)
        part = _results_part(request, template, parts, reads, build)
    else:
        part = _render_part(request, template, context)
    return _respond(request, template, {**viewer.context, **context}, part)


def _card_results(
    context: dict[str, Any], query: CardModelsQuery, reads: selectors.ExploreViewer
) -> dict[str, Any]:
    """The card page's results: its table and the page of model families."""
    table = selectors.card_model_table_for(card=context["card"], query=query, viewer=reads)
    return {**context, "table": table, "page": table.family_page}


@login_required
def gpu_models(request: HttpRequest, accelerator_slug: str) -> HttpResponse:
    viewer = page_viewer(request)  # as on model_gpus: own rows for their members only
    reads = selectors.ExploreViewer(viewer.organizations)
    try:
        card = candidates.explore_accelerator(
            slug=accelerator_slug, organizations=viewer.organizations
        )
    except Accelerator.DoesNotExist:
        raise Http404 from None
    form = CardModelsForm(request.GET, ladder=reads.ladder)
    offer = reads.offers.get(card.pk)
    template = "explore/gpu_models.html"
    context = {"card": card, "form": form, "offer": offer, "toy_b": TOY_PARAMS // 10**9}
    if form.is_valid():
        page = page_number(request.GET.get("page"))
        query = CardModelsQuery.from_form(form, page=page, page_size=GROUP_PAGE_SIZE)
        parts = (card.pk, offer, query.table_key(), page)
        build = functools.partial(_card_results, context, query, reads)
        part = _results_part(request, template, parts, reads, build)
    else:
        part = _render_part(request, template, context)
    return _respond(request, template, {**viewer.context, **context}, part)


def home(request: HttpRequest) -> HttpResponse:
    """A member's start page (search, popular pairs); a visitor's landing page, which says
    what the portal answers and, on a demo instance, which login to use."""
    if not request.user.is_authenticated:
        return render(request, "explore/landing.html", {"demo_login": demo_login_seeded()})
    context = {"pairs": selectors.popular_pairs(), "form": SearchForm()}
    return render(request, "explore/home.html", context)


@login_required
def search(request: HttpRequest) -> HttpResponse:
    """Suggestions (HTMX) or the results page; a full-page search that names one model and
    one card clearly ("llama 70b on 4090") opens the configurator for that pair."""
    form = SearchForm(request.GET)
    viewer = page_viewer(request)
    results = None
    if form.is_valid():
        results = selectors.search(q=form.cleaned_data["q"], organizations=viewer.organizations)
    htmx = getattr(request, "htmx", False)
    if results is not None and results.best_pair is not None and not htmx:
        pair = results.best_pair
        url = configure_url(
            pair.model.slug, pair.card.slug, gpus=pair.gpus if pair.gpus > 1 else None
        )
        if url:
            return redirect(url)
    context = {**viewer.context, "form": form, "results": results}
    template = _template(request, "explore/search.html", "suggestions")
    return render(request, template, context, status=400 if form.errors else 200)
