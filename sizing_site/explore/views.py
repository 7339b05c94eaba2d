from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from catalog import adapters
from catalog.adapters import GGUF_QUANTS
from catalog.models import Accelerator, LLMModel
from estimator.api import RequestError
from sizing_site.explore import selectors
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

PAGE_SIZE = 50


def _template(request: HttpRequest, name: str, partial: str = "results") -> str:
    """An HTMX request gets the named partial of the page's own template."""
    return f"{name}#{partial}" if getattr(request, "htmx", False) else name


def _echo(form: ExploreForm) -> dict[str, object]:
    """The context and sort the table was computed with (the submitted values if bad)."""
    data = form.cleaned_data if form.is_valid() else {}
    return {"ctx": data.get("ctx"), "current_sort": data.get("sort") or form.data.get("sort")}


@login_required
def model_gpus(request: HttpRequest, model_slug: str) -> HttpResponse:
    try:
        model = selectors.explore_model(slug=model_slug)
    except LLMModel.DoesNotExist:
        raise Http404 from None
    max_context = adapters.model_context_limit(model)
    if max_context is None:  # a config the estimator cannot read: nothing to size
        raise Http404
    cards = selectors.sweep_accelerators()
    ladder = selectors.quant_ladder()
    vendors = sorted({card.vendor for card in cards})
    form = ModelCardsForm(request.GET, ladder=ladder, max_context=max_context, vendors=vendors)
    table = None
    if form.is_valid():
        data = dict(form.cleaned_data)
        try:
            table = selectors.model_card_table(
                model=model,
                accelerators=cards,
                quants=selectors.ladder_down_to(ladder, data.pop("quality")),
                context_tokens=data.pop("ctx"),
                **data,
            )
        except RequestError as exc:
            form.add_error(None, exc.message)
    page = Paginator(table.rows, PAGE_SIZE).get_page(request.GET.get("page")) if table else None
    context = {
        "model": model,
        "form": form,
        "table": table,
        "page": page,
        "total": len(cards),
        **_echo(form),
    }
    template = _template(request, "explore/model_gpus.html")
    return render(request, template, context, status=400 if form.errors else 200)


@login_required
def gpu_models(request: HttpRequest, accelerator_slug: str) -> HttpResponse:
    try:
        card = selectors.explore_accelerator(slug=accelerator_slug)
    except Accelerator.DoesNotExist:
        raise Http404 from None
    form = CardModelsForm(request.GET, ladder=selectors.quant_ladder())
    table = None
    if form.is_valid():
        data = dict(form.cleaned_data)
        table = selectors.card_model_table(
            accelerator=card,
            models=selectors.explore_models(),
            quants=selectors.ladder_down_to(form.ladder, data.pop("quality")),
            context_tokens=data.pop("ctx"),
            **data,
        )
    page = Paginator(table.rows, PAGE_SIZE).get_page(request.GET.get("page")) if table else None
    context = {"card": card, "form": form, "table": table, "page": page, **_echo(form)}
    template = _template(request, "explore/gpu_models.html")
    return render(request, template, context, status=400 if form.errors else 200)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    context = {"pairs": selectors.popular_pairs(), "form": SearchForm()}
    return render(request, "explore/home.html", context)


@login_required
def search(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET)
    models, cards = selectors.search(q=form.cleaned_data["q"]) if form.is_valid() else ([], [])
    context = {"form": form, "models": models, "cards": cards}
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
