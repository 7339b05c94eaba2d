from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import get_language

from catalog.models import Accelerator, LLMModel
from catalog.sizing.cache import TIMEOUT_S, key_for
from pricing import costs
from pricing.versions import price_version
from sizing_site.configurator import rows, selectors
from sizing_site.configurator.fit_options import fit_options
from sizing_site.configurator.forms import OFFLOAD_SECTION, ConfigureForm
from sizing_site.configurator.rent_forms import RentBuyForm
from sizing_site.configurator.state import (
    ConfiguratorState,
    StateAnswer,
    StateError,
    configuration_size,
    state_answer,
)
from sizing_site.core import fragment_cache
from sizing_site.tenancy.selectors import membership_list_for_user
from sizing_site.tenancy.viewer import public_first

TEMPLATE = "configurator/configure.html"
# The fields whose values the out-of-band form part shows (form.html#oob): the engine's
# quant and KV fields and the offload section.
OOB_FIELDS = ("engine", "quant", "kv", *OFFLOAD_SECTION)
# The price sections' fragments (answer panel, recommendations, offers, rent or buy, FAQ)
# are keyed by the hour too: a live price turns stale by the clock, with no write to bump
# the price version, so a fragment shows it stale at most this late.
PRICES_TIMEOUT_S = 3600


@login_required
def configure(request: HttpRequest, model_slug: str, accelerator_slug: str) -> HttpResponse:
    # The viewer's organisations' own rows are found too; anyone else gets the 404 of an
    # unknown slug, before any cache is read.
    try:
        model, accelerator = public_first(
            request,
            lambda organizations: rows.configuration_rows(
                model_slug=model_slug,
                accelerator_slug=accelerator_slug,
                organizations=organizations,
            ),
            (LLMModel.DoesNotExist, Accelerator.DoesNotExist),
        )
    except (LLMModel.DoesNotExist, Accelerator.DoesNotExist):
        raise Http404 from None
    # The visitor's memberships, read once for the org switcher and the save form (the
    # context processor's callable would read them again for each).
    context: dict[str, object] = {
        "model": model,
        "accelerator": accelerator,
        "user_memberships": membership_list_for_user(user=request.user),
    }
    try:
        state = configuration_size(model=model, accelerator=accelerator, data=request.GET)
        rent = RentBuyForm.for_card(request.GET, accelerator=accelerator, gpus=state.setup.gpus)
        answered = state_answer(state=state, rent=rent, analysis=_wants_analysis(request))
    except StateError as exc:
        if exc.form is None:  # the pair itself cannot be sized: no form to show
            context.update(
                unavailable=True,
                model_unavailable=exc.reason == "model_unavailable",
                no_engine=exc.reason == "no_engine",
            )
            return render(request, TEMPLATE, context)
        context.update(_form_context(request, exc.form, model, accelerator))
        return render(request, _template(request), context, status=400)
    context.update(_form_context(request, state.form, model, accelerator))
    context.update(_Sized(state, answered).context())
    # The sections that show only catalog figures are rendered once per catalog version,
    # setup and language ({% cache %} in configure.html); the answer panel, offers,
    # rent-or-buy and the FAQ read prices too, and are rendered once per price version as
    # well (prices_key). Only the save form and the page around it are per visitor.
    context["sections_key"] = key_for(
        "configurator-sections",
        (model.pk, accelerator.pk, state.setup, state.max_context_tokens, selectors.CACHE_SHAPE),
    )
    context.update(prices_key=_prices_key(request, model, accelerator))
    bad = answered.analysis is not None and answered.rent.errors
    template = _template(request)
    with fragment_cache.batched(_fragments(template, context)):
        return render(request, template, context, status=400 if bad else 200)


# The {% cache %} fragments of configure.html (their names as the template writes them) and
# the context name each is keyed by besides the language; those of the analysis part, and
# which parts a template renders, below.
_FORM = (('"configurator-form"', "form_key"),)
_OOB = (('"configurator-form-oob"', "oob_key"),)
_RESULTS = (('"configurator-answer"', "prices_key"), ('"configurator-results"', "sections_key"))
_ANALYSIS = (
    ('"configurator-plan"', "sections_key"),
    ('"configurator-offers"', "prices_key"),
    ('"configurator-analysis"', "sections_key"),
    ('"configurator-faq"', "prices_key"),
)
_PARTS = {
    TEMPLATE: _FORM + _RESULTS,
    TEMPLATE + "#layout": _FORM + _RESULTS,
    TEMPLATE + "#results": _OOB + _RESULTS,
    TEMPLATE + "#analysis": (),
}


def _fragments(template: str, context: dict[str, object]) -> list[tuple[str, tuple[object, ...]]]:
    """The fragments `template` renders for a sized setup, as fragment_cache.batched reads
    them: the analysis part's too when the context has its figures (inline on a full
    page)."""
    names = _PARTS[template] + (_ANALYSIS if "matrix" in context else ())
    language = get_language()
    return [(name, (context[key], language)) for name, key in names]


