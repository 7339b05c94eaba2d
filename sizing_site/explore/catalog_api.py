"""The catalog under /api/v1/catalog/: models (with their config summary, the config.json
on a model's own page), a model's weights and measured sizes, accelerators (the engine
support matrix on a card's own page), engines and quant formats.

- Reads (GET, HEAD, OPTIONS) for any signed-in user; staff may PATCH a few scalar fields
  of one row: notes on a model, engine or quant format; notes, price_usd and price_date
  on an accelerator (weights are read-only). Every other write is 405 for staff and 403
  for everyone else.
- Filters as query parameters (400 with {"errors": {"<param>": [...]}} when malformed:
  the project's error shape, sizing_site.api.errors),
  `?search=` (DRF SearchFilter), `?ordering=` (the names in each view's ORDERING, "-" for
  descending), cursor pagination of 50 rows (`page_size` up to 200).
- `ETag` from the catalog version (catalog.sizing.cache: every catalog edit starts a new
  one), the address and the caller's staff flag, so `If-None-Match` answers 304 before
  any row is read; `Last-Modified` is the newest `updated` of the rows' table.

The catalog tables have no organisation-owned rows (only price offers do, and they are not
served here), so every signed-in user sees the same rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import date
from typing import Any, ClassVar

from django.contrib.auth import get_permission_codename
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import BigIntegerField, Field, FloatField, Max, Model, Q, QuerySet, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from django.utils.cache import patch_vary_headers
from django.utils.http import http_date, quote_etag
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import exceptions, filters, generics, permissions, status
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from catalog.hardware import support_matrix
from catalog.models import (
    Accelerator,
    InferenceEngine,
    LLMModel,
    ModelWeights,
    QuantFormat,
    Segment,
)
from catalog.selectors import visible_accelerators_among, visible_models_among
from catalog.sizing.cache import UNREACHABLE, catalog_version
from sizing_site.api import catalog_serializers as cs
from sizing_site.api import schema
from sizing_site.api.errors import json_object, json_types, single_values
from sizing_site.api.pagination import whole_number
from sizing_site.api.parsers import JsonBodyParser
from sizing_site.tenancy.selectors import viewer_organization_keys

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
# config.json keys the model list reads without loading whole configs (annotation names).
CONFIG_KEYS = {
    "cfg_layers": "config__num_hidden_layers",
    "cfg_text_layers": "config__text_config__num_hidden_layers",
    "cfg_experts": "config__num_local_experts",
    "cfg_routed_experts": "config__n_routed_experts",
    "cfg_num_experts": "config__num_experts",
    "cfg_experts_per_tok": "config__num_experts_per_tok",
}


# --- permissions, pagination, ordering -------------------------------------------


class ReadOrStaffPatch(permissions.IsAuthenticated):
    """Reads for any signed-in user; anything else (the view then allows PATCH alone) for
    staff holding the table's change permission, as the admin requires for the same edit
    (`catalog.change_llmmodel`, ...; a superuser holds every one)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not super().has_permission(request, view):
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        user = request.user
        table = getattr(view, "table", None)
        if not user.is_staff or table is None:
            return False
        meta = table._meta
        return bool(user.has_perm(f"{meta.app_label}.{get_permission_codename('change', meta)}"))


class CatalogCursor(CursorPagination):
    page_size = PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        whole_number(request.query_params, self.page_size_query_param)
        # A forged cursor whose position does not fit the ordering's column ("abc" for a
        # number) is an invalid cursor, as DRF answers for one it cannot decode.
        try:
            return super().paginate_queryset(queryset, request, view)
        except (ValueError, TypeError, OverflowError, DjangoValidationError) as exc:
            raise exceptions.NotFound(self.invalid_cursor_message) from exc


class CatalogOrdering(filters.OrderingFilter):
    """`?ordering=` over the view's ORDERING names. Each name maps to a sort key that is
    never null (the view annotates nullable columns with a floor), so a cursor position
    always reads back; the slug breaks ties."""

    def get_ordering(self, request: Request, queryset: QuerySet[Any], view: APIView) -> list[str]:
        names: Mapping[str, str] = getattr(view, "ORDERING", {})
        asked = request.query_params.get(self.ordering_param, "")
        for term in (t.strip() for t in asked.split(",")):
            key = names.get(term.lstrip("-"))
            if key is not None:
                tiebreak = getattr(view, "TIEBREAK", "slug")
                return [("-" if term.startswith("-") else "") + key, tiebreak]
        return list(getattr(view, "ordering", ["slug"]))


