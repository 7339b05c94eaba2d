"""The capacity planner in the REST API: POST /api/v1/o/<org_slug>/plans/.

The page's workflow for scripts: the body checked by PlanInput, its typed values handed
to the same form (sizing_site.planner.forms.PlanForm), the same candidates and plan
(selectors.planned) and the same figures (output.planned_data). Members plan, viewers
too; a non-member gets 404. Bad input is a 400 naming the field, an unknown model a 404.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from estimator.api import RequestError
from sizing_site.apikit import schema
from sizing_site.apikit.errors import Refused, form_errors
from sizing_site.apikit.inputs import BodyInput
from sizing_site.apikit.parsers import JsonBodyParser
from sizing_site.planner import selectors
from sizing_site.planner.forms import DEFAULTS, MAX_CONTEXT_TOKENS, PlanForm
from sizing_site.planner.output import planned_data
from sizing_site.planner.whatif import what_if
from sizing_site.tenancy.api import TenantApiView

TAGS = ["planner"]


def _number(**kwargs: Any) -> serializers.FloatField:
    # null leaves the field out (plan_values): its default applies.
    return serializers.FloatField(required=False, allow_null=True, **kwargs)


def _count(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(required=False, allow_null=True, **kwargs)


def _flag(**kwargs: Any) -> serializers.BooleanField:
    return serializers.BooleanField(required=False, allow_null=True, **kwargs)


TOKENS = {"min_value": 1, "max_value": MAX_CONTEXT_TOKENS}


class PlanInput(BodyInput):
    """The planner page's form (sizing_site.planner.forms.PlanForm) with its bounds; fields
    left out (or null) take the page's defaults. Give `users` or `requests_per_minute`,
    one of them (plan_bodies)."""

    model = serializers.CharField(max_length=200, help_text="A catalog model's slug.")
    users = _count(min_value=1, max_value=1_000_000, help_text="Concurrent users (closed loop).")
    requests_per_minute = _number(
        min_value=0.001, max_value=1e6, help_text="Or requests a minute (open loop)."
    )
    think_s = _number(
        min_value=0,
        max_value=86_400,
        help_text=f"Seconds between a user's requests. Default {DEFAULTS['think_s']}.",
    )
    prompt_tokens = _count(**TOKENS)
    output_tokens = _count(**TOKENS)
    context_tokens = _count(**TOKENS, help_text="At most the model's own context.")
    ttft_p95_s = _number(min_value=0.001, max_value=3600, help_text="TTFT p95 in seconds.")
    long_prompt_tokens = _count(**TOKENS, help_text="The long case's prompt.")
    long_output_tokens = _count(**TOKENS, help_text="Its output (null: typical).")
    long_share_percent = _number(
        min_value=0,
        max_value=100,
        help_text="Share of requests that are long, 0-100 (null: 10 with a long prompt).",
    )
    tokens_per_s_per_user = _number(min_value=0.1, max_value=10_000)
    tpot_p95_ms = _number(
        min_value=0.1,
        max_value=10_000,
        help_text="Time per output token p95 in ms (null: none); held with the tokens/s.",
    )
    prompt_cache_percent = _number(
        min_value=0,
        max_value=95,
        help_text="Share of every prompt served from the engine's prefix cache, 0-95 "
        "(default 0): left out of prefill and TTFT, still held in the KV pool.",
    )
    n_plus_one = _flag(help_text="One spare replica.")
    peak_factor = _number(
        min_value=1,
        max_value=10,
        help_text="The busiest hour's load over the typical one (default 1).",
    )
    conservative = _flag(
        help_text="Plan at the low end of the estimator's speed ranges (low speeds, high TTFTs)."
    )
    allow_consumer_cards = _flag(
        help_text="Plan with consumer cards (GeForce, Radeon RX) too; they are not for "
        "datacenter use and left out by default."
    )
    horizon_months = _count(min_value=1, max_value=120)
    utilisation_percent = _count(min_value=1, max_value=100)


def plan_bodies(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """A postprocessing hook (SPECTACULAR_SETTINGS): a plan's body (PlanInput and what
    extends it, the saved plans') says what PlanForm.clean requires besides each field's
    bounds: the users or the requests a minute, exactly one of them not null; a long case's
    output or share only with its prompt. (That the prompt and the output fit the context,
    and the context the model, no schema can state: a 400 naming the field.) A saved plan's
    notes are read as OptionalText reads them: null is blank."""
    load = [
        {"required": [name], "properties": {name: {"type": kind}}}
        for name, kind in (("users", "integer"), ("requests_per_minute", "number"))
    ]
    long_case = [
        {
            "required": ["long_prompt_tokens"],
            "properties": {"long_prompt_tokens": {"type": "integer"}},
        },
        {
            "properties": {
                "long_output_tokens": {"not": {"type": "integer"}},
                "long_share_percent": {"not": {"type": "number"}},
            }
        },
    ]
    for name, component in result.get("components", {}).get("schemas", {}).items():
        properties = component.get("properties", {})
        if name.endswith("Request") and {"users", "requests_per_minute"} <= set(properties):
            component["oneOf"] = load
            component["anyOf"] = long_case
        if name.startswith(("SavedPlan", "PatchedSavedPlan")) and "notes" in properties:
            properties["notes"] = {**properties["notes"], "nullable": True}
    return result


class SourceOutput(serializers.Serializer[Any]):
    kind = serializers.CharField(
        help_text="buy (a catalog price), cloud (an offer) or inventory (the organization's "
        "own machine)."
    )
    accelerator = serializers.CharField(help_text="The catalog card's slug.")
    accelerator_name = serializers.CharField()
    provider = serializers.CharField()
    sku = serializers.CharField()
    region = serializers.CharField()
    negotiated = serializers.BooleanField(help_text="The organization's own feed price.")
    machine = serializers.UUIDField(
        allow_null=True, help_text="The inventory machine's code (kind inventory)."
    )
    internal_rate = serializers.BooleanField(
        help_text="An inventory machine priced at its internal hourly rate (as rent)."
    )


class HardwareOutput(serializers.Serializer[Any]):
    """What one replica runs on (sizing_site.planner.output.hardware_per_replica)."""

    cards = serializers.IntegerField()
    machine = serializers.CharField(
        help_text="host (cards in a server of their own), server (modules of an HGX / OAM "
        "server), system (a whole computer a device), instance (a cloud instance) or "
        "machine (the organization's own)."
    )
    cards_per_machine = serializers.IntegerField(allow_null=True)
    machines = serializers.IntegerField(allow_null=True, help_text="For the whole plan.")


class PlanOutput(serializers.Serializer[Any]):
    """estimator.capacity.Plan (docs/capacity.md), and where its cards come from."""

    label = serializers.CharField()  # type: ignore[assignment]
    engine = serializers.CharField()
    quant = serializers.CharField()
    tensor_parallel = serializers.IntegerField()
    replicas = serializers.IntegerField(help_text="Serving plus spare.")
    spare_replicas = serializers.IntegerField()
    cards = serializers.IntegerField()
    slots_per_replica = serializers.IntegerField()
    arrival_rate_per_s = serializers.FloatField()
    service_time_s = serializers.FloatField()
    utilisation = serializers.FloatField()
    wait_probability = serializers.FloatField()
    ttft_p50_s = serializers.FloatField()
    ttft_p95_s = serializers.FloatField()
    long_ttft_p50_s = serializers.FloatField(
        allow_null=True, help_text="The long case's TTFT p50 (null without one)."
    )
    long_ttft_p95_s = serializers.FloatField(
        allow_null=True, help_text="The long case's TTFT p95 (null without one)."
    )
    tokens_per_s_per_user = serializers.FloatField()
    mean_tokens_per_s_per_user = serializers.FloatField()
    prefill_busy_share = serializers.FloatField()
    monthly_rent_usd = serializers.FloatField(allow_null=True)
    monthly_owned_usd = serializers.FloatField(allow_null=True)
    break_even_months = serializers.FloatField(allow_null=True)
    monthly_usd = serializers.FloatField(allow_null=True)
    tpot_p95_ms = serializers.FloatField(
        help_text="1000 / tokens_per_s_per_user: the time per output token with every slot "
        "busy, a bound on its p95."
    )
    purchase_usd = serializers.FloatField(
        allow_null=True,
        help_text="Buying the plan's hardware, hosts or servers included (null: rented or "
        "already owned).",
    )
    hosts = serializers.IntegerField(
        allow_null=True, help_text="The machines the bought hardware goes in (null: not bought)."
    )
    hardware_per_replica = HardwareOutput()
    source = SourceOutput(allow_null=True)  # type: ignore[assignment]


class LeftOutOutput(serializers.Serializer[Any]):
    label = serializers.CharField()  # type: ignore[assignment]
    engine = serializers.CharField()
    quant = serializers.CharField()
    tensor_parallel = serializers.IntegerField()
    reason = serializers.CharField(
        help_text="limit (past the bound on candidates: the dearest cards go first) or "
        "refused (the estimator cannot size it: message)."
    )
    message = serializers.CharField()


class TotalsOutput(serializers.Serializer[Any]):
    """The cheapest plan's hardware and what it costs, in one place."""

    cards = serializers.IntegerField()
    replicas = serializers.IntegerField()
    machines = serializers.IntegerField(allow_null=True)
    purchase_usd = serializers.FloatField(allow_null=True)
    monthly_rent_usd = serializers.FloatField(allow_null=True)
    monthly_usd = serializers.FloatField(allow_null=True)


