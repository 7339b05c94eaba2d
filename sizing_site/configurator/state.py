"""One configurator state, sized: the one "size this state" of the configurator page,
POST /api/v1/estimate/, saved configurations (save and recompute) and compare.

A state is the configurator's query parameters (ConfigureForm's fields, absent ones at the
page's defaults) on a catalog model and card. `configuration_size` validates them with the
page's form, builds the Setup (quant "" = the best that fits, catalog.sizing's
default_quant), sizes it (selectors.configuration_results, kept in the shared sizing cache)
and answers a ConfiguratorState. Whatever stops it is a StateError carrying the messages
by field, so that a page shows a form error and an API a 400 (404 for an unknown slug)
naming the field.

What every interface shows of a state that does not fit is the same too: its memory and
verdict, no speed (shown_figures).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.utils.translation import gettext as _

from catalog import sizing
from catalog.models import Accelerator, LLMModel
from catalog.scoping import Owner
from estimator.api import RequestError, result_to_dict
from pricing import costs
from sizing_site.apikit.errors import Errors, form_errors
from sizing_site.configurator import rows, selectors
from sizing_site.configurator.forms import ConfigureForm, field_for
from sizing_site.configurator.rent_forms import RentBuyForm

# Why a state cannot be sized: an unknown slug, a model whose config the estimator cannot
# read, a card without memory or bandwidth figures, a card no engine runs on, parameters
# the form rejects, or a setup the estimator refuses.
Reason = Literal["unknown", "model_unavailable", "unsized", "no_engine", "invalid", "refused"]
# The result's speed figures (ranges, and the serving point's per-user speeds).
SPEED_FIELDS = (
    "decode_tokens_per_s",
    "aggregate_decode_tokens_per_s",
    "prefill_tokens_per_s",
    "ttft_s",
    "serving",
)
# The form-wide errors of a state are about the setup as a whole.
FORM_WIDE = {"__all__": "setup"}


class StateError(ValueError):
    """A configurator state that cannot be sized. `errors`: the messages by field (the
    form's field names; "model" or "accelerator" for the rows, "setup" for the setup as a
    whole); `reason` says which case, for an interface that words it itself; `form` is
    the form with the errors, once the state got that far (None before)."""

    def __init__(
        self, errors: Errors, *, reason: Reason, form: ConfigureForm | None = None
    ) -> None:
        super().__init__(" ".join(m for messages in errors.values() for m in messages))
        self.errors = errors
        self.reason = reason
        self.form = form

    @property
    def status(self) -> int:
        """The API's status: 404 for an unknown slug, else 400."""
        return 404 if self.reason == "unknown" else 400


def unknown_slug(name: Literal["model", "accelerator"]) -> StateError:
    """The error of a model or card slug that names no row the caller may read."""
    message = _("No model with this slug.") if name == "model" else _("No card with this slug.")
    return StateError({name: [message]}, reason="unknown")


def shown_figures(result: dict[str, Any]) -> dict[str, Any]:
    """An estimator result as JSON types (estimator.api.result_to_dict) as every page and
    API shows it: with the verdict does_not_fit, no speed (SPEED_FIELDS null), since
    nothing would run at any of them; the memory figures and the verdict as they are."""
    if (result.get("fit") or {}).get("verdict") != "does_not_fit":
        return result
    return {**result, **{name: None for name in SPEED_FIELDS if name in result}}


@dataclass(frozen=True)
class ConfiguratorState:
    """A configurator state, validated and sized: the rows, the page's form (bound and
    valid; its quant select shows the quant sized), the model's longest context, and the
    main figures (the Sizing, usable memory, device memory, launch commands)."""

    model: LLMModel
    accelerator: Accelerator
    form: ConfigureForm
    max_context_tokens: int
    results: selectors.ConfigurationResults

    @property
    def sized(self) -> sizing.Sizing:
        return self.results.sized

    @property
    def setup(self) -> sizing.Setup:
        """The setup sized: the quant is the one chosen when the best that fits was asked."""
        return self.results.sized.setup

    @property
    def asked(self) -> sizing.Setup:
        """The setup as the parameters ask for it (quant "": the best that fits)."""
        return self.form.setup()

    @property
    def fits(self) -> bool:
        return self.results.sized.fits

    @property
    def query(self) -> dict[str, str]:
        """The form's own query parameters as sent, the absent ones at their defaults."""
        data = self.form.data
        return {name: str(data[name]) for name in self.form.fields if name in data}

    @property
    def sized_query(self) -> dict[str, str]:
        """`query` with the quant sized: the address that shows this state again."""
        return self.query | {"quant": self.setup.quant}

    @property
    def quant_note(self) -> str:
        """Why the form dropped a format the engine does not load ("" when it did not)."""
        return self.form.quant_note

    def shown_result(self) -> dict[str, Any]:
        """The estimator's result as every interface shows it (shown_figures)."""
        return shown_figures(result_to_dict(self.results.sized.result))


