from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.models import Accelerator, LLMModel
from catalog.sizing.cache import TIMEOUT_S, key_for
from estimator.api import RequestError
from pricing import costs
from sizing_site.configurator import selectors
from sizing_site.configurator.forms import ConfigureForm, RentBuyForm, field_for
from sizing_site.tenancy.viewer import public_first

TEMPLATE = "configurator/configure.html"


@login_required
def configure(request: HttpRequest, model_slug: str, accelerator_slug: str) -> HttpResponse:
    # The viewer's organisations' own rows are found too; anyone else gets the 404 of an
    # unknown slug, before any cache is read.
    try:
        model, accelerator = public_first(
            request,
            lambda organizations: selectors.configuration_rows(
                model_slug=model_slug,
                accelerator_slug=accelerator_slug,
                organizations=organizations,
            ),
            (LLMModel.DoesNotExist, Accelerator.DoesNotExist),
        )
    except (LLMModel.DoesNotExist, Accelerator.DoesNotExist):
        raise Http404 from None
    context: dict[str, object] = {"model": model, "accelerator": accelerator}
    scope = selectors.page_scope(model=model, accelerator=accelerator)
    limit = scope.max_context_tokens
    if limit is None or not scope.sizeable_card:
        context.update(unavailable=True, model_unavailable=limit is None)
        return render(request, TEMPLATE, context)
    if not scope.engines:
        context.update(unavailable=True, no_engine=True)
        return render(request, TEMPLATE, context)
    form = ConfigureForm.for_pair(
        request.GET,
        model=model,
        accelerator=accelerator,
        max_context_tokens=limit,
        engines=scope.engines,
    )
    sized = _sizing(request, form, model, accelerator, limit)
    context.update(form=form, max_context_tokens=limit, **_urls(request, form))
    context.update(
        sections_timeout=TIMEOUT_S, form_key=_form_key(request, form, model, accelerator)
    )
    if sized is not None:
        context.update(sized.context())
        # The sections that show only catalog figures are rendered once per catalog
        # version, setup and language ({% cache %} in configure.html); the answer panel,
        # offers, rent-or-buy and the FAQ read prices and are rendered per request.
        setup = sized.results.sized.setup
        context["sections_key"] = key_for(
            "configurator-sections",
            (model.pk, accelerator.pk, setup, limit, selectors.CACHE_SHAPE),
        )
    template = TEMPLATE
    if getattr(request, "htmx", False):
        template += "#analysis" if _wants_analysis(request) else "#results"
    bad = form.errors or (sized is not None and sized.analysis is not None and sized.rent.errors)
    return render(request, template, context, status=400 if bad else 200)


def _urls(request: HttpRequest, form: ConfigureForm) -> dict[str, str]:
    """This state's bookmarkable address (with the quant the page sized), and the analysis
    part's for the HTMX load."""
    query = {k: v for k, v in form.data.items() if k != "part"}
    if form.sized_quant:
        query["quant"] = form.sized_quant
    return {
        "page_url": f"{request.path}?{urlencode(query)}",
        "analysis_url": f"{request.path}?{urlencode({**query, 'part': 'analysis'})}",
    }


def _form_key(
    request: HttpRequest, form: ConfigureForm, model: LLMModel, accelerator: Accelerator
) -> str:
    """The rendered form's cache key ({% cache %} in configure.html, with the language). A
    GET form's HTML is a function of the address, the query (merged over the defaults), the
    quant the page sized and its errors, which follow from those and the catalog version."""
    query = sorted(form.data.items())
    return key_for(
        "configurator-form", (model.pk, accelerator.pk, request.path, query, form.sized_quant)
    )


def _wants_analysis(request: HttpRequest) -> bool:
    """A full page shows every section; an HTMX request gets the one it names."""
    return not getattr(request, "htmx", False) or request.GET.get("part") == "analysis"


@dataclass(frozen=True)
class _Sized:
    """What the page sized: the main figures with the answer panel, the rent-or-buy form
    (its figures feed the panel's owned cost), and the deeper sections when the request
    asks for them."""

    results: selectors.ConfigurationResults
    answer: selectors.Answer
    rent: RentBuyForm
    analysis: selectors.ConfigurationAnalysis | None = None

    def context(self) -> dict[str, object]:
        """The template's names for the figures."""
        sized = self.results.sized
        context: dict[str, object] = {
            "setup": sized.setup,
            "result": sized.result,
            "backend": sized.backend,
            "measured": sized.measured_weights_bytes is not None,
            "usable_bytes": self.results.usable_bytes,
            "device_memory": self.results.device_memory,
            "commands": self.results.commands,
            "answer": self.answer,
        }
        more = self.analysis
        if more is not None:
            context.update(
                rent=self.rent,
                offers=more.costs.offers,
                cloud=more.costs.cloud,
                rent_vs_buy=more.costs.rent_vs_buy,
                recommended=more.recommended,
                matrix=more.matrix,
                memory_by_context=more.memory_by_context,
                faq_point=more.faq_point,
                faq_context_tokens=selectors.FAQ_CONTEXT_TOKENS,
                plan=more.plan,
                kv_alternatives=more.kv_alternatives,
                finetune=more.finetune,
                datacenter=more.datacenter,
                faq=more.faq,
                owner_month=_owner_month(self.rent),
                hours_per_day=self.rent.hours_per_day,
            )
        return context


def _sizing(
    request: HttpRequest,
    form: ConfigureForm,
    model: LLMModel,
    accelerator: Accelerator,
    limit: int,
) -> _Sized | None:
    """Size the form's setup; an estimator refusal becomes an error on the field at fault."""
    if not form.is_valid():
        return None
    try:
        results = selectors.configuration_results(
            model=model, accelerator=accelerator, setup=form.setup()
        )
        form.sized_quant = results.sized.setup.quant  # the select shows the quant sized
        rent = RentBuyForm.for_card(
            request.GET, accelerator=accelerator, gpus=results.sized.setup.gpus
        )
        analysis = None
        if _wants_analysis(request):
            analysis = selectors.configuration_analysis(
                model=model,
                accelerator=accelerator,
                sized=results.sized,
                max_context_tokens=limit,
                ownership=rent.ownership(),
                hours_per_day=rent.hours_per_day,
            )
            cloud = analysis.costs.cloud  # the same offer, without a second query
        else:
            cloud = selectors.cheapest_offer(accelerator=accelerator, sized=results.sized)
        answer = selectors.configuration_answer(
            accelerator=accelerator,
            sized=results.sized,
            cloud=cloud,
            ownership=rent.owner_cost_basis(),
            typed_price=rent.typed_price,
        )
    except RequestError as exc:
        form.add_error(field_for(exc.field), exc.message)
        return None
    return _Sized(results, answer, rent, analysis)


def _owner_month(rent: RentBuyForm) -> costs.OwnerMonth | None:
    """Owning per month as the rent-or-buy form sets it (its active hours a day), shown
    with or without a cloud offer to compare with."""
    ownership = rent.ownership()
    return None if ownership is None else costs.owner_month(ownership)
