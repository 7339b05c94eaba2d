"""The compare page (explore:compare): up to four configurator states side by side."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from sizing_site.configurator.fields import weights_choices
from sizing_site.configurator.forms import ENGINE_CHOICES
from sizing_site.explore import selectors
from sizing_site.explore.compare import CompareColumn, compare_columns, compare_rows
from sizing_site.explore.forms import (
    MAX_COLUMNS,
    ColumnSpec,
    CompareForm,
    compare_params_from_parts,
)


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    canonical = compare_params_from_parts(request.GET)
    if canonical is not None:
        # The edit form sends the parts of each column; the page's address is the
        # readable c1=model:accelerator:quant:gpus[:engine] form.
        return redirect(f"{reverse('explore:compare')}?{urlencode(canonical, safe=':')}")
    form = CompareForm(request.GET)
    columns = []
    ctx = None
    if form.is_valid():
        ctx = form.cleaned_data["ctx"]
        columns = compare_columns(specs=form.cleaned_data["columns"], context_tokens=ctx)
    context = {
        "form": form,
        "columns": columns,
        "rows": compare_rows(columns),
        "slots": compare_slots(columns, ctx),
        "models": selectors.explore_models_light(),
        "cards": selectors.curated_cards(),
        # The configurator's formats (every family) and engines.
        "quant_groups": weights_choices(None, None, moe=True).groups,
        "engines": ENGINE_CHOICES,
        "ctx": ctx,
    }
    failed = any(c.error for c in columns)
    return render(
        request, "explore/compare.html", context, status=400 if form.errors or failed else 200
    )


def compare_slots(columns: list[CompareColumn], ctx: int | None) -> list[dict[str, Any]]:
    """The edit form's column slots: one per column as asked (the best that fits stays
    so), plus an empty one to add a column."""
    specs = [c.spec for c in columns if c.spec is not None]
    slots: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        others = [s for j, s in enumerate(specs) if j != i]
        params = {f"c{n}": s.param for n, s in enumerate(others, start=1)}
        if ctx:
            params["ctx"] = str(ctx)
        slots.append({"n": i + 1, "spec": spec, "remove": f"?{urlencode(params, safe=':')}"})
    if len(slots) < MAX_COLUMNS:
        slots.append({"n": len(slots) + 1, "spec": ColumnSpec("", ""), "remove": ""})
    return slots