def _floor(field: str, floor: float = -1.0, output: Field[Any, Any] | None = None) -> Coalesce:
    """A nullable column with nulls as `floor` (below every stored value: the tables'
    numbers are non-negative), so nulls sort first ascending and last descending."""
    return Coalesce(field, Value(floor), output_field=output or FloatField())


# --- query parameters --------------------------------------------------------------------


# The number filters are sizes (GB, billions of parameters): from 0, and bounded so that
# NaN, infinities and absurd sizes are refused (the schema states the same range).
MAX_NUMBER = 1e15


def _number(params: Mapping[str, str], name: str) -> float | None:
    if name not in params:
        return None
    raw = params[name].strip()
    try:
        value = float(raw)
    except ValueError:
        raise exceptions.ValidationError({name: [_("Enter a number.")]}) from None
    if not (0 <= value <= MAX_NUMBER):
        message = _("Enter a number from 0 to %(most)s.") % {"most": f"{MAX_NUMBER:g}"}
        raise exceptions.ValidationError({name: [message]})
    return value


def _boolean(params: Mapping[str, str], name: str) -> bool | None:
    if name not in params:
        return None
    raw = params[name].strip().lower()
    if raw in ("true", "1", "yes"):
        return True
    if raw in ("false", "0", "no"):
        return False
    raise exceptions.ValidationError({name: [_("Enter true or false.")]})


# --- the common view -----------------------------------------------------------------------


class RevalidatedReads(APIView):
    """GET and HEAD answers are private and revalidated every time (an ETag answers the
    revalidation): they differ by caller (Accept, Cookie, Authorization)."""

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method in ("GET", "HEAD"):
            response["Cache-Control"] = "private, no-cache"
            patch_vary_headers(response, ("Accept", "Cookie", "Authorization"))
        return response


class CatalogView(RevalidatedReads, generics.GenericAPIView[Any]):
    """Reads with ETag/Last-Modified, one error shape, and PATCH for staff."""

    permission_classes = [ReadOrStaffPatch]
    # A PATCH is JSON: a form cannot send the null that clears a nullable field.
    parser_classes = [JsonBodyParser]
    filter_backends = [filters.SearchFilter, CatalogOrdering]
    pagination_class = CatalogCursor
    lookup_field = "slug"
    # PATCH only where a detail view names what staff may change (patch_serializer_class).
    http_method_names = ["get", "head", "options"]
    ORDERING: ClassVar[dict[str, str]] = {}
    ordering: ClassVar[list[str]] = ["slug"]
    patch_serializer_class: ClassVar[type[Serializer[Any]] | None] = None
    detail: ClassVar[bool] = False  # one row by slug, else a list
    table: ClassVar[type[Model]]
    # The table has organisations' own rows (models, accelerators, a model's weights).
    owned_rows: ClassVar[bool] = False

    # A conditional GET is answered before any row is read.
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        etag = self._etag(request)
        if etag is not None and etag in if_none_match_etags(
            request.headers.get("If-None-Match", "")
        ):
            response = Response(status=status.HTTP_304_NOT_MODIFIED)
            response["ETag"] = etag
            return response
        response = self.read(request, *args, **kwargs)
        if etag is not None and response.status_code == status.HTTP_200_OK:
            response["ETag"] = etag
            newest = self.table._default_manager.aggregate(newest=Max("updated"))["newest"]
            if newest is not None:
                response["Last-Modified"] = http_date(newest.timestamp())
        return response

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # On the class, not per instance, so the schema (extend_schema_view) sees the PATCH.
        super().__init_subclass__(**kwargs)
        patchable = cls.detail and cls.patch_serializer_class is not None
        if patchable and "patch" not in cls.http_method_names:
            cls.http_method_names = [*cls.http_method_names, "patch"]

    def organization_keys(self) -> QuerySet[Any] | None:
        """The caller's organisations (a token's only) as a subquery of their keys: their
        own models and cards are listed beside the public catalog, and nobody else's."""
        return viewer_organization_keys(self.request)

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        # Search and ordering are the lists' own: a detail address ignores them.
        return queryset if self.detail else super().filter_queryset(queryset)

    def read(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if self.detail:
            return Response(self.get_serializer(self.get_object()).data)
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def patch(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not self.detail or self.patch_serializer_class is None:
            return self.http_method_not_allowed(request, *args, **kwargs)
        instance = self.get_object()
        json_object(request.data)
        allowed = set(self.patch_serializer_class().fields)
        unknown = sorted(str(k) for k in request.data if k not in allowed)
        if unknown:
            message = _("Staff may change only: %(fields)s.") % {
                "fields": ", ".join(sorted(allowed))
            }
            raise exceptions.ValidationError({name: [message] for name in unknown})
        json_types(request.data, self.patch_serializer_class().fields)
        patch = self.patch_serializer_class(instance, data=request.data, partial=True)
        patch.is_valid(raise_exception=True)
        patch.save()
        return Response(self.get_serializer(self.get_object()).data)

    def _etag(self, request: Request) -> str | None:
        version = catalog_version()
        if version == UNREACHABLE:
            return None
        staff = bool(getattr(request.user, "is_staff", False))
        # A member's answer holds the organisations' own rows: the tag is the caller's own
        # (user and token's organisation; reading the memberships would cost a query).
        caller = ""
        if self.owned_rows and request.user.is_authenticated:
            caller = f"{request.user.pk}:{getattr(request.auth, 'organization_id', None)}"
        media = request.accepted_media_type
        basis = f"{version}|{request.get_full_path()}|{staff}|{media}|{caller}"
        return quote_etag(hashlib.sha256(basis.encode()).hexdigest()[:32])


def if_none_match_etags(header: str) -> set[str]:
    """The entity tags of If-None-Match, weak ones compared weakly (RFC 9110 13.1.2)."""
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()} | (
        {"*"} if header.strip() == "*" else set()
    )


# --- the schema ----------------------------------------------------------------------------

STAFF_ONLY = schema.errors(
    "Not logged in; or a PATCH by a user who is not staff or lacks the table's change "
    "permission (as the admin requires)."
)
BAD_FILTER = schema.errors("A malformed filter, the query parameter named.")
NO_SUCH_ROW = schema.errors("No row with this slug.")
BAD_CURSOR = schema.errors("An invalid cursor.")


def _query(name: str, kind: Any, description: str, **extra: Any) -> OpenApiParameter:
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, description=description, **extra)


