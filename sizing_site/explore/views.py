from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.sizing import GGUF_QUANTS, CardFit, candidates
from catalog.sizing.cache import remembered
from estimator.api import RequestError
from estimator.cost import HOST_ALLOWANCE_USD, HOST_POWER_W
from pricing.costs import DEFAULT_AMORTIZATION_YEARS, DEFAULT_USD_PER_KWH, DEFAULT_UTILIZATION
from sizing_site.explore import selectors
from sizing_site.explore.faq import OUTLOOK_CONTEXTS, ModelFaq
from sizing_site.explore.forms import (
    DEFAULT_COMPARE_QUANT,
    MAX_COLUMNS,
    CardModelsForm,
    ColumnSpec,
    CompareForm,
    ExploreForm,
    ModelCardsForm,
    SearchForm,
    compare_params_from_parts,
)
from sizing_site.explore.selectors import HIGH_CONFIDENCE_MAX_RATIO, MEDIUM_CONFIDENCE_MAX_RATIO
from sizing_site.explore.templatetags.explore import configure_url
from sizing_site.tenancy.viewer import page_viewer

PAGE_SIZE = 50
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


def row_configure_url(model_slug: str, card_slug: str, fit: CardFit, ctx: int) -> str:
    """The configurator for one explore row: its quant, context and engine."""
    return configure_url(model_slug, card_slug, ctx=ctx, quant=fit.quant, engine=fit.engine)


def _template(request: HttpRequest, name: str, partial: str = "results") -> str:
    """An HTMX request gets the named partial of the page's own template."""
    return f"{name}#{partial}" if getattr(request, "htmx", False) else name


def _echo(form: ExploreForm) -> dict[str, object]:
    """The context and sort the table was computed with (the submitted values if bad)."""
    data = form.cleaned_data if form.is_valid() else {}
    return {"ctx": data.get("ctx"), "current_sort": data.get("sort") or form.data.get("sort")}


@dataclass(frozen=True)
class _Part:
    """The rendered results part of an explore page and its status code."""

    html: str
    status: int


def _results_part(
    request: HttpRequest,
    template: str,
    key: tuple[object, ...],
    build: Callable[[], dict[str, Any]],
) -> _Part:
    """The page's results part, rendered once per catalog version, language and query and
    kept in the shared sizing cache: it holds catalog figures only (no user, no token), so
    every visitor of the same address gets the same table."""

    def render_part() -> _Part:
        context = build()
        html = render_to_string(f"{template}#results", context, request)
        return _Part(html, 400 if context["form"].errors else 200)

    query = tuple(sorted(request.GET.lists()))
    return remembered(f"page:{template}", (*key, get_language(), query), render_part)


def _respond(
    request: HttpRequest, template: str, context: dict[str, Any], part: _Part
) -> HttpResponse:
    if getattr(request, "htmx", False):
        return HttpResponse(part.html, status=part.status)
    return render(
        request, template, {**context, "results": mark_safe(part.html)}, status=part.status
    )


@login_required
def model_gpus(request: HttpRequest, model_slug: str) -> HttpResponse:
    # A model or card an organisation added for itself is its members' alone: anyone
    # else gets the 404 of an unknown slug, and the cached part is keyed by those rows.
    viewer = page_viewer(request)
    try:
        model = candidates.explore_model(slug=model_slug, organizations=viewer.organizations)
    except LLMModel.DoesNotExist:
        raise Http404 from None
    max_context = sizing.model_context_limit(model)
    if max_context is None:  # a config the estimator cannot read: nothing to size
        raise Http404
    ladder = candidates.quant_ladder()
    # Once, and only if needed: the public cards and the viewer's organisations' own,
    # marked in the table.
    read_cards = functools.cache(lambda: candidates.sweep_accelerators(viewer.organizations))
    vendors = candidates.card_vendors(read_cards, viewer.organizations)
    form = ModelCardsForm(request.GET, ladder=ladder, max_context=max_context, vendors=vendors)
    offers = selectors.cheapest_offers()

    def build() -> dict[str, Any]:
        cards = read_cards()
        table, faq = None, []
        if form.is_valid():
            quants, ctx, data = selectors.table_filters(form.cleaned_data, ladder=ladder)
            powers = selectors.unit_powers(organizations=viewer.organizations)
            matrix = hardware.support_matrix()
            try:
                table = selectors.model_card_table(
                    model=model,
                    accelerators=cards,
                    quants=quants,
                    context_tokens=ctx,
                    offers=offers,
                    powers=powers,
                    matrix=matrix,
                    **data,
                )
            except RequestError as exc:
                form.add_error(None, exc.message)
            if table is not None:
                outlooks = selectors.context_outlooks(
                    model=model,
                    accelerators=cards,
                    quants=quants,
                    contexts=OUTLOOK_CONTEXTS,
                    max_context=max_context,
                    filters=data,
                    matrix=matrix,
                )
                faq = ModelFaq(
                    model=model,
                    table=table,
                    ctx=ctx,
                    outlooks=outlooks,
                    offers=offers,
                    powers=powers,
                    link=lambda row: row_configure_url(
                        model.slug, row.accelerator.slug, row.fit, ctx
                    ),
                    link_gpus=lambda row, n: configure_url(
                        model.slug, row.accelerator.slug, ctx=ctx, gpus=n, engine=row.fit.engine
                    ),
                ).items()
        page = Paginator(table.rows, PAGE_SIZE).get_page(request.GET.get("page")) if table else None
        return {
            "model": model,
            "form": form,
            "table": table,
            "page": page,
            "faq": faq,
            "total": len(cards),
            "assumptions": COST_ASSUMPTIONS,
            **_echo(form),
        }

    template = "explore/model_gpus.html"
    # Keyed by the viewer's organisations: their own cards stay in their members' entry.
    orgs = candidates.organization_keys(viewer.organizations)
    key = (model.pk, selectors.offers_key(offers), orgs)
    part = _results_part(request, template, key, build)
    context = {**viewer.context, "model": model, "form": form}
    return _respond(request, template, context, part)


