"""POST /api/v1/estimate/: the estimator's figures through the configurator's one
workflow (sizing_site.configurator.state), for scripts."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog import sizing
from catalog.models import Accelerator, LLMModel
from catalog.sizing import deadline
from catalog.sizing.specs import stated_layers
from estimator.api import RequestError, estimate
from pricing import costs
from pricing.models import CloudOffer
from sizing_site.apikit import budget
from sizing_site.apikit.errors import Errors, Refused, errors_shape, form_errors
from sizing_site.apikit.parsers import JsonBodyParser
from sizing_site.configurator import api_schema, rows, selectors
from sizing_site.configurator.rent_forms import RentBuyForm
from sizing_site.configurator.serializers import (
    analysis_data,
    commands_data,
    cost_data,
    row_data,
    setup_data,
)
from sizing_site.configurator.state import (
    StateError,
    configuration_size,
    state_answer,
    unknown_slug,
)
from sizing_site.tenancy.viewer import public_first

MAX_ITEMS = 100
# The configurator's query parameters (ConfigureForm's fields), the setup of a shortcut.
SETUP_FIELDS = frozenset(
    (
        "quant",
        "ctx",
        "gpus",
        "seqs",
        "kv",
        "engine",
        "offload",
        "layers",
        "moe",
        "moe_layers",
        "host_bw",
        "prompt",
        "output",
    )
)
# The rent-or-buy form's fields (hours, hw_usd, power_w, kwh_usd, pue, years, busy): the
# owner's cost in the answer, and owning against renting in the analysis.
RENT_FIELDS = frozenset(RentBuyForm.base_fields)
SHORTCUT_FIELDS = SETUP_FIELDS | RENT_FIELDS | {"model", "accelerator", "analysis"}
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,200}")


class EstimateApi(APIView):
    """Size one setup, or a batch of them.

    The body is one item or a JSON list of at most 100 items. An item is either
    - the catalog shortcut: {"model": "<model slug>", "accelerator": "<accelerator slug>"}
      plus any of the configurator's setup fields under its query-parameter names (quant,
      ctx, gpus, seqs, kv, engine, offload, layers, moe, moe_layers, host_bw, prompt,
      output), absent ones at the page's defaults, validated by the configurator's form;
      the rent-or-buy form's fields (hours, hw_usd, power_w, kwh_usd, pue, years, busy);
      and "analysis": true for the page's deeper sections. The answer is the estimator's
      result with "model", "accelerator", "setup" (the sized setup, with the quant "best
      that fits" chose), "cost" (the answer panel's cost per 1M output tokens),
      "launch_commands" and, when asked, "analysis" (offers, rent vs buy, recommended
      cards, quant matrix, memory by context, make it fit, KV alternatives, fine-tuning).
      As on the page, a setup whose verdict is "does_not_fit" has no speed: its
      decode_tokens_per_s, aggregate_decode_tokens_per_s, prefill_tokens_per_s, ttft_s
      and serving are null (state.shown_figures);
    - the estimator's own request: {"request": {...}} (docs/estimator.md, "The request");
      the answer is the estimator's result.

    One item: 200 with the result, or 400 (404 for an unknown slug) with
    {"errors": {"<field>": ["message", ...]}}. A batch: 200 with a list in the same order,
    a result or an {"errors": ...} object per item; 400 for more than 100 items.
    The request is priced first (sizing_site.apikit.budget): 413 over the per-request budget,
    429 over the user's or token's minute or with too many priced requests in flight; the
    items a batch did not reach within the time limit are answered with a "deadline" error.
    Within one request the catalog rows of a model and card pair, and the cheapest offer
    for a card count, are read once (a batch sweeping one pair costs a few queries).
    """

    parser_classes = [JsonBodyParser]

    def get_exception_handler(self) -> Callable[[Exception, dict[str, Any]], Response | None]:
        return errors_shape

    @extend_schema(
        operation_id="estimate",
        summary="Size one setup, or a batch of up to 100",
        request=api_schema.ESTIMATE_REQUEST,
        responses=api_schema.ESTIMATE_RESPONSES,
        examples=api_schema.estimate_examples(),
        tags=["estimate"],
    )
    def post(self, request: Request) -> Response:
        body, rows = request.data, _Rows(request)
        if isinstance(body, list):
            if len(body) > MAX_ITEMS:
                message = _("At most %(max)d items in one request.") % {"max": MAX_ITEMS}
                return Response({"errors": {"items": [message]}}, status=400)
            # Priced before anything is sized (the work budget: 413, 429).
            with budget.spend(request, sum(_item_units(item, rows) for item in body)):
                return Response(_answer_batch(body, rows))
        with budget.spend(request, _item_units(body, rows)):
            data, code = _answer_item(body, rows)
        return Response(data, status=code)


def _answer_batch(body: list[Any], rows: _Rows) -> list[dict[str, Any]]:
    """Each item's answer, in order, until the time limit passes: the items after it are
    answered with an error naming the limit, not sized."""
    answers = []
    for item in body:
        if deadline.passed():
            answers.append({"errors": budget.deadline_error()})
        else:
            answers.append(_answer_item(item, rows)[0])
    return answers


def _item_units(item: Any, rows: _Rows) -> float:
    """What sizing the item will cost (sizing_site.apikit.budget), from the depth of the
    model it names and the sections it asks for; an item that will be refused costs as
    an ordinary estimate."""
    if not isinstance(item, dict):
        return budget.estimate_units(layers=0)
    if "request" in item:
        raw = item["request"] if isinstance(item["request"], dict) else {}
        model = raw.get("model")
        config = model.get("hf_config") if isinstance(model, dict) else None
        sections = 1 if raw.get("recommend") is True else 0  # the recommendations
        return budget.estimate_units(layers=stated_layers(config), sections=sections)
    model_slug, card_slug = item.get("model"), item.get("accelerator")
    if not all(isinstance(s, str) and SLUG.fullmatch(s) for s in (model_slug, card_slug)):
        return budget.estimate_units(layers=0)
    try:
        model, _card = rows.pair(str(model_slug), str(card_slug))
    except (LLMModel.DoesNotExist, Accelerator.DoesNotExist):
        return budget.estimate_units(layers=0)
    sections = budget.ANALYSIS_SECTIONS if item.get("analysis") is True else 0
    return budget.estimate_units(layers=stated_layers(model.config), sections=sections)


class _Rows:
    """The catalog rows and offers one request reads, each once: a batch names the same
    model, card and GPU count many times."""

    def __init__(self, request: Request) -> None:
        self._request = request
        self._pairs: dict[tuple[str, str], tuple[LLMModel, Accelerator]] = {}
        self._offers: dict[tuple[int, int], CloudOffer | None] = {}

    def pair(self, model_slug: str, card_slug: str) -> tuple[LLMModel, Accelerator]:
        """rows.configuration_rows, remembered: the public rows and the caller's
        organisations' own (a token's organisation only); anyone else's are unknown slugs.
        Raises as it does."""
        key = (model_slug, card_slug)
        if key not in self._pairs:
            self._pairs[key] = public_first(
                self._request,
                lambda organizations: rows.configuration_rows(
                    model_slug=model_slug, accelerator_slug=card_slug, organizations=organizations
                ),
                (LLMModel.DoesNotExist, Accelerator.DoesNotExist),
            )
        return self._pairs[key]

    def cheapest_offer(
        self, accelerator: Accelerator, sized: sizing.Sizing
    ) -> costs.OfferCost | None:
        """selectors.cheapest_offer, its query remembered per card and GPU count."""
        if not sized.fits:
            return None
        key = (accelerator.pk, sized.setup.gpus)
        if key not in self._offers:
            self._offers[key] = selectors.cheapest_offer_row(
                accelerator=accelerator, gpu_count=sized.setup.gpus
            )
        offer = self._offers[key]
        return None if offer is None else selectors.offer_cost(offer=offer, sized=sized)


def _answer_item(item: Any, rows: _Rows) -> tuple[dict[str, Any], int]:
    try:
        return _estimate_item(item, rows), status.HTTP_200_OK
    except Refused as exc:
        return {"errors": exc.errors}, exc.status_code


def _estimate_item(item: Any, rows: _Rows) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise Refused({"request": [_("Expected a JSON object.")]})
    if "request" in item:
        if len(item) > 1:
            unknown = sorted(str(k) for k in item if k != "request")
            raise Refused({k: [_("Not expected beside “request”.")] for k in unknown})
        return _raw_estimate(item["request"])
    return _shortcut_estimate(item, rows)


def _raw_estimate(request: Any) -> dict[str, Any]:
    """The estimator's JSON request, as estimator.api takes it."""
    try:
        return estimate(request)
    except RequestError as exc:
        raise Refused({exc.field: [exc.message]}) from None


