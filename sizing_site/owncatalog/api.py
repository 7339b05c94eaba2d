"""An organisation's own catalog entries under /api/v1/o/<org_slug>/: what the
own-catalog pages do (sizing_site.owncatalog.views), for scripts.

- models/: GET the organisation's own models (paged), POST import one from a config.json
  (`config` as a JSON object, or `config_text`); models/<slug>/: GET, PATCH name and
  notes, DELETE.
- accelerators/: GET (paged), POST one with its specs; accelerators/<slug>/: GET, PATCH
  (only the fields sent), DELETE (409 while inventory machines use it).
- Every view is a TenantApiView: a non-member gets 404 whatever the method; reads need a
  viewer, writes an editor, DELETE an admin (else 403). Bad input is a 400 naming the
  field, through the pages' forms and services.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.urls import URLPattern, path
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import Accelerator, LLMModel, MemoryKind
from catalog.services.common import CatalogError
from catalog.services.configs import config_parse_text
from sizing_site.api import schema
from sizing_site.api.errors import Refused, form_errors, json_object, text
from sizing_site.api.openapi import NON_BLANK
from sizing_site.api.pagination import NumberedPages
from sizing_site.owncatalog import selectors, services
from sizing_site.owncatalog.forms import OwnAcceleratorForm, OwnModelEditForm
from sizing_site.tenancy.role_api import RoleApiView, role_responses

TAGS = ["own catalog"]
MODEL_ALLOWED = frozenset({"name", "config", "config_text", "hf_repo", "notes"})
MODEL_PATCH_ALLOWED = frozenset(services.MODEL_EDIT_FIELDS)
ACCELERATOR_ALLOWED = frozenset(services.ACCELERATOR_FIELDS)
ACCELERATOR_DEFAULTS = {"memory_kind": "discrete"}


# --- output --------------------------------------------------------------------------


class WeightsOutput(serializers.Serializer[Any]):
    format = serializers.CharField(help_text="gguf or hf.")
    quant = serializers.CharField()
    file_bytes = serializers.IntegerField(allow_null=True)


class OwnModelOutput(serializers.Serializer[Any]):
    slug = serializers.CharField()
    name = serializers.CharField()
    hf_repo = serializers.CharField()
    notes = serializers.CharField()
    model_type = serializers.CharField()
    architecture = serializers.CharField(help_text="dense, moe, mla, hybrid or empty.")
    params_total = serializers.IntegerField(allow_null=True, help_text="Counted from config.")
    params_active = serializers.IntegerField(allow_null=True)
    max_context_tokens = serializers.IntegerField(allow_null=True)
    weights = WeightsOutput(many=True)
    sources = serializers.DictField(child=serializers.CharField())
    updated = serializers.DateTimeField()


class OwnModelInput(serializers.Serializer[Any]):
    """The new-model page's form, with config.json given as JSON or as text."""

    name = serializers.CharField(max_length=120)
    config = serializers.DictField(
        required=False, help_text="config.json as a JSON object (or send config_text)."
    )
    config_text = serializers.CharField(
        required=False, help_text="config.json as text, at most 1 MB (or send config)."
    )
    hf_repo = serializers.CharField(
        required=False, max_length=200, help_text="The repo it is, or is fine-tuned from."
    )
    notes = serializers.CharField(required=False, allow_blank=True)


# OwnModelInput as the view reads it: exactly one of config and config_text; text fields
# sent as null read as blank (errors.text).
OWN_MODEL_INPUT: dict[str, Any] = {
    "type": "object",
    "description": OwnModelInput.__doc__,
    "properties": {
        "name": {"type": "string", "maxLength": 120, "pattern": NON_BLANK},
        "config": {"type": "object", "description": "config.json as a JSON object."},
        "config_text": {
            "type": "string",
            "minLength": 1,
            "description": "config.json as text, at most 1 MB.",
        },
        "hf_repo": {
            "type": "string",
            "nullable": True,
            "maxLength": 200,
            "description": "The repo it is, or is fine-tuned from.",
        },
        "notes": {"type": "string", "nullable": True},
    },
    "required": ["name"],
    "oneOf": [{"required": ["config"]}, {"required": ["config_text"]}],
    "additionalProperties": False,
}