def configuration_pair(
    *, model_slug: str, accelerator_slug: str, organizations: Sequence[Owner] = ()
) -> tuple[LLMModel, Accelerator]:
    """rows.configuration_rows (the public rows and `organizations`' own); an unknown
    slug is a StateError naming it."""
    try:
        return rows.configuration_rows(
            model_slug=model_slug, accelerator_slug=accelerator_slug, organizations=organizations
        )
    except LLMModel.DoesNotExist:
        raise unknown_slug("model") from None
    except Accelerator.DoesNotExist:
        raise unknown_slug("accelerator") from None


def configuration_size(
    *, model: LLMModel, accelerator: Accelerator, data: Mapping[str, Any]
) -> ConfiguratorState:
    """Validate `data` (the configurator's query parameters) for the model on the card as
    the page does, and size the setup (quant "" takes the best that fits). Raises
    StateError: the page's scope first (a model the estimator cannot read, a card without
    the figures or without an engine), then the form's field errors, then an estimator
    refusal under the field at fault (field_for; "setup" when no field is)."""
    scope = selectors.page_scope(model=model, accelerator=accelerator)
    limit = scope.max_context_tokens
    if limit is None:
        message = _("The estimator cannot read this model's config.")
        raise StateError({"model": [message]}, reason="model_unavailable")
    if not scope.sizeable_card:
        message = _("The catalog lacks this card's memory figures.")
        raise StateError({"accelerator": [message]}, reason="unsized")
    if not scope.engines:
        message = _("No engine in the catalog runs on this card.")
        raise StateError({"engine": [message]}, reason="no_engine")
    form = ConfigureForm.for_pair(
        data, model=model, accelerator=accelerator, max_context_tokens=limit, engines=scope.engines
    )
    if not form.is_valid():
        raise StateError(form_errors(form, FORM_WIDE), reason="invalid", form=form)
    try:
        results = selectors.configuration_results(
            model=model, accelerator=accelerator, setup=form.setup()
        )
    except RequestError as exc:
        raise _refused(form, exc) from None
    form.sized_quant = results.sized.setup.quant  # the select shows the quant sized
    return ConfiguratorState(model, accelerator, form, limit, results)


def configuration_size_by_slugs(
    *,
    model_slug: str,
    accelerator_slug: str,
    data: Mapping[str, Any],
    organizations: Sequence[Owner] = (),
) -> ConfiguratorState:
    """configuration_pair, then configuration_size: a saved configuration's replay (with
    its organisation for its own rows). Raises StateError."""
    model, accelerator = configuration_pair(
        model_slug=model_slug, accelerator_slug=accelerator_slug, organizations=organizations
    )
    return configuration_size(model=model, accelerator=accelerator, data=data)


def _refused(form: ConfigureForm, exc: RequestError) -> StateError:
    """The estimator's refusal as an error on the form field at fault."""
    field = field_for(exc.field)
    form.add_error(field, exc.message)
    return StateError({field or "setup": [exc.message]}, reason="refused", form=form)


# --- the answer panel and the deeper sections ----------------------------------------------

CloudOffer = Callable[[Accelerator, sizing.Sizing], costs.OfferCost | None]


def _cheapest_offer(accelerator: Accelerator, sized: sizing.Sizing) -> costs.OfferCost | None:
    return selectors.cheapest_offer(accelerator=accelerator, sized=sized)


@dataclass(frozen=True)
class StateAnswer:
    """A state's answer panel, with the rent-or-buy form whose figures feed its owned cost,
    and the deeper sections when asked for."""

    rent: RentBuyForm
    answer: selectors.Answer
    analysis: selectors.ConfigurationAnalysis | None = None


def state_answer(
    *,
    state: ConfiguratorState,
    rent: RentBuyForm,
    analysis: bool,
    cloud_offer: CloudOffer = _cheapest_offer,
) -> StateAnswer:
    """The answer panel (selectors.configuration_answer) at the rent-or-buy form's figures,
    with the cheapest cloud offer: the analysis' own when the deeper sections are asked
    for (selectors.configuration_analysis), else `cloud_offer` (one query; a batch passes
    one that remembers it). Raises StateError when the estimator refuses a section."""
    sized = state.sized
    try:
        sections = None
        if analysis:
            sections = selectors.configuration_analysis(
                model=state.model,
                accelerator=state.accelerator,
                sized=sized,
                max_context_tokens=state.max_context_tokens,
                ownership=rent.ownership(),
                hours_per_day=rent.hours_per_day,
            )
            cloud = sections.costs.cloud  # the same offer, without a second query
        else:
            cloud = cloud_offer(state.accelerator, sized)
        answer = selectors.configuration_answer(
            accelerator=state.accelerator,
            sized=sized,
            cloud=cloud,
            ownership=rent.owner_cost_basis(),
            typed_price=rent.typed_price,
        )
    except RequestError as exc:
        raise _refused(state.form, exc) from None
    return StateAnswer(rent, answer, sections)
