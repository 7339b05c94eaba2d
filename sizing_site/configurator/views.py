from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from catalog import adapters, hardware
from catalog.models import Accelerator, LLMModel
from estimator.api import RequestError
from sizing_site.configurator import selectors
from sizing_site.configurator.forms import ConfigureForm, RentBuyForm, field_for

TEMPLATE = "configurator/configure.html"


@login_required
def configure(request: HttpRequest, model_slug: str, accelerator_slug: str) -> HttpResponse:
    try:
        model, accelerator = selectors.configuration_rows(
            model_slug=model_slug, accelerator_slug=accelerator_slug
        )
    except (LLMModel.DoesNotExist, Accelerator.DoesNotExist):
        raise Http404 from None
    context: dict[str, Any] = {"model": model, "accelerator": accelerator}
    limit = adapters.model_context_limit(model) if model.config else None
    if limit is None or not adapters.can_size_accelerator(accelerator):
        context.update(unavailable=True, model_unavailable=limit is None)
        return render(request, TEMPLATE, context)
    engines = hardware.support_matrix().default_first(accelerator)
    if not engines:
        context.update(unavailable=True, no_engine=True)
        return render(request, TEMPLATE, context)
    form = ConfigureForm(
        request.GET, max_context_tokens=limit, engines=engines, card_name=str(accelerator)
    )
    sizing = _sizing(form, model, accelerator, limit, analysis=_wants_analysis(request))
    context.update(form=form, max_context_tokens=limit, **sizing, **_urls(request, form))
    template = TEMPLATE
    if getattr(request, "htmx", False):
        template += "#analysis" if _wants_analysis(request) else "#results"
    bad = form.errors or ("rent" in sizing and sizing["rent"].errors)
    return render(request, template, context, status=400 if bad else 200)


def _urls(request: HttpRequest, form: ConfigureForm) -> dict[str, str]:
    """This state's bookmarkable address, and the analysis part's for the HTMX load."""
    query = {k: v for k, v in form.data.items() if k != "part"}
    return {
        "page_url": f"{request.path}?{urlencode(query)}",
        "analysis_url": f"{request.path}?{urlencode({**query, 'part': 'analysis'})}",
    }


def _wants_analysis(request: HttpRequest) -> bool:
    """A full page shows every section; an HTMX request gets the one it names."""
    return not getattr(request, "htmx", False) or request.GET.get("part") == "analysis"


def _sizing(
    form: ConfigureForm, model: LLMModel, accelerator: Accelerator, limit: int, *, analysis: bool
) -> dict[str, Any]:
    if not form.is_valid():
        return {}
    try:
        quant = form.cleaned_data["quant"] or selectors.default_quant(
            model=model, accelerator=accelerator, setup=form.setup(quant="Q4_K_M")
        )
        form.data = {**form.data, "quant": quant}  # the page shows the quant it sized
        setup = form.setup(quant=quant)
        results = selectors.configuration_results(model=model, accelerator=accelerator, setup=setup)
        if not analysis:
            return {"setup": setup, **results}
        rent = RentBuyForm.for_configuration(
            form.data, price_usd=accelerator.price_usd, tdp_w=accelerator.tdp_w, gpus=setup.gpus
        )
        more = selectors.configuration_analysis(
            model=model,
            accelerator=accelerator,
            setup=setup,
            results=results,
            max_context_tokens=limit,
            rent=rent,
        )
    except RequestError as exc:
        form.add_error(field_for(exc.field), exc.message)
        return {}
    return {"setup": setup, **results, **more}