def _template(request: HttpRequest) -> str:
    """The whole page, or for an HTMX request the part it names: a "make it fit" link
    targets #cfg-layout (the form and the results, so the form shows the state applied)."""
    htmx = getattr(request, "htmx", None)
    if not htmx:
        return TEMPLATE
    if htmx.target == "cfg-layout":
        return TEMPLATE + "#layout"
    return TEMPLATE + ("#analysis" if _wants_analysis(request) else "#results")


def _form_context(
    request: HttpRequest, form: ConfigureForm, model: LLMModel, accelerator: Accelerator
) -> dict[str, object]:
    """The form's part of the page, shown with or without figures."""
    return {
        "form": form,
        "max_context_tokens": form.max_context_tokens,
        **_urls(request, form),
        "sections_timeout": TIMEOUT_S,
        "prices_timeout": PRICES_TIMEOUT_S,
        "form_key": _form_key(request, form, model, accelerator),
        "oob_key": _oob_key(request, form, model, accelerator),
    }


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


def _oob_key(
    request: HttpRequest, form: ConfigureForm, model: LLMModel, accelerator: Accelerator
) -> str:
    """The out-of-band form part's cache key (an HTMX answer's, with the language). It
    shows every field's error, the quant and KV fields (their options follow the engine,
    the best-that-fits label the quant sized, their notes what was sent and the engine) and
    the offload section (its fields' values, the engine's settings, the model's layers);
    not the context, GPUs, sequences or tokens, so setups that differ only there share
    it."""
    sent = sorted((name, str(form.data.get(name, ""))) for name in OOB_FIELDS)
    errors = sorted((name, [str(e) for e in messages]) for name, messages in form.errors.items())
    notes = (str(form.quant_note), str(form.kv_note))  # a dropped format leaves data ""
    parts = (model.pk, accelerator.pk, request.path, sent, form.sized_quant, notes, errors)
    return key_for("configurator-form-oob", parts)


def _prices_key(request: HttpRequest, model: LLMModel, accelerator: Accelerator) -> str:
    """The price sections' cache key ({% cache %} in configure.html, with the language):
    what they show is a function of the address, the whole query (the setup and the
    rent-or-buy figures), the catalog version (key_for), the public offers (the price
    version) and the hour (a live price's staleness, PRICES_TIMEOUT_S). Nothing in them
    is the visitor's own; the rows' owners are in the key all the same, so an
    organisation's rows are never answered from an entry keyed without the organisation."""
    owners = (model.pk, model.organization_id, accelerator.pk, accelerator.organization_id)
    query = sorted(request.GET.lists())
    hour = int(time.time() // PRICES_TIMEOUT_S)
    parts = (owners, request.path, query, price_version(), hour, selectors.CACHE_SHAPE)
    return key_for("configurator-prices", parts)


def _wants_analysis(request: HttpRequest) -> bool:
    """A full page shows every section; an HTMX request gets the one it names."""
    return not getattr(request, "htmx", False) or request.GET.get("part") == "analysis"


@dataclass(frozen=True)
class _Sized:
    """What the page shows of a sized state: the main figures with the answer panel, and
    the deeper sections when the request asks for them."""

    state: ConfiguratorState
    answered: StateAnswer

    def context(self) -> dict[str, object]:
        """The template's names for the figures."""
        results, answered = self.state.results, self.answered
        sized = results.sized
        context: dict[str, object] = {
            "setup": sized.setup,
            "result": sized.result,
            "backend": sized.backend,
            "measured": sized.measured_weights_bytes is not None,
            "usable_bytes": results.usable_bytes,
            "device_memory": results.device_memory,
            "commands": results.commands,
            "answer": answered.answer,
        }
        more, rent = answered.analysis, answered.rent
        if more is not None:
            context.update(
                rent=rent,
                offers=more.costs.offers,
                cloud=more.costs.cloud,
                rent_vs_buy=more.costs.rent_vs_buy,
                recommended=more.recommended,
                matrix=more.matrix,
                memory_by_context=more.memory_by_context,
                faq_point=more.faq_point,
                faq_context_tokens=selectors.FAQ_CONTEXT_TOKENS,
                plan=fit_options(state=self.state, plan=more.plan),
                kv_alternatives=more.kv_alternatives,
                finetune=more.finetune,
                datacenter=more.datacenter,
                faq=more.faq,
                owner_month=_owner_month(rent),
                hours_per_day=rent.hours_per_day,
            )
        return context


def _owner_month(rent: RentBuyForm) -> costs.OwnerMonth | None:
    """Owning per month as the rent-or-buy form sets it (its active hours a day), shown
    with or without a cloud offer to compare with."""
    ownership = rent.ownership()
    return None if ownership is None else costs.owner_month(ownership)