@login_required
def gpu_models(request: HttpRequest, accelerator_slug: str) -> HttpResponse:
    viewer = page_viewer(request)  # as on model_gpus: own rows for their members only
    try:
        card = candidates.explore_accelerator(
            slug=accelerator_slug, organizations=viewer.organizations
        )
    except Accelerator.DoesNotExist:
        raise Http404 from None
    form = CardModelsForm(request.GET, ladder=candidates.quant_ladder())
    offers = selectors.cheapest_offers()
    offer = offers.get(card.pk)

    def build() -> dict[str, Any]:
        table = None
        if form.is_valid():
            quants, ctx, data = selectors.table_filters(form.cleaned_data, ladder=form.ladder)
            table = selectors.card_model_table(
                accelerator=card,
                models=candidates.explore_models(viewer.organizations),
                quants=quants,
                context_tokens=ctx,
                offers=offers,
                powers=selectors.unit_powers([card.pk], viewer.organizations),
                **data,
            )
        groups = table.groups if table else []
        page = (
            Paginator(groups, GROUP_PAGE_SIZE).get_page(request.GET.get("page")) if table else None
        )
        return {
            "card": card,
            "form": form,
            "table": table,
            "page": page,
            "offer": offer,
            "toy_b": selectors.TOY_PARAMS // 10**9,
            "assumptions": COST_ASSUMPTIONS,
            **_echo(form),
        }

    template = "explore/gpu_models.html"
    key = (card.pk, offer, candidates.organization_keys(viewer.organizations))
    part = _results_part(request, template, key, build)
    return _respond(request, template, {**viewer.context, "card": card, "form": form}, part)


@login_required
def home(request: HttpRequest) -> HttpResponse:
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


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    canonical = compare_params_from_parts(request.GET)
    if canonical is not None:
        # The edit form sends the parts of each column; the page's address is the
        # readable c1=model:accelerator:quant:gpus form.
        return redirect(f"{reverse('explore:compare')}?{urlencode(canonical, safe=':')}")
    form = CompareForm(request.GET)
    columns = []
    if form.is_valid():
        specs = form.cleaned_data["columns"]
        columns = selectors.compare_columns(specs=specs, context_tokens=form.cleaned_data["ctx"])
    context = {
        "form": form,
        "columns": columns,
        "rows": selectors.compare_rows(columns),
        "slots": compare_slots(columns, form.cleaned_data.get("ctx") if form.is_valid() else None),
        "models": selectors.explore_models_light(),
        "cards": selectors.curated_cards(),
        "quants": GGUF_QUANTS,
        "ctx": form.cleaned_data.get("ctx") if form.is_valid() else None,
    }
    failed = any(c.error for c in columns)
    return render(
        request, "explore/compare.html", context, status=400 if form.errors or failed else 200
    )


def compare_slots(columns: list[selectors.CompareColumn], ctx: int | None) -> list[dict[str, Any]]:
    """The edit form's column slots: one per column, plus an empty one to add a column."""
    specs = [ColumnSpec(c.model.slug, c.accelerator.slug, c.quant, c.gpus) for c in columns]
    slots: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        others = [s for j, s in enumerate(specs) if j != i]
        params = {f"c{n}": s.param for n, s in enumerate(others, start=1)}
        if ctx:
            params["ctx"] = str(ctx)
        slots.append({"n": i + 1, "spec": spec, "remove": f"?{urlencode(params, safe=':')}"})
    if len(slots) < MAX_COLUMNS:
        empty = ColumnSpec("", "", DEFAULT_COMPARE_QUANT, 1)
        slots.append({"n": len(slots) + 1, "spec": empty, "remove": ""})
    return slots
