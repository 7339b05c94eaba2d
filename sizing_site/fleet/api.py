"""The organization's inventory and what its fleet can run, under /api/v1/o/<org_slug>/:
what the fleet pages do (sizing_site.fleet.views), for scripts.

- Every view is a TenantApiView: a non-member gets 404 whatever the method; reads need a
  viewer, creating and changing a machine an editor, deleting one an admin (else 403).
  Machines are named by their public `code`.
- A machine's fields are those of the pages' MachineForm, checked by the view's
  InputSerializer (a bad field is a 400 naming it) and written by the pages' services.
  PATCH changes only the fields sent.
- GET fleet/ gives the fleet page's figures (sizing_site.fleet.selectors.fleet_tables)
  with the page's filters as query parameters (ctx, quality, q).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import Accelerator
from catalog.sizing import candidates
from catalog.sizing.candidates import DEFAULT_CONTEXT_TOKENS
from sizing_site.apikit import schema
from sizing_site.apikit.inputs import (
    BodyInput,
    Choice,
    OptionalText,
    QueryInput,
    SlugRow,
    not_a_choice,
)
from sizing_site.apikit.pagination import NumberedPages
from sizing_site.explore.forms import MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS
from sizing_site.fleet import selectors, services
from sizing_site.fleet.models import (
    MAX_CARDS,
    NAME_MAX,
    NOTES_MAX,
    Interconnect,
    InventoryMachine,
)
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.role_api import RoleApiView, role_responses

TAGS = ["fleet"]


# --- input ---------------------------------------------------------------------------


def _decimal_text(digits: int, places: int) -> str:
    """A decimal from 0 as text, within `digits` digits and `places` decimal places."""
    return rf"^(?=.*\d)0*\d{{0,{digits - places}}}(\.\d{{0,{places}}})?$"


class Money(serializers.Field[Decimal | None, Any, Any, Any]):
    """A money figure of the machine (a DecimalField of the model, by its name), optional,
    null for blank: a JSON number from 0 to the largest its digits hold (9,999,999,999.99
    for 12 digits and 2 places) rounded to its decimal places (a JSON number is binary:
    0.57 arrives as 0.5700000000000001), or a decimal in a string with no more places
    than it has."""

    default_error_messages = {"invalid": _("Expected a number.")}

    def __init__(self, name: str, **kwargs: Any) -> None:
        column: Any = InventoryMachine._meta.get_field(name)
        self.places: int = column.decimal_places
        self.text = _decimal_text(column.max_digits, self.places)
        whole = column.max_digits - self.places
        self.most = Decimal(f"{'9' * whole}.{'9' * self.places}")
        super().__init__(required=False, allow_null=True, **kwargs)

    def to_internal_value(self, data: Any) -> Decimal:
        if isinstance(data, str) and re.fullmatch(self.text, data):
            return Decimal(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if not 0 <= data <= self.most:
            message = _("Enter a number from 0 to %(most)s.") % {"most": self.most}
            raise serializers.ValidationError(message)
        return Decimal(f"{data:.{self.places}f}")

    def to_representation(self, value: Any) -> Any:
        return value

    def schema(self) -> dict[str, Any]:
        number = {"type": "number", "minimum": 0, "maximum": float(self.most)}
        return {"oneOf": [number, {"type": "string", "pattern": self.text}]}


class MoneySchema(OpenApiSerializerFieldExtension):
    """Money's schema: a number in its range or a decimal in a string (drf-spectacular
    adds `nullable` and the help text)."""

    target_class = Money

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        field: Money = self.target
        return field.schema()


class MachineCard(SlugRow):
    """A card by its slug, among those a machine of the organization (the serializer's
    context["organization"]) may have: no organization, no card."""

    def __init__(self, **kwargs: Any) -> None:
        # The queryset is the schema's (a slug of Accelerator); get_queryset the rows.
        super().__init__(queryset=Accelerator.objects.none(), **kwargs)

    def get_queryset(self) -> Any:
        return selectors.machine_card_list(organization=self.context["organization"])


_INT_MAX = 2_147_483_647  # the database's positive integer


# --- output --------------------------------------------------------------------------


class MachineOutput(serializers.Serializer[Any]):
    code = serializers.UUIDField()
    name = serializers.CharField()
    accelerator = serializers.CharField(source="accelerator.slug", help_text="A catalog slug.")
    accelerator_name = serializers.CharField(source="accelerator.name")
    card_count = serializers.IntegerField()
    host_ram_gb = serializers.IntegerField(allow_null=True)
    interconnect = serializers.CharField(help_text="pcie, nvlink, infinity_fabric or unknown.")
    purchase_usd = serializers.FloatField(allow_null=True)
    purchase_date = serializers.DateField(allow_null=True)
    power_w = serializers.IntegerField(allow_null=True, help_text="As entered (null: blank).")
    effective_power_w = serializers.FloatField(
        allow_null=True, help_text="As entered, else the card's TDP times the cards."
    )
    electricity_usd_per_kwh = serializers.FloatField(allow_null=True)
    internal_usd_per_hour = serializers.FloatField(allow_null=True)
    notes = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()


class MachineListOutput(serializers.Serializer[Any]):
    organization = serializers.CharField(help_text="The organization's slug.")
    machines = MachineOutput(many=True)


class RangeOutput(serializers.Serializer[Any]):
    estimate = serializers.FloatField()
    low = serializers.FloatField()
    high = serializers.FloatField()


class FleetModelOutput(serializers.Serializer[Any]):
    model = serializers.CharField(source="model.slug", help_text="A catalog model's slug.")
    model_name = serializers.CharField(source="model.name")
    quant = serializers.CharField(source="fit.quant", help_text="The least compressed that fits.")
    engine = serializers.CharField(source="fit.engine")
    backend = serializers.CharField(source="fit.backend")
    gpus = serializers.IntegerField(source="fit.gpus", help_text="The machine's card count.")
    verdict = serializers.CharField(source="fit.verdict", help_text="comfortable or tight.")
    max_context_tokens = serializers.IntegerField(source="fit.max_context_tokens")
    max_concurrent_sequences = serializers.IntegerField(
        source="fit.max_concurrent_sequences",
        help_text="Sequences of the requested context at once (at most 4096).",
    )
    decode_tokens_per_s = RangeOutput(
        source="fit.decode_tokens_per_s",
        allow_null=True,
        help_text="Decode tok/s per user at max_concurrent_sequences.",
    )
    aggregate_decode_tokens_per_s = serializers.FloatField(
        source="fit.aggregate_decode_tokens_per_s", allow_null=True
    )
    speed_calibrated = serializers.BooleanField(source="fit.calibrated")


class FleetMachineOutput(serializers.Serializer[Any]):
    code = serializers.UUIDField(source="machine.code")
    name = serializers.CharField(source="machine.name")
    accelerator = serializers.CharField(source="machine.accelerator.slug")
    card_count = serializers.IntegerField(source="machine.card_count")
    engine = serializers.CharField(help_text="The card's default engine; empty when none.")
    backend = serializers.CharField()
    candidates = serializers.IntegerField(help_text="Models sized (the search applied).")
    fitting = serializers.SerializerMethodField()
    models = FleetModelOutput(source="rows", many=True)

    def get_fitting(self, table: selectors.MachineTable) -> int:
        return len(table.rows)


class FleetOutput(serializers.Serializer[Any]):
    organization = serializers.CharField()
    context_tokens = serializers.IntegerField()
    quants = serializers.ListField(child=serializers.CharField())
    count = serializers.IntegerField(help_text="The organization's machines, all pages.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    machines = FleetMachineOutput(many=True)


# --- views ---------------------------------------------------------------------------


_responses = role_responses


class FleetApiView(RoleApiView):
    """Reads for viewers; writes need an editor, DELETE an admin: 403 otherwise. The
    tenant is resolved first, so a non-member gets 404 whatever the method."""


class InventoryListApi(FleetApiView):
    class InputSerializer(BodyInput):
        """The new-machine page's form (sizing_site.fleet.forms.MachineForm); a PATCH sends
        any of its fields, and those not sent keep their values."""

        name = serializers.CharField(max_length=NAME_MAX)
        accelerator = MachineCard(help_text="A catalog card's slug (or our own).")
        card_count = serializers.IntegerField(min_value=1, max_value=MAX_CARDS)
        host_ram_gb = serializers.IntegerField(
            required=False, allow_null=True, min_value=0, max_value=_INT_MAX
        )
        interconnect = Choice(
            choices=Interconnect.choices, required=False, help_text="Default: unknown."
        )
        purchase_usd = Money("purchase_usd")
        purchase_date = serializers.DateField(
            required=False, allow_null=True, error_messages={"invalid": _("Enter a valid date.")}
        )
        power_w = serializers.IntegerField(
            required=False,
            allow_null=True,
            min_value=0,
            max_value=_INT_MAX,
            help_text="Null: the card's TDP times the cards.",
        )
        electricity_usd_per_kwh = Money("electricity_usd_per_kwh")
        internal_usd_per_hour = Money("internal_usd_per_hour")
        notes = OptionalText(max_length=NOTES_MAX)

        class Meta:
            ref_name = "MachineInput"

    @extend_schema(
        operation_id="inventory_list",
        summary="The organization's machines",
        responses=_responses(200, MachineListOutput),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        rows = MachineOutput(selectors.machine_list(tenant=self.tenant), many=True).data
        return Response({"organization": self.tenant.organization.slug, "machines": rows})

    @extend_schema(
        operation_id="inventory_create",
        summary="Add a machine (editors)",
        request=InputSerializer,
        responses=_responses(
            201, MachineOutput, write=True, bad="Bad input or an unknown field, the field named."
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        machine = services.machine_create(
            tenant=self.tenant, user=request.user, values=_machine(request, self.tenant)
        )
        return Response(MachineOutput(machine).data, status=status.HTTP_201_CREATED)


def _machine(request: Request, tenant: Tenant, *, partial: bool = False) -> dict[str, Any]:
    """A machine's fields from the body (InventoryListApi.InputSerializer; a PATCH's any
    of them), typed and checked, its card among the organization's."""
    context = {"organization": tenant.organization}
    machine = InventoryListApi.InputSerializer(data=request.data, partial=partial, context=context)
    machine.is_valid(raise_exception=True)
    values: dict[str, Any] = machine.validated_data
    return values


