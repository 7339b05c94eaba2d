"""An organisation's own catalog entries under /api/v1/o/<org_slug>/: what the
own-catalog pages do (sizing_site.owncatalog.views), for scripts.

- models/: GET the organisation's own models (paged), POST import one from a config.json
  (`config` as a JSON object, or `config_text`); models/<slug>/: GET, PATCH name and
  notes, DELETE.
- accelerators/: GET (paged), POST one with its specs; accelerators/<slug>/: GET, PATCH
  (only the fields sent), DELETE (409 while inventory machines use it).
- Every view is a TenantApiView: a non-member gets 404 whatever the method; reads need a
  viewer, writes an editor, DELETE an admin (else 403). Bad input is a 400 naming the
  field: checked by each view's InputSerializer (the pages' forms' fields and bounds),
  then by the pages' services.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import MAX_BANDWIDTH_GBPS, Accelerator, LLMModel, MemoryKind
from catalog.services.common import CatalogError
from catalog.services.configs import config_parse_text
from sizing_site.apikit import schema
from sizing_site.apikit.errors import Refused
from sizing_site.apikit.inputs import BodyInput, Choice, OptionalText
from sizing_site.apikit.pagination import NumberedPages
from sizing_site.owncatalog import selectors, services
from sizing_site.owncatalog.forms import UPPER_BOUNDS
from sizing_site.tenancy.role_api import RoleApiView, role_responses

TAGS = ["own catalog"]


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


class OwnAcceleratorPage(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = OwnAcceleratorOutput(many=True)


# --- input ---------------------------------------------------------------------------


def _refuse(exc: ValidationError | CatalogError, field: str = "detail") -> Refused:
    if isinstance(exc, CatalogError):
        return Refused({field: [exc.message]})
    errors = services.validation_errors(exc)
    return Refused({("detail" if k == "__all__" else k): v for k, v in errors.items()})


def _model_name() -> serializers.CharField:
    """A model's name, as the new-model page takes it: stripped, not blank."""
    return serializers.CharField(
        max_length=120, error_messages={"max_length": _("At most 120 characters.")}
    )


# The page form's upper bounds, and the catalog's own for the bandwidth.
MOST = {**UPPER_BOUNDS, "bandwidth_gbps": MAX_BANDWIDTH_GBPS}


def _figure(name: str, *, required: bool = False) -> serializers.FloatField:
    """One of an accelerator's figures, from 0 to its upper bound; null (blank) unless
    required."""
    return serializers.FloatField(
        min_value=0, max_value=MOST[name], required=required, allow_null=not required
    )


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
    class InputSerializer(BodyInput):
        """The new-model page's form, with config.json given as a JSON object (`config`)
        or as text (`config_text`): exactly one of them (else a 400 under config)."""

        name = _model_name()
        config = serializers.DictField(
            required=False,
            error_messages={"not_a_dict": _("A config.json must be a JSON object.")},
            help_text="config.json as a JSON object (or send config_text).",
        )
        config_text = serializers.CharField(
            required=False,
            trim_whitespace=False,
            help_text="config.json as text, at most 1 MB (or send config).",
        )
        hf_repo = OptionalText(
            max_length=200,
            error_messages={"max_length": _("At most 200 characters.")},
            help_text="The repo it is, or is fine-tuned from.",
        )
        notes = OptionalText()

        class Meta:
            ref_name = "OwnModelInput"

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            """The config.json parsed, as `config`, through the importer's own parser and
            limits (size, depth), as if pasted; a refusal names the field it came in."""
            given = [name for name in ("config", "config_text") if name in attrs]
            if len(given) != 1:
                message = _("Send config.json as config (an object) or config_text, one of them.")
                raise serializers.ValidationError({"config": [message]})
            if given == ["config_text"]:
                text = attrs.pop("config_text")
            else:
                text = json.dumps(attrs["config"])
            try:
                config = config_parse_text(text=text)
            except CatalogError as exc:
                raise serializers.ValidationError({given[0]: [exc.message]}) from None
            return {**attrs, "config": config}

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
        request=InputSerializer,
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
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            model = services.own_model_import_config(
                tenant=self.tenant, user=request.user, **serializer.validated_data
            )
        except CatalogError as exc:
            sent = "config_text" if "config_text" in request.data else "config"
            raise _refuse(exc, sent) from None
        except ValidationError as exc:
            raise _refuse(exc) from None
        return Response(OwnModelOutput(model).data, status=status.HTTP_201_CREATED)


class OwnModelDetailApi(OwnCatalogApiView):
    class InputSerializer(BodyInput):
        """A model of our own renamed or its notes changed: either or both (a PATCH)."""

        name = _model_name()
        notes = OptionalText()

        class Meta:
            ref_name = "OwnModelPatch"

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
        request=InputSerializer,
        responses=_responses(200, OwnModelOutput, write=True, bad="Bad input, the field named."),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, slug: str) -> Response:
        model = self.row(slug)
        serializer = self.InputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            model = services.own_model_update(
                tenant=self.tenant, user=request.user, model=model, values=serializer.validated_data
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
    class InputSerializer(BodyInput):
        """The new-accelerator page's form (OwnAcceleratorForm); a PATCH sends any of its
        fields, and those not sent keep their values."""

        vendor = serializers.CharField(max_length=60)
        name = serializers.CharField(max_length=120)
        memory_gb = _figure("memory_gb", required=True)
        memory_gib = _figure("memory_gib")
        memory_kind = Choice(
            choices=MemoryKind.choices, required=False, help_text="discrete (default) or unified."
        )
        bandwidth_gbps = _figure("bandwidth_gbps", required=True)
        fp16_tflops = _figure("fp16_tflops", required=True)
        fp8_tflops = _figure("fp8_tflops")
        fp4_tflops = _figure("fp4_tflops")
        tdp_w = serializers.IntegerField(
            required=False, allow_null=True, min_value=0, max_value=int(UPPER_BOUNDS["tdp_w"])
        )
        interconnect = OptionalText(max_length=200)
        interconnect_gbps = _figure("interconnect_gbps")
        price_usd = _figure("price_usd")
        notes = OptionalText()

        class Meta:
            ref_name = "OwnAcceleratorInput"

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
        request=InputSerializer,
        responses=_responses(
            201,
            OwnAcceleratorOutput,
            write=True,
            bad="Bad input (a figure out of range) or an unknown field, the field named.",
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            row = services.own_accelerator_create(
                tenant=self.tenant, user=request.user, values=serializer.validated_data
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
        request=OwnAcceleratorListApi.InputSerializer,
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
        serializer = OwnAcceleratorListApi.InputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            row = services.own_accelerator_update(
                tenant=self.tenant,
                user=request.user,
                accelerator=row,
                values=serializer.validated_data,
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