class OwnModelPatch(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=120, required=False)
    notes = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class OwnModelPage(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = OwnModelOutput(many=True)


class OwnAcceleratorOutput(serializers.Serializer[Any]):
    slug = serializers.CharField()
    vendor = serializers.CharField()
    name = serializers.CharField()
    memory_gb = serializers.FloatField(allow_null=True)
    memory_gib = serializers.FloatField(allow_null=True)
    memory_kind = serializers.CharField(help_text="discrete or unified.")
    bandwidth_gbps = serializers.FloatField(allow_null=True)
    fp16_tflops = serializers.FloatField(allow_null=True)
    fp8_tflops = serializers.FloatField(allow_null=True)
    fp4_tflops = serializers.FloatField(allow_null=True)
    tdp_w = serializers.IntegerField(allow_null=True)
    interconnect = serializers.CharField()
    interconnect_gbps = serializers.FloatField(allow_null=True)
    price_usd = serializers.FloatField(allow_null=True)
    notes = serializers.CharField()
    sources = serializers.DictField(child=serializers.CharField())
    updated = serializers.DateTimeField()


class OwnAcceleratorInput(serializers.Serializer[Any]):
    """The new-accelerator page's form (OwnAcceleratorForm)."""

    vendor = serializers.CharField(max_length=60)
    name = serializers.CharField(max_length=120)
    memory_gb = serializers.FloatField(min_value=0, max_value=16_384)
    memory_gib = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=16_384
    )
    memory_kind = serializers.ChoiceField(
        choices=MemoryKind.choices, required=False, help_text="discrete (default) or unified."
    )
    bandwidth_gbps = serializers.FloatField(min_value=0, max_value=20_000)
    fp16_tflops = serializers.FloatField(min_value=0, max_value=100_000)
    fp8_tflops = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=100_000
    )
    fp4_tflops = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=100_000
    )
    tdp_w = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=100_000
    )
    interconnect = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=200
    )
    interconnect_gbps = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=100_000
    )
    price_usd = serializers.FloatField(
        required=False, allow_null=True, min_value=0, max_value=100_000_000
    )
    notes = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class OwnAcceleratorPatch(OwnAcceleratorInput):
    """Any of the accelerator's fields; those not sent keep their values."""

    vendor = serializers.CharField(max_length=60, required=False)
    name = serializers.CharField(max_length=120, required=False)
    memory_gb = serializers.FloatField(min_value=0, max_value=16_384, required=False)
    bandwidth_gbps = serializers.FloatField(min_value=0, max_value=20_000, required=False)
    fp16_tflops = serializers.FloatField(min_value=0, max_value=100_000, required=False)