NUMBER: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": MAX_NUMBER}
BOOLEAN, TEXT = OpenApiTypes.BOOL, OpenApiTypes.STR


def documented(
    name: str,
    serializer: type[Serializer[Any]],
    *,
    filters: tuple[OpenApiParameter, ...] = (),
    detail: bool = False,
    patch: type[Serializer[Any]] | None = None,
    what: str,
) -> Any:
    """The schema of one catalog view: its GET (a cursor page of rows, or one row by slug)
    and, where staff may change a row, its PATCH; every refusal in the one error shape."""
    if detail:
        get = extend_schema(
            operation_id=f"catalog_{name}_retrieve",
            summary=f"One {what}, by slug",
            responses={200: serializer, 403: schema.NOT_LOGGED_IN, 404: NO_SUCH_ROW},
            tags=["catalog"],
        )
    else:
        get = extend_schema(
            operation_id=f"catalog_{name}_list",
            summary=f"The catalog's {what}",
            parameters=list(filters),
            responses={
                200: serializer(many=True),
                400: BAD_FILTER,
                403: schema.NOT_LOGGED_IN,
                404: BAD_CURSOR,
            },
            tags=["catalog"],
        )
    views: dict[str, Any] = {"get": get}
    if patch is not None:
        views["patch"] = extend_schema(
            operation_id=f"catalog_{name}_partial_update",
            summary=f"Change one {what} (staff)",
            request=patch,
            responses={
                200: serializer,
                400: schema.errors("Bad input, the field named; or a field staff may not change."),
                403: STAFF_ONLY,
                404: NO_SUCH_ROW,
            },
            tags=["catalog"],
        )
    return extend_schema_view(**views)


# --- models ------------------------------------------------------------------------------