class InventoryDetailApi(FleetApiView):
    def machine(self, code: UUID) -> InventoryMachine:
        return selectors.machine_get(tenant=self.tenant, code=code)

    @extend_schema(
        operation_id="inventory_retrieve",
        summary="One machine, by its code",
        responses=_responses(200, MachineOutput),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        return Response(MachineOutput(self.machine(code)).data)

    @extend_schema(
        operation_id="inventory_partial_update",
        summary="Change a machine's fields (editors)",
        request=InventoryListApi.InputSerializer,
        responses=_responses(
            200, MachineOutput, write=True, bad="Bad input or an unknown field, the field named."
        ),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, code: UUID) -> Response:
        machine = self.machine(code)
        values = _machine(request, self.tenant, partial=True)
        machine = services.machine_update(
            tenant=self.tenant, user=request.user, machine=machine, values=values
        )
        return Response(MachineOutput(machine).data)

    @extend_schema(
        operation_id="inventory_destroy",
        summary="Delete a machine (admins)",
        request=None,
        responses=_responses(204, "Deleted; its history keeps who did it.", write=True),
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, code: UUID) -> Response:
        services.machine_delete(tenant=self.tenant, user=request.user, machine=self.machine(code))
        return Response(status=status.HTTP_204_NO_CONTENT)


class FleetApi(FleetApiView):
    class InputSerializer(QueryInput):
        """The fleet page's filters (FleetForm, the card page's): each may be left out for
        its default; the quality floor is one of the catalog's GGUF ladder
        (context["ladder"]), whose quants down to it the answer sizes."""

        once = ("ctx", "page", "page_size")

        ctx = serializers.IntegerField(
            min_value=MIN_CONTEXT_TOKENS,
            max_value=MAX_CONTEXT_TOKENS,
            default=DEFAULT_CONTEXT_TOKENS,
            error_messages={"invalid": _("Enter a whole number.")},
            help_text="Context tokens.",
        )
        quality = serializers.CharField(
            required=False, allow_blank=True, help_text="The most compressed GGUF quant accepted."
        )
        q = serializers.CharField(
            required=False,
            allow_blank=True,
            default="",
            max_length=100,
            help_text="Search model names and families.",
        )

        def validate_quality(self, value: str) -> str:
            names = [rung.name for rung in self.context["ladder"]]
            if value and value not in names:
                raise not_a_choice(value, names)
            return value

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            ladder = self.context["ladder"]
            floor = attrs.get("quality") or candidates.default_floor(ladder)
            return {**attrs, "quants": candidates.ladder_down_to(ladder, floor)}

    @extend_schema(
        operation_id="fleet_retrieve",
        summary="What the organization's machines can run",
        description="For each machine, the catalog models that fit on all its cards under "
        "the card's default engine: the least compressed quant of the ladder down to "
        "`quality`, max context, max concurrency at `ctx` and decode tok/s per user at that "
        "concurrency (the fleet page's figures).",
        parameters=[
            InputSerializer,
            OpenApiParameter("page", int, description="Page of machines, from 1."),
            OpenApiParameter("page_size", int, description="Machines a page (5, at most 20)."),
        ],
        responses={
            **_responses(200, FleetOutput, bad="A bad filter or page, the parameter named."),
            404: schema.errors("Not a member, or a page past the last."),
        },
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        context = {"ladder": candidates.quant_ladder()}
        filters = self.InputSerializer(data=request.query_params, context=context)
        filters.is_valid(raise_exception=True)
        quants, ctx, q = (filters.validated_data[k] for k in ("quants", "ctx", "q"))
        # A page of machines at a time, as the fleet page: each new machine shape sizes
        # every catalog model (seconds when the cache is cold).
        pages = FleetPages()
        machines = pages.paginate_queryset(
            selectors.machine_list(tenant=self.tenant), request, view=self
        )
        tables = selectors.fleet_tables(
            machines=list(machines or []), quants=quants, context_tokens=ctx, q=q
        )
        body = {
            "organization": self.tenant.organization.slug,
            "context_tokens": ctx,
            "quants": quants,
            "count": pages.page.paginator.count if pages.page else 0,
            "next": pages.get_next_link(),
            "previous": pages.get_previous_link(),
            "machines": FleetMachineOutput(tables, many=True).data,
        }
        return Response(body)


class FleetPages(NumberedPages):
    page_size = selectors.MACHINES_PER_PAGE
    max_page_size = 20
