"""The compare page (explore:compare): up to four configurator states side by side,
edited in place. The column editor picks models and cards by name (compare_pick); an HTMX
request (the editor, a column's "Remove" or "Copy") gets the page's #compare part and the
readable address to push, and the same form and links work without JavaScript."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import push_url

from sizing_site.configurator.fields import weights_choices
from sizing_site.configurator.forms import ENGINE_CHOICES
from sizing_site.explore import compare_pick
from sizing_site.explore.compare import CompareColumn, compare_columns, compare_rows
from sizing_site.explore.forms import (
    MAX_COLUMNS,
    ColumnSpec,
    CompareForm,
    compare_params_from_parts,
)

TEMPLATE = "explore/compare.html"


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    htmx = bool(getattr(request, "htmx", False))
    query = request.GET
    if not any(f"m{i}" in query for i in range(1, MAX_COLUMNS + 1)):
        return _page(request, query, htmx=htmx)
    # The edit form sends each column's parts, the model and card as typed or picked;
    # the page's address is the readable c1=model:accelerator:quant:gpus[:engine] form.
    parts = compare_pick.resolve_parts(query)
    canonical = compare_params_from_parts(_query(parts.data)) or {}
    if parts.errors:
        return _page(request, _query(canonical), htmx=htmx, typed=parts)
    url = compare_address(canonical)
    if not htmx:
        return redirect(url)
    response = _page(request, _query(canonical), htmx=True)
    push_url(response, url)
    return response


@login_required
def compare_pick_options(request: HttpRequest) -> HttpResponse:
    """The options of one column editor's combobox (HTMX): `field` names it (m1..m4,
    a1..a4) and carries the text typed."""
    field = request.GET.get("field", "")
    if field not in compare_pick.PICK_FIELDS:
        return HttpResponse(status=400)
    kind = compare_pick.KINDS[field[0]]
    text = (request.GET.get(field) or "")[:100]
    options = compare_pick.suggestions(kind=kind, text=text)
    context = {"field": field, "kind": kind, "options": options, "text": text}
    return render(request, TEMPLATE + "#options", context)


def compare_address(params: dict[str, str]) -> str:
    return f"{reverse('explore:compare')}?{urlencode(params, safe=':')}"


def _query(params: dict[str, str]) -> QueryDict:
    query = QueryDict(mutable=True)
    query.update(params)
    return query


def _page(
    request: HttpRequest,
    query: QueryDict,
    *,
    htmx: bool,
    typed: compare_pick.ResolvedParts | None = None,
) -> HttpResponse:
    form = CompareForm(query)
    columns: list[CompareColumn] = []
    ctx = None
    if typed is not None:
        for message in typed.errors:
            form.add_error(None, message)
    elif form.is_valid():
        ctx = form.cleaned_data["ctx"]
        columns = compare_columns(specs=form.cleaned_data["columns"], context_tokens=ctx)
    context = {
        "form": form,
        "columns": columns,
        "rows": compare_rows(columns),
        "slots": typed_slots(typed.data) if typed else compare_slots(columns, ctx),
        # The configurator's formats (every family) and engines.
        "quant_groups": weights_choices(None, None, moe=True).groups,
        "engines": ENGINE_CHOICES,
        "ctx": ctx,
        "max_columns": MAX_COLUMNS,
    }
    failed = bool(form.errors) or any(c.error for c in columns)
    template = TEMPLATE + "#compare" if htmx else TEMPLATE
    return render(request, template, context, status=400 if failed else 200)


def _slot(n: int, spec: ColumnSpec, model: str, card: str, **links: str) -> dict[str, Any]:
    return {"n": n, "spec": spec, "model": model, "card": card, **links}


def compare_slots(columns: list[CompareColumn], ctx: int | None) -> list[dict[str, Any]]:
    """The editor's column slots: one per column as asked (the best that fits stays so),
    named by the model's name and the card's label, with the addresses that remove it and
    that copy it into a new column; then an empty slot that adds a column."""
    shown = [c for c in columns if c.spec is not None]
    specs = [c.spec for c in shown if c.spec is not None]
    extra = {"ctx": str(ctx)} if ctx else {}
    slots = []
    for i, column in enumerate(shown):
        spec = specs[i]
        others = [s for j, s in enumerate(specs) if j != i]
        card = column.accelerator
        slots.append(
            _slot(
                i + 1,
                spec,
                column.model.name or spec.model_slug,
                f"{card.vendor} {card.name}".strip() if card.pk else spec.accelerator_slug,
                remove=compare_address(_params(others) | extra),
                copy=(
                    compare_address(_params([*specs, spec]) | extra)
                    if len(specs) < MAX_COLUMNS
                    else ""
                ),
            )
        )
    if len(slots) < MAX_COLUMNS:
        slots.append(_slot(len(slots) + 1, ColumnSpec("", ""), "", ""))
    return slots


def typed_slots(data: dict[str, str]) -> list[dict[str, Any]]:
    """The editor's slots as sent, when a name matched no single row: the text kept, so
    that the visitor corrects it."""
    slots: list[dict[str, Any]] = []
    for n in range(1, MAX_COLUMNS + 1):
        model, card = data.get(f"m{n}", ""), data.get(f"a{n}", "")
        gpus = data.get(f"g{n}", "1")
        spec = ColumnSpec(
            model,
            card,
            data.get(f"q{n}", ""),
            int(gpus) if gpus.isascii() and gpus.isdecimal() and len(gpus) < 3 else 1,
            data.get(f"e{n}", ""),
        )
        if model or card:
            slots.append(_slot(len(slots) + 1, spec, model, card))
    if len(slots) < MAX_COLUMNS:
        slots.append(_slot(len(slots) + 1, ColumnSpec("", ""), "", ""))
    return slots


def _params(specs: list[ColumnSpec]) -> dict[str, str]:
    return {f"c{n}": spec.param for n, spec in enumerate(specs, start=1)}