class FixOutput(serializers.Serializer[Any]):
    field = serializers.CharField()
    value = serializers.FloatField()


class MissOutput(serializers.Serializer[Any]):
    """Why the nearest candidate misses (`field`: fit, replicas or the input field at
    fault) and `fixes`, each of which alone would make it feasible."""

    label = serializers.CharField()  # type: ignore[assignment]
    engine = serializers.CharField()
    quant = serializers.CharField()
    tensor_parallel = serializers.IntegerField()
    field = serializers.CharField()
    required = serializers.FloatField(allow_null=True)  # type: ignore[assignment]
    achievable = serializers.FloatField(allow_null=True)
    shortfall = serializers.FloatField(allow_null=True)
    fixes = FixOutput(many=True)
    source = SourceOutput(allow_null=True)  # type: ignore[assignment]


class InventoryAnswer(serializers.Serializer[Any]):
    """The organization's machines planned alone (purchase sunk: power only, or the
    internal rate), each at most its cards."""

    feasible = serializers.BooleanField()
    plans = PlanOutput(many=True, help_text="Cheapest first.")
    nearest_miss = MissOutput(allow_null=True)
    misses = MissOutput(many=True)


class WhatIfCase(serializers.Serializer[Any]):
    case = serializers.CharField(help_text="load_2x, load_0.5x, quant_down or quant_up.")
    title = serializers.CharField()
    amount = serializers.FloatField(help_text="The load planned: users or requests a minute.")
    quant = serializers.CharField()
    feasible = serializers.BooleanField()
    plan = PlanOutput(allow_null=True)
    miss = MissOutput(allow_null=True)
    refused = serializers.CharField(help_text="Why the estimator could not size this quant.")