class ModelRows(CatalogView):
    table = LLMModel
    owned_rows = True
    search_fields = ["name", "family", "publisher", "hf_repo", "slug"]
    ORDERING: ClassVar[dict[str, str]] = {
        "name": "name",
        "slug": "slug",
        "family": "family",
        "params_total": "sort_params",
        "max_context_tokens": "sort_context",
        "release_date": "sort_release",
    }
    ordering: ClassVar[list[str]] = ["family", "name", "slug"]
    patch_serializer_class = cs.NotesPatchSerializer

    def get_queryset(self) -> QuerySet[LLMModel]:
        params = self.request.query_params
        rows = visible_models_among(self.organization_keys()).select_related("organization")
        rows = rows.annotate(
            sort_params=_floor("params_total", -1, BigIntegerField()),
            sort_context=_floor("max_context_tokens", -1, BigIntegerField()),
            sort_release=Coalesce("release_date", Value(date.min)),
            **{name: KT(path) for name, path in CONFIG_KEYS.items()},
        )
        if family := params.get("family", "").strip():
            rows = rows.filter(family__iexact=family)
        billion = 1e9
        if (low := _number(params, "params_min_b")) is not None:
            rows = rows.filter(params_total__gte=low * billion)
        if (high := _number(params, "params_max_b")) is not None:
            rows = rows.filter(params_total__lte=high * billion)
        moe = _boolean(params, "moe")
        if moe is not None:
            is_moe = Q(architecture__in=("moe", "mla"))
            rows = rows.filter(is_moe) if moe else rows.exclude(is_moe)
        return rows


@documented(
    "models",
    cs.ModelSerializer,
    what="models",
    filters=(
        _query("family", TEXT, "Family, exact, any case."),
        _query("params_min_b", NUMBER, "Total parameters at least, billions."),
        _query("params_max_b", NUMBER, "Total parameters at most, billions."),
        _query("moe", BOOLEAN, "Mixture-of-experts models only (true) or none (false)."),
    ),
)
class ModelListApi(ModelRows):
    """Models with their config summary. Filters: family (exact, any case), params_min_b
    and params_max_b (total parameters, billions), moe (true/false). Search: name,
    family, publisher, Hugging Face repo, slug."""

    serializer_class = cs.ModelSerializer

    def get_queryset(self) -> QuerySet[LLMModel]:
        return super().get_queryset().defer("config")


@documented(
    "models", cs.ModelDetailSerializer, what="model", detail=True, patch=cs.NotesPatchSerializer
)
class ModelDetailApi(ModelRows):
    """One model by slug, with its config.json. Staff may PATCH: notes."""

    detail = True

    serializer_class = cs.ModelDetailSerializer


@documented(
    "models_weights",
    cs.WeightsSerializer,
    what="weights of a model",
    filters=(_query("format", TEXT, "gguf or hf."),),
)
class WeightsListApi(CatalogView):
    """A model's weights and measured sizes, by format then quant. Filter: format
    (gguf/hf). Search: quant, repo."""

    table = ModelWeights
    owned_rows = True
    serializer_class = cs.WeightsSerializer
    search_fields = ["quant", "repo"]
    ORDERING: ClassVar[dict[str, str]] = {
        "quant": "quant",
        "format": "format",
        "file_bytes": "sort_bytes",
    }
    ordering: ClassVar[list[str]] = ["format", "quant", "pk"]
    TIEBREAK = "pk"

    def get_queryset(self) -> QuerySet[ModelWeights]:
        models = visible_models_among(self.organization_keys()).only("pk")
        model = get_object_or_404(models, slug=self.kwargs["slug"])
        rows = (
            ModelWeights.objects.filter(model=model)
            .select_related("model")
            .only(*[f.name for f in ModelWeights._meta.concrete_fields], "model__slug")
            .annotate(sort_bytes=_floor("file_bytes", -1, BigIntegerField()))
        )
        if fmt := self.request.query_params.get("format", "").strip():
            rows = rows.filter(format=fmt.lower())
        return rows


# --- accelerators ------------------------------------------------------------------------


class AcceleratorRows(CatalogView):
    table = Accelerator
    owned_rows = True
    search_fields = ["name", "vendor", "slug", "aliases"]
    ORDERING: ClassVar[dict[str, str]] = {
        "name": "name",
        "slug": "slug",
        "vendor": "vendor",
        "memory_gb": "sort_memory",
        "bandwidth_gbps": "sort_bandwidth",
        "fp16_tflops": "sort_fp16",
        "price_usd": "sort_price",
        "release_date": "sort_release",
    }
    ordering: ClassVar[list[str]] = ["vendor", "name", "slug"]
    patch_serializer_class = cs.AcceleratorPatchSerializer

    def get_queryset(self) -> QuerySet[Accelerator]:
        params = self.request.query_params
        rows = visible_accelerators_among(self.organization_keys())
        rows = rows.select_related("default_engine", "organization").annotate(
            sort_memory=_floor("memory_gb"),
            sort_bandwidth=_floor("bandwidth_gbps"),
            sort_fp16=_floor("fp16_tflops"),
            sort_price=_floor("price_usd"),
            sort_release=Coalesce("release_date", Value(date.min)),
        )
        if vendor := params.get("vendor", "").strip():
            rows = rows.filter(vendor__iexact=vendor)
        if errors := single_values(params, ("segment",)):
            raise exceptions.ValidationError(errors)
        if segment := params.get("segment", "").strip():
            if segment not in Segment.values:
                choices = ", ".join(Segment.values)
                message = _("Choose one of: %(choices)s.") % {"choices": choices}
                raise exceptions.ValidationError({"segment": [message]})
            rows = rows.filter(segment=segment)
        if (memory := _number(params, "memory_min_gb")) is not None:
            rows = rows.filter(memory_gb__gte=memory)
        curated = _boolean(params, "curated")
        if curated is not None:
            rows = rows.filter(curated=curated)
        return rows


