"""The organization's inventory and what its fleet can run, under /api/v1/o/<org_slug>/:
what the fleet pages do (sizing_site.fleet.views), for scripts.

- Every view is a TenantApiView: a non-member gets 404 whatever the method; reads need a
  viewer, creating and changing a machine an editor, deleting one an admin (else 403).
  Machines are named by their public `code`.
- A machine is written through the pages' MachineForm and services, so a bad field is a
  400 naming it, as on the page. PATCH changes only the fields sent.
- GET fleet/ gives the fleet page's figures (sizing_site.fleet.selectors.fleet_tables)
  with the page's filters as query parameters (ctx, quality, q).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from django.urls import URLPattern, path
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.sizing import candidates
from sizing_site.api import schema
from sizing_site.api.errors import Refused, form_errors, json_object, single_values
from sizing_site.api.openapi import NON_BLANK
from sizing_site.api.pagination import NumberedPages
from sizing_site.explore import selectors as explore
from sizing_site.fleet import selectors, services
from sizing_site.fleet.forms import MACHINE_FIELDS, FleetForm, MachineForm
from sizing_site.fleet.models import (
    MAX_CARDS,
    NAME_MAX,
    NOTES_MAX,
    Interconnect,
    InventoryMachine,
)
from sizing_site.tenancy.role_api import RoleApiView, role_responses

TAGS = ["fleet"]
ALLOWED = frozenset(MACHINE_FIELDS)
# What a POST may leave out besides the blank-able fields: the model's defaults.
DEFAULTS = {"interconnect": str(Interconnect.UNKNOWN)}


# --- input ---------------------------------------------------------------------------


# The money fields (the model's DecimalFields: digits, decimal places), sent as a JSON
# number or as a decimal in a string; the other numbers as JSON numbers, text as strings.
MONEY = {
    "purchase_usd": (12, 2),
    "electricity_usd_per_kwh": (6, 4),
    "internal_usd_per_hour": (10, 4),
}
NUMBERS = frozenset({"card_count", "host_ram_gb", "power_w"})


def _decimal_text(digits: int, places: int) -> str:
    """A decimal from 0 as text, within `digits` digits and `places` decimal places."""
    return rf"^(?=.*\d)0*\d{{0,{digits - places}}}(\.\d{{0,{places}}})?$"


def _most(name: str) -> float:
    """The largest money figure the field's digits hold (9,999,999,999.99 for 12 and 2)."""
    digits, places = MONEY[name]
    return float(f"{'9' * (digits - places)}.{'9' * places}")


def _form_value(data: Mapping[str, Any], name: str) -> str:
    """A JSON field as the form reads it: numbers as text, null blank. A money figure sent
    as a number from 0 to the field's largest is rounded to its decimal places (a JSON
    number is binary: 0.57 arrives as 0.5700000000000001); as text it must be a decimal
    with no more places than the field has."""
    value = data[name]
    if value is None:
        return ""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    if name in MONEY:
        digits, places = MONEY[name]
        if isinstance(value, str) and re.fullmatch(_decimal_text(digits, places), value):
            return value
        if not number:
            raise Refused({name: [_("Expected a number.")]})
        if not 0 <= value <= _most(name):
            message = _("Enter a number from 0 to %(most)s.") % {
                "most": f"{_most(name):.{places}f}"
            }
            raise Refused({name: [message]})
        return f"{value:.{places}f}"
    if name in NUMBERS and not number:
        raise Refused({name: [_("Expected a number.")]})
    if name not in NUMBERS and not isinstance(value, str):
        raise Refused({name: [_("Expected a string.")]})
    return str(value)


def _current(machine: InventoryMachine) -> dict[str, str]:
    """The machine's fields as the form's data (the card by its slug): a PATCH's base."""
    data = {}
    for name in MACHINE_FIELDS:
        value = machine.accelerator.slug if name == "accelerator" else getattr(machine, name)
        data[name] = "" if value is None else str(value)
    return data


def _valid(
    data: dict[str, str], machine: InventoryMachine | None = None, *, organization: Any = None
) -> dict[str, Any]:
    form = MachineForm(data, instance=machine, organization=organization)
    if not form.is_valid():
        # form_errors reads only the errors, which a ModelForm has as a Form does.
        raise Refused(form_errors(form))  # type: ignore[arg-type]
    cleaned: dict[str, Any] = form.cleaned_data
    return cleaned


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


def _money(name: str) -> dict[str, Any]:
    """A DecimalField of the model: a JSON number from 0 to its largest (rounded to its
    decimal places), or a decimal in a string with no more places than it has."""
    digits, places = MONEY[name]
    number = {"type": "number", "minimum": 0, "maximum": _most(name)}
    text = {"type": "string", "pattern": _decimal_text(digits, places)}
    return {"nullable": True, "oneOf": [number, text]}