class WhatIfPoint(serializers.Serializer[Any]):
    amount = serializers.FloatField()
    monthly_usd = serializers.FloatField(allow_null=True)


class WhatIfAnswer(serializers.Serializer[Any]):
    """The cheapest plan's candidate (same cards, engine, TP) at 2x and 0.5x the load and
    with the next quant down and up; the chart's points (monthly cost against the load) and
    the SLO boundary: the most of the load the chosen plan's cards serve within the SLO."""

    label = serializers.CharField()  # type: ignore[assignment]
    engine = serializers.CharField()
    quant = serializers.CharField()
    tensor_parallel = serializers.IntegerField()
    cards = serializers.IntegerField()
    axis = serializers.CharField(help_text="users or requests_per_minute.")
    amount = serializers.FloatField()
    boundary = serializers.IntegerField()
    cases = WhatIfCase(many=True)
    points = WhatIfPoint(many=True)


class PlanAnswer(serializers.Serializer[Any]):
    model = serializers.CharField()
    feasible = serializers.BooleanField(help_text="False: no plan meets this (nearest_miss).")
    candidates_considered = serializers.IntegerField()
    candidates_left_out = serializers.IntegerField(help_text="Past the bound on candidates.")
    left_out = LeftOutOutput(
        many=True, help_text="The candidates not planned and why (at most 100 listed)."
    )
    totals = TotalsOutput(allow_null=True, help_text="The cheapest plan's; null without one.")
    plans = PlanOutput(many=True, help_text="Cheapest first.")
    cheapest = PlanOutput(allow_null=True)
    fastest = PlanOutput(allow_null=True)
    most_headroom = PlanOutput(allow_null=True)
    nearest_miss = MissOutput(allow_null=True)
    misses = MissOutput(many=True)
    inventory = InventoryAnswer(
        allow_null=True, help_text="The organization's machines alone; null without any."
    )
    what_if = WhatIfAnswer(allow_null=True, help_text="The cheapest plan's what-ifs.")