@documented(
    "accelerators",
    cs.AcceleratorSerializer,
    what="accelerators",
    filters=(
        _query("vendor", TEXT, "Vendor, exact, any case."),
        _query("segment", TEXT, "The market segment.", enum=list(Segment.values)),
        _query("memory_min_gb", NUMBER, "The vendor's memory figure at least, GB."),
        _query("curated", BOOLEAN, "Curated cards only (true) or the others (false)."),
    ),
)
class AcceleratorListApi(AcceleratorRows):
    """Accelerators with their specs and sources. Filters: vendor (exact, any case),
    segment (consumer/workstation/datacenter/soc), memory_min_gb (the vendor's memory
    figure, GB), curated (true/false). Search: name, vendor, slug, aliases."""

    serializer_class = cs.AcceleratorSerializer


@documented(
    "accelerators",
    cs.AcceleratorDetailSerializer,
    what="accelerator",
    detail=True,
    patch=cs.AcceleratorPatchSerializer,
)
class AcceleratorDetailApi(AcceleratorRows):
    """One card by slug with the engine support matrix. Staff may PATCH: notes,
    price_usd, price_date."""

    detail = True

    serializer_class = cs.AcceleratorDetailSerializer

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "support_matrix": support_matrix()}


# --- engines and quant formats -------------------------------------------------------------


class EngineRows(CatalogView):
    table = InferenceEngine
    search_fields = ["name", "slug"]
    ORDERING: ClassVar[dict[str, str]] = {"name": "name", "slug": "slug"}
    ordering: ClassVar[list[str]] = ["name", "slug"]
    patch_serializer_class = cs.NotesPatchSerializer
    serializer_class = cs.EngineSerializer

    def get_queryset(self) -> QuerySet[InferenceEngine]:
        return InferenceEngine.objects.all()


@documented("engines", cs.EngineSerializer, what="inference engines")
class EngineListApi(EngineRows):
    """Inference engines: versions covered, formats, backends, launch templates."""


@documented(
    "engines",
    cs.EngineSerializer,
    what="inference engine",
    detail=True,
    patch=cs.NotesPatchSerializer,
)
class EngineDetailApi(EngineRows):
    """One engine by slug. Staff may PATCH: notes."""

    detail = True


class QuantFormatRows(CatalogView):
    table = QuantFormat
    search_fields = ["name", "slug", "description"]
    ORDERING: ClassVar[dict[str, str]] = {
        "name": "name",
        "slug": "slug",
        "bits_per_weight": "bits_per_weight",
        "quality_rank": "quality_rank",
    }
    ordering: ClassVar[list[str]] = ["family", "-quality_rank", "slug"]
    patch_serializer_class = cs.NotesPatchSerializer
    serializer_class = cs.QuantFormatSerializer

    def get_queryset(self) -> QuerySet[QuantFormat]:
        rows = QuantFormat.objects.all()
        if family := self.request.query_params.get("family", "").strip():
            rows = rows.filter(family=family.lower())
        return rows


@documented(
    "quant_formats",
    cs.QuantFormatSerializer,
    what="quantization formats",
    filters=(_query("family", TEXT, "gguf or hf."),),
)
class QuantFormatListApi(QuantFormatRows):
    """Quantization formats: family (gguf/hf), nominal bits per weight, quality rank.
    Filter: family."""


@documented(
    "quant_formats",
    cs.QuantFormatSerializer,
    what="quantization format",
    detail=True,
    patch=cs.NotesPatchSerializer,
)
class QuantFormatDetailApi(QuantFormatRows):
    """One quant format by slug. Staff may PATCH: notes."""

    detail = True
