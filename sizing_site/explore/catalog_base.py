"""The catalog API's common view (sizing_site.explore.catalog_api builds on it): reads with
ETag and Last-Modified from the catalog version, cursor paging, ordering, query filters,
PATCH of a few fields for staff, and the schema helper that documents each view."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar

from django.contrib.auth import get_permission_codename
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Field, FloatField, Max, Model, QuerySet, Value
from django.db.models.functions import Coalesce
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

from catalog.sizing.cache import UNREACHABLE, catalog_version
from sizing_site.apikit import schema
from sizing_site.apikit.conditional import RevalidatedReads, if_none_match_etags
from sizing_site.apikit.errors import json_object, json_types
from sizing_site.apikit.pagination import whole_number
from sizing_site.apikit.parsers import JsonBodyParser
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


def floor_of(field: str, floor: float = -1.0, output: Field[Any, Any] | None = None) -> Coalesce:
    """A nullable column with nulls as `floor` (below every stored value: the tables'
    numbers are non-negative), so nulls sort first ascending and last descending."""
    return Coalesce(field, Value(floor), output_field=output or FloatField())


# --- query parameters --------------------------------------------------------------------


# The number filters are sizes (GB, billions of parameters): from 0, and bounded so that
# NaN, infinities and absurd sizes are refused (the schema states the same range).
MAX_NUMBER = 1e15


def number_filter(params: Mapping[str, str], name: str) -> float | None:
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


def boolean_filter(params: Mapping[str, str], name: str) -> bool | None:
    if name not in params:
        return None
    raw = params[name].strip().lower()
    if raw in ("true", "1", "yes"):
        return True
    if raw in ("false", "0", "no"):
        return False
    raise exceptions.ValidationError({name: [_("Enter true or false.")]})


# --- the common view -----------------------------------------------------------------------


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


# --- the schema ----------------------------------------------------------------------------

STAFF_ONLY = schema.errors(
    "Not logged in; or a PATCH by a user who is not staff or lacks the table's change "
    "permission (as the admin requires)."
)
BAD_FILTER = schema.errors("A malformed filter, the query parameter named.")
NO_SUCH_ROW = schema.errors("No row with this slug.")
BAD_CURSOR = schema.errors("An invalid cursor.")


def query_parameter(name: str, kind: Any, description: str, **extra: Any) -> OpenApiParameter:
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