class PlanRefusal(serializers.Serializer[Any]):
    """The API's one error shape; for a service level no candidate meets even without load
    (an impossible SLO), also the no-plan answer with its nearest miss."""

    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        help_text="The field named, its messages.",
    )
    nearest_miss = PlanAnswer(
        required=False,
        help_text="Only for an impossible service level: the answer without a plan, with "
        "the nearest miss and what would make it feasible.",
    )


def plan_values(body: Any, serializer: type[PlanInput] = PlanInput) -> dict[str, Any]:
    """The body checked by `serializer` (PlanInput or one that extends it), its typed
    values with the nulls left out: PlanForm gives those its defaults."""
    plan = serializer(data=body)
    plan.is_valid(raise_exception=True)
    return {name: value for name, value in plan.validated_data.items() if value is not None}


class PlanApi(TenantApiView):
    parser_classes = [JsonBodyParser]

    @extend_schema(
        operation_id="plans_create",
        summary="Plan the cheapest fleet for a load and a service level",
        description="The capacity planner page's answer (docs/capacity.md): ranked plans "
        "over the organization's inventory machines, the cards to buy and the cloud offers "
        "the organization sees (negotiated prices included), or no plan with the nearest "
        "miss and what would make it feasible. Nothing is saved.",
        request=PlanInput,
        examples=[
            OpenApiExample(
                "The issue's worked example",
                summary="200 users, TTFT p95 <= 1.5 s, >= 30 tok/s each, N+1",
                value={
                    "model": "qwen3-32b",
                    "users": 200,
                    "think_s": 30,
                    "prompt_tokens": 1000,
                    "output_tokens": 400,
                    "context_tokens": 8192,
                    "ttft_p95_s": 1.5,
                    "tokens_per_s_per_user": 30,
                    "n_plus_one": True,
                },
                request_only=True,
            )
        ],
        responses={
            200: PlanAnswer,
            400: OpenApiResponse(
                response=PlanRefusal,
                description="Bad input, the field named (zero users, an SLO out of range, a "
                "context the model does not take, a model that fits on no candidate). A "
                "service level no candidate meets even without load (a TTFT p95 below every "
                "no-load TTFT, a speed above every single-user speed) names ttft_p95_s or "
                "tokens_per_s_per_user with the best achievable value, and adds the no-plan "
                "answer under nearest_miss. A service level that more cards would meet is a "
                "200 with feasible false.",
                examples=[
                    OpenApiExample(
                        "Zero users",
                        value={
                            "errors": {
                                "users": ["Ensure this value is greater than or equal to 1."]
                            }
                        },
                        response_only=True,
                    ),
                    OpenApiExample(
                        "An impossible TTFT",
                        value={
                            "errors": {
                                "ttft_p95_s": [
                                    "No candidate answers that fast even without load: the "
                                    "best time to first token is 0.0946 s."
                                ]
                            },
                            "nearest_miss": {"feasible": False, "plans": [], "...": "..."},
                        },
                        response_only=True,
                    ),
                ],
            ),
            401: schema.BAD_TOKEN,
            403: schema.NOT_LOGGED_IN,
            404: OpenApiResponse(
                response=schema.ERRORS,
                description="Not a member of this organization, or no model with this slug "
                "(under model).",
            ),
        },
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        values = plan_values(request.data)
        form = PlanForm.from_data(values, organizations=[self.tenant.organization])
        if not form.is_valid():
            if form.has_error("model", code="unknown"):
                raise Refused({"model": [_("No model with this slug.")]}, status.HTTP_404_NOT_FOUND)
            raise Refused(form_errors(form))
        try:
            planned = form.plan(tenant=self.tenant)
        except RequestError as exc:
            name = selectors.form_field(exc.field)
            raise Refused({name if name in form.fields else "detail": [exc.message]}) from None
        impossible = selectors.impossible_service(planned)
        answer = planned_data(
            planned,
            model_slug=form.cleaned_data["model"],
            what_if=None if impossible else what_if(planned),
        )
        if impossible:
            errors = {name: [message] for name, message in impossible.items()}
            return Response(
                {"errors": errors, "nearest_miss": answer}, status=status.HTTP_400_BAD_REQUEST
            )
        return Response(answer)