def _slug(item: Mapping[str, Any], name: str) -> str:
    value = item.get(name)
    if value is None:
        raise Refused({name: [_("This field is required.")]})
    if not isinstance(value, str):
        raise Refused({name: [_("Expected a slug (a string).")]})
    return value


def _not_found(name: Literal["model", "accelerator"]) -> Refused:
    error = unknown_slug(name)
    return Refused(error.errors, error.status)


def setup_query(item: Mapping[str, Any], names: frozenset[str] = SETUP_FIELDS) -> dict[str, str]:
    """The item's fields among `names` as the query parameters they stand for: null is an
    empty parameter, true/false are "true"/"false". A list or object is no parameter."""
    data: dict[str, str] = {}
    wrong: Errors = {}
    for name, value in item.items():
        if name not in names:
            continue
        if value is None:
            data[name] = ""
        elif isinstance(value, bool):
            data[name] = "true" if value else "false"
        elif isinstance(value, int | float | str):
            data[name] = str(value)
        else:
            wrong[name] = [_("Expected a number, a string, true, false or null.")]
    if wrong:
        raise Refused(wrong)
    return data


def _shortcut_estimate(item: Mapping[str, Any], rows: _Rows) -> dict[str, Any]:
    """The configurator's workflow (views.configure, its results part): the state sized
    (state.configuration_size), then the answer panel's cheapest offer and owner's cost
    at the rent-or-buy form's figures (state.state_answer). As on the page, a setup that
    does not fit shows no speed (state.shown_figures)."""
    unknown = sorted(str(k) for k in item if k not in SHORTCUT_FIELDS)
    if unknown:
        raise Refused({k: [_("Unknown field.")] for k in unknown})
    model_slug, card_slug = _slug(item, "model"), _slug(item, "accelerator")
    if not SLUG.fullmatch(model_slug):
        raise _not_found("model")
    if not SLUG.fullmatch(card_slug):
        raise _not_found("accelerator")
    try:
        model, accelerator = rows.pair(model_slug, card_slug)
    except LLMModel.DoesNotExist:
        raise _not_found("model") from None
    except Accelerator.DoesNotExist:
        raise _not_found("accelerator") from None
    analysis = _flag(item, "analysis")
    try:
        state = configuration_size(model=model, accelerator=accelerator, data=setup_query(item))
        rent = RentBuyForm.for_card(
            setup_query(item, RENT_FIELDS), accelerator=accelerator, gpus=state.setup.gpus
        )
        if rent.is_bound and not rent.is_valid():
            raise Refused(form_errors(rent))
        answered = state_answer(
            state=state, rent=rent, analysis=analysis, cloud_offer=rows.cheapest_offer
        )
    except StateError as exc:
        raise Refused(exc.errors, exc.status) from None
    out: dict[str, Any] = {
        "model": row_data(model),
        "accelerator": row_data(accelerator),
        "setup": setup_data(state.setup, backend=state.sized.backend),
        **state.shown_result(),
        "cost": cost_data(answered.answer),
        "launch_commands": commands_data(state.results.commands),
    }
    if answered.analysis is not None:
        out["analysis"] = analysis_data(answered.analysis, rent)
    return out


def _flag(item: Mapping[str, Any], name: str) -> bool:
    value = item.get(name, False)
    if not isinstance(value, bool):
        raise Refused({name: [_("Expected true or false.")]})
    return value