_INTEGER = {"type": "integer", "nullable": True, "minimum": 0, "maximum": 2_147_483_647}
MACHINE_PROPERTIES: dict[str, Any] = {
    "name": {"type": "string", "maxLength": NAME_MAX, "pattern": NON_BLANK},
    "accelerator": {"type": "string", "description": "A catalog card's slug (or our own)."},
    "card_count": {"type": "integer", "minimum": 1, "maximum": MAX_CARDS},
    "host_ram_gb": _INTEGER,
    "interconnect": {
        "type": "string",
        "enum": list(Interconnect.values),
        "description": "Default: unknown.",
    },
    "purchase_usd": _money("purchase_usd"),
    "purchase_date": {"type": "string", "format": "date", "nullable": True},
    "power_w": {**_INTEGER, "description": "Null: the card's TDP times the cards."},
    "electricity_usd_per_kwh": _money("electricity_usd_per_kwh"),
    "internal_usd_per_hour": _money("internal_usd_per_hour"),
    "notes": {"type": "string", "nullable": True, "maxLength": NOTES_MAX},
}
MACHINE_INPUT: dict[str, Any] = {
    "type": "object",
    "description": "The new-machine page's form (sizing_site.fleet.forms.MachineForm).",
    "properties": MACHINE_PROPERTIES,
    "required": ["name", "accelerator", "card_count"],
    "additionalProperties": False,
}
MACHINE_PATCH: dict[str, Any] = {
    "type": "object",
    "description": "Any of the machine's fields; those not sent keep their values.",
    "properties": MACHINE_PROPERTIES,
    "additionalProperties": False,
}


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
        request={"application/json": MACHINE_INPUT},
        responses=_responses(
            201, MachineOutput, write=True, bad="Bad input or an unknown field, the field named."
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        data = json_object(request.data, ALLOWED)
        values = _valid(
            {**DEFAULTS, **{name: _form_value(data, name) for name in data}},
            organization=self.tenant.organization,
        )
        machine = services.machine_create(tenant=self.tenant, user=request.user, values=values)
        return Response(MachineOutput(machine).data, status=status.HTTP_201_CREATED)


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
        request={"application/json": MACHINE_PATCH},
        responses=_responses(
            200, MachineOutput, write=True, bad="Bad input or an unknown field, the field named."
        ),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, code: UUID) -> Response:
        machine = self.machine(code)
        data = json_object(request.data, ALLOWED)
        sent = {name: _form_value(data, name) for name in data}
        values = _valid(
            {**_current(machine), **sent}, machine, organization=self.tenant.organization
        )
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
    @extend_schema(
        operation_id="fleet_retrieve",
        summary="What the organization's machines can run",
        description="For each machine, the catalog models that fit on all its cards under "
        "the card's default engine: the least compressed quant of the ladder down to "
        "`quality`, max context, max concurrency at `ctx` and decode tok/s per user at that "
        "concurrency (the fleet page's figures).",
        parameters=[
            OpenApiParameter("ctx", schema.CONTEXT, description="Context tokens (default 8192)."),
            OpenApiParameter(
                "quality", str, description="The most compressed GGUF quant accepted."
            ),
            OpenApiParameter(
                "q",
                {"type": "string", "maxLength": 100},
                description="Search model names and families.",
            ),
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
        params = request.query_params
        form = FleetForm(params, ladder=candidates.quant_ladder())
        errors = {} if form.is_valid() else form_errors(form)
        errors.update(single_values(params, ("ctx", "page", "page_size")))
        if errors:
            raise Refused(errors)
        quants, ctx, data = explore.table_filters(form.cleaned_data, ladder=form.ladder)
        # A page of machines at a time, as the fleet page: each new machine shape sizes
        # every catalog model (seconds when the cache is cold).
        pages = FleetPages()
        machines = pages.paginate_queryset(
            selectors.machine_list(tenant=self.tenant), request, view=self
        )
        tables = selectors.fleet_tables(
            machines=list(machines or []), quants=quants, context_tokens=ctx, q=data["q"]
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


ORG = "o/<slug:org_slug>/"

urlpatterns: list[URLPattern] = [
    path(ORG + "inventory/", InventoryListApi.as_view(), name="inventory"),
    path(ORG + "inventory/<uuid:code>/", InventoryDetailApi.as_view(), name="inventory-machine"),
    path(ORG + "fleet/", FleetApi.as_view(), name="fleet"),
]
