"""POST /api/v1/estimate/: the estimator's figures through the configurator's sizing
service (sizing_site.configurator.selectors), for scripts."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog.models import Accelerator, LLMModel, MemoryKind
from estimator.api import RequestError, estimate, result_to_dict
from sizing_site.api import schema
from sizing_site.api.errors import errors_shape
from sizing_site.api.serializers import cost_data, row_data, setup_data
from sizing_site.configurator import selectors
from sizing_site.configurator.forms import ConfigureForm, RentBuyForm, field_for

MAX_ITEMS = 50
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
SHORTCUT_FIELDS = SETUP_FIELDS | {"model", "accelerator"}
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,200}")

Errors = dict[str, list[str]]


class ItemError(Exception):
    """A bad item: its errors by field, and the status a single request answers with."""

    def __init__(self, errors: Errors, status_code: int = status.HTTP_400_BAD_REQUEST) -> None:
        super().__init__(errors)
        self.errors = errors
        self.status_code = status_code


class EstimateApi(APIView):
    """Size one setup, or a batch of them.

    The body is one item or a JSON list of at most 50 items. An item is either
    - the catalog shortcut: {"model": "<model slug>", "accelerator": "<accelerator slug>"}
      plus any of the configurator's setup fields under its query-parameter names (quant,
      ctx, gpus, seqs, kv, engine, offload, layers, moe, moe_layers, host_bw, prompt,
      output), absent ones at the page's defaults, validated by the configurator's form;
      the answer is the estimator's result with "model", "accelerator", "setup" (the sized
      setup, with the quant "best that fits" chose) and "cost" (the answer panel's cost
      per 1M output tokens);
    - the estimator's own request: {"request": {...}} (docs/estimator.md, "The request");
      the answer is the estimator's result.

    One item: 200 with the result, or 400 (404 for an unknown slug) with
    {"errors": {"<field>": ["message", ...]}}. A batch: 200 with a list in the same order,
    a result or an {"errors": ...} object per item; 400 for more than 50 items.
    """

    parser_classes = [JSONParser]

    def get_exception_handler(self) -> Callable[[Exception, dict[str, Any]], Response | None]:
        return errors_shape

    @extend_schema(
        operation_id="estimate",
        summary="Size one setup, or a batch of up to 50",
        request=schema.ESTIMATE_REQUEST,
        responses=schema.ESTIMATE_RESPONSES,
        examples=schema.estimate_examples(),
        tags=["estimate"],
    )
    def post(self, request: Request) -> Response:
        body = request.data
        if isinstance(body, list):
            if len(body) > MAX_ITEMS:
                message = _("At most %(max)d items in one request.") % {"max": MAX_ITEMS}
                return Response({"errors": {"items": [message]}}, status=400)
            return Response([_answer_item(item)[0] for item in body])
        data, code = _answer_item(body)
        return Response(data, status=code)


def _answer_item(item: Any) -> tuple[dict[str, Any], int]:
    try:
        return _estimate_item(item), status.HTTP_200_OK
    except ItemError as exc:
        return {"errors": exc.errors}, exc.status_code


def _estimate_item(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ItemError({"request": [_("Expected a JSON object.")]})
    if "request" in item:
        if len(item) > 1:
            unknown = sorted(str(k) for k in item if k != "request")
            raise ItemError({k: [_("Not expected beside “request”.")] for k in unknown})
        return _raw_estimate(item["request"])
    return _shortcut_estimate(item)


def _raw_estimate(request: Any) -> dict[str, Any]:
    """The estimator's JSON request, as estimator.api takes it."""
    try:
        return estimate(request)
    except RequestError as exc:
        raise ItemError({exc.field: [exc.message]}) from None


def _slug(item: Mapping[str, Any], name: str) -> str:
    value = item.get(name)
    if value is None:
        raise ItemError({name: [_("This field is required.")]})
    if not isinstance(value, str):
        raise ItemError({name: [_("Expected a slug (a string).")]})
    return value


def _not_found(name: str) -> ItemError:
    message = _("No model with this slug.") if name == "model" else _("No card with this slug.")
    return ItemError({name: [message]}, status.HTTP_404_NOT_FOUND)


def _form_data(item: Mapping[str, Any]) -> dict[str, str]:
    """The setup fields as the query parameters they stand for: null is an empty
    parameter, true/false are "true"/"false". A list or object is no parameter."""
    data: dict[str, str] = {}
    wrong: Errors = {}
    for name, value in item.items():
        if name not in SETUP_FIELDS:
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
        raise ItemError(wrong)
    return data


def _shortcut_estimate(item: Mapping[str, Any]) -> dict[str, Any]:
    """The configurator's workflow (views.configure, its results part): the page's scope
    and form, configuration_results, then the answer panel's cheapest offer and owner's
    cost at the rent-or-buy form's defaults."""
    unknown = sorted(str(k) for k in item if k not in SHORTCUT_FIELDS)
    if unknown:
        raise ItemError({k: [_("Unknown field.")] for k in unknown})
    model_slug, card_slug = _slug(item, "model"), _slug(item, "accelerator")
    if not SLUG.fullmatch(model_slug):
        raise _not_found("model")
    if not SLUG.fullmatch(card_slug):
        raise _not_found("accelerator")
    try:
        model, accelerator = selectors.configuration_rows(
            model_slug=model_slug, accelerator_slug=card_slug
        )
    except LLMModel.DoesNotExist:
        raise _not_found("model") from None
    except Accelerator.DoesNotExist:
        raise _not_found("accelerator") from None
    scope = selectors.page_scope(model=model, accelerator=accelerator)
    limit = scope.max_context_tokens
    if limit is None:
        raise ItemError({"model": [_("The estimator cannot read this model's config.")]})
    if not scope.sizeable_card:
        raise ItemError({"accelerator": [_("The catalog lacks this card's memory figures.")]})
    if not scope.engines:
        raise ItemError({"engine": [_("No engine in the catalog runs on this card.")]})
    data = _form_data(item)
    form = ConfigureForm.for_pair(
        data, model=model, accelerator=accelerator, max_context_tokens=limit, engines=scope.engines
    )
    if not form.is_valid():
        errors = {
            ("setup" if name == "__all__" else name): [str(m) for m in messages]
            for name, messages in form.errors.items()
        }
        raise ItemError(errors)
    try:
        results = selectors.configuration_results(
            model=model, accelerator=accelerator, setup=form.setup()
        )
    except RequestError as exc:
        raise ItemError({field_for(exc.field) or "setup": [exc.message]}) from None
    sized = results.sized
    rent = RentBuyForm.for_configuration(
        {},
        price_usd=accelerator.price_usd,
        tdp_w=accelerator.tdp_w,
        gpus=sized.setup.gpus,
        complete_system=accelerator.memory_kind == MemoryKind.UNIFIED,
    )
    answer = selectors.configuration_answer(
        accelerator=accelerator,
        sized=sized,
        cloud=selectors.cheapest_offer(accelerator=accelerator, sized=sized),
        ownership=rent.owner_cost_basis(),
        typed_price=rent.typed_price,
    )
    return {
        "model": row_data(model),
        "accelerator": row_data(accelerator),
        "setup": setup_data(sized.setup, backend=sized.backend),
        **result_to_dict(sized.result),
        "cost": cost_data(answer),
    }