class OwnAcceleratorPage(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = OwnAcceleratorOutput(many=True)


# --- input ---------------------------------------------------------------------------


# The accelerator's text fields; the others are numbers, sent as JSON numbers.
ACCELERATOR_TEXT = frozenset({"vendor", "name", "memory_kind", "interconnect", "notes"})


def _form_value(data: Mapping[str, Any], name: str) -> str:
    """A JSON field as the form reads it: numbers as text, null blank."""
    value = data[name]
    if value is None:
        return ""
    if name in ACCELERATOR_TEXT:
        if not isinstance(value, str):
            raise Refused({name: [_("Expected a string.")]})
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise Refused({name: [_("Expected a number.")]})
    return str(value)


def _refuse(exc: ValidationError | CatalogError, field: str = "detail") -> Refused:
    if isinstance(exc, CatalogError):
        return Refused({field: [exc.message]})
    errors = services.validation_errors(exc)
    return Refused({("detail" if k == "__all__" else k): v for k, v in errors.items()})


def _config(data: Mapping[str, Any]) -> dict[str, Any]:
    """The body's config.json: `config` (an object) or `config_text` (text), one of them
    (one sent as null or "" is sent, and refused as no config.json)."""
    given = [k for k in ("config", "config_text") if k in data]
    if len(given) != 1:
        message = _("Send config.json as config (an object) or config_text, one of them.")
        raise Refused({"config": [message]})
    try:
        if given[0] == "config_text":
            return config_parse_text(text=text(data, "config_text"))
        if not isinstance(data["config"], dict):
            raise CatalogError(_("A config.json must be a JSON object."))
        # Through the importer's own parser and limits (size, depth), as if pasted.
        return config_parse_text(text=json.dumps(data["config"]))
    except CatalogError as exc:
        raise Refused({given[0]: [exc.message]}) from None


def _accelerator_current(row: Accelerator) -> dict[str, str]:
    data = {}
    for name in services.ACCELERATOR_FIELDS:
        value = getattr(row, name)
        data[name] = "" if value is None else str(value)
    return data


def _accelerator_valid(data: dict[str, str], row: Accelerator | None = None) -> dict[str, Any]:
    form = OwnAcceleratorForm(data, instance=row)
    if not form.is_valid():
        raise Refused(form_errors(form))  # type: ignore[arg-type]
    cleaned: dict[str, Any] = form.cleaned_data
    return cleaned


# --- views ---------------------------------------------------------------------------

PAGE_PARAMETERS = [
    OpenApiParameter("page", OpenApiTypes.INT, description="Page number, from 1."),
    OpenApiParameter("page_size", OpenApiTypes.INT, description="Rows a page (50, at most 200)."),
]


_responses = role_responses


class OwnCatalogApiView(RoleApiView):
    """Reads for viewers; writes need an editor, DELETE an admin: 403 otherwise. The
    tenant is resolved first, so a non-member gets 404 whatever the method."""


class OwnModelListApi(OwnCatalogApiView):
    @extend_schema(
        operation_id="own_models_list",
        summary="The organization's own models",
        parameters=PAGE_PARAMETERS,
        responses=_responses(200, OwnModelPage, bad="A malformed page."),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        rows = selectors.own_model_list(tenant=self.tenant).prefetch_related("weights")
        pages = NumberedPages()
        page = pages.paginate_queryset(rows, request, self) or []
        return pages.get_paginated_response(OwnModelOutput(page, many=True).data)

    @extend_schema(
        operation_id="own_models_create",
        summary="Import a model of our own from its config.json (editors)",
        request={"application/json": OWN_MODEL_INPUT},
        responses=_responses(
            201,
            OwnModelOutput,
            write=True,
            bad="Bad input: a config that is no JSON object, does not parse or does not "
            "state the model's size, or an unknown field; the field named.",
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        data = json_object(request.data, MODEL_ALLOWED)
        name = text(data, "name").strip()
        if not name:
            raise Refused({"name": [_("This field is required.")]})
        if len(name) > 120:
            raise Refused({"name": [_("At most 120 characters.")]})
        hf_repo, notes = text(data, "hf_repo"), text(data, "notes")
        if len(hf_repo) > 200:
            raise Refused({"hf_repo": [_("At most 200 characters.")]})
        config = _config(data)
        try:
            model = services.own_model_import_config(
                tenant=self.tenant,
                user=request.user,
                name=name,
                config=config,
                hf_repo=hf_repo,
                notes=notes,
            )
        except CatalogError as exc:
            raise _refuse(exc, "config_text" if "config_text" in data else "config") from None
        except ValidationError as exc:
            raise _refuse(exc) from None
        return Response(OwnModelOutput(model).data, status=status.HTTP_201_CREATED)


class OwnModelDetailApi(OwnCatalogApiView):
    def row(self, slug: str) -> LLMModel:
        return selectors.own_model_get(tenant=self.tenant, slug=slug)

    @extend_schema(
        operation_id="own_models_retrieve",
        summary="One of our own models, by its slug",
        responses=_responses(200, OwnModelOutput),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, slug: str) -> Response:
        return Response(OwnModelOutput(self.row(slug)).data)

    @extend_schema(
        operation_id="own_models_partial_update",
        summary="Rename a model of our own or change its notes (editors)",
        request=OwnModelPatch,
        responses=_responses(200, OwnModelOutput, write=True, bad="Bad input, the field named."),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, slug: str) -> Response:
        model = self.row(slug)
        data = json_object(request.data, MODEL_PATCH_ALLOWED)
        sent = {name: text(data, name) for name in data}
        form = OwnModelEditForm({"name": model.name, "notes": model.notes, **sent})
        if not form.is_valid():
            raise Refused(form_errors(form))
        try:
            model = services.own_model_update(
                tenant=self.tenant, user=request.user, model=model, values=form.cleaned_data
            )
        except ValidationError as exc:
            raise _refuse(exc) from None
        return Response(OwnModelOutput(model).data)

    @extend_schema(
        operation_id="own_models_destroy",
        summary="Delete a model of our own (admins)",
        request=None,
        responses=_responses(204, "Deleted; its history keeps who did it.", write=True),
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, slug: str) -> Response:
        services.own_model_delete(tenant=self.tenant, user=request.user, model=self.row(slug))
        return Response(status=status.HTTP_204_NO_CONTENT)


class OwnAcceleratorListApi(OwnCatalogApiView):
    @extend_schema(
        operation_id="own_accelerators_list",
        summary="The organization's own accelerators",
        parameters=PAGE_PARAMETERS,
        responses=_responses(200, OwnAcceleratorPage, bad="A malformed page."),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        pages = NumberedPages()
        rows = selectors.own_accelerator_list(tenant=self.tenant)
        page = pages.paginate_queryset(rows, request, self) or []
        return pages.get_paginated_response(OwnAcceleratorOutput(page, many=True).data)

    @extend_schema(
        operation_id="own_accelerators_create",
        summary="Add an accelerator of our own (editors)",
        request=OwnAcceleratorInput,
        responses=_responses(
            201,
            OwnAcceleratorOutput,
            write=True,
            bad="Bad input (a figure out of range) or an unknown field, the field named.",
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        data = json_object(request.data, ACCELERATOR_ALLOWED)
        sent = {name: _form_value(data, name) for name in data}
        values = _accelerator_valid({**ACCELERATOR_DEFAULTS, **sent})
        try:
            row = services.own_accelerator_create(
                tenant=self.tenant, user=request.user, values=values
            )
        except ValidationError as exc:
            raise _refuse(exc) from None
        return Response(OwnAcceleratorOutput(row).data, status=status.HTTP_201_CREATED)


class OwnAcceleratorDetailApi(OwnCatalogApiView):
    def row(self, slug: str) -> Accelerator:
        return selectors.own_accelerator_get(tenant=self.tenant, slug=slug)

    @extend_schema(
        operation_id="own_accelerators_retrieve",
        summary="One of our own accelerators, by its slug",
        responses=_responses(200, OwnAcceleratorOutput),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, slug: str) -> Response:
        return Response(OwnAcceleratorOutput(self.row(slug)).data)

    @extend_schema(
        operation_id="own_accelerators_partial_update",
        summary="Change an accelerator of our own (editors)",
        request=OwnAcceleratorPatch,
        responses=_responses(
            200,
            OwnAcceleratorOutput,
            write=True,
            bad="Bad input (a figure out of range) or an unknown field, the field named.",
        ),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, slug: str) -> Response:
        row = self.row(slug)
        data = json_object(request.data, ACCELERATOR_ALLOWED)
        sent = {name: _form_value(data, name) for name in data}
        values = _accelerator_valid({**_accelerator_current(row), **sent}, row)
        try:
            row = services.own_accelerator_update(
                tenant=self.tenant, user=request.user, accelerator=row, values=values
            )
        except ValidationError as exc:
            raise _refuse(exc) from None
        return Response(OwnAcceleratorOutput(row).data)

    @extend_schema(
        operation_id="own_accelerators_destroy",
        summary="Delete an accelerator of our own (admins)",
        request=None,
        responses={
            **_responses(204, "Deleted; its history keeps who did it.", write=True),
            409: schema.errors("Inventory machines use it; they are named."),
        },
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, slug: str) -> Response:
        try:
            services.own_accelerator_delete(
                tenant=self.tenant, user=request.user, accelerator=self.row(slug)
            )
        except CatalogError as exc:
            raise Refused({"detail": [exc.message]}, status.HTTP_409_CONFLICT) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


ORG = "o/<slug:org_slug>/"

urlpatterns: list[URLPattern] = [
    path(ORG + "models/", OwnModelListApi.as_view(), name="own-models"),
    path(ORG + "models/<slug:slug>/", OwnModelDetailApi.as_view(), name="own-model"),
    path(ORG + "accelerators/", OwnAcceleratorListApi.as_view(), name="own-accelerators"),
    path(
        ORG + "accelerators/<slug:slug>/",
        OwnAcceleratorDetailApi.as_view(),
        name="own-accelerator",
    ),
]
