"""Saved configurations in the API: list, save (sized on the server), read, rename,
delete, recompute, export, duplicate and compare (reports.api, for the rules)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode
from uuid import UUID

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import Accelerator, LLMModel
from catalog.sizing.specs import stated_layers
from sizing_site.apikit import budget, schema
from sizing_site.apikit.errors import Refused, form_errors, json_object, text
from sizing_site.apikit.pagination import NumberedPages
from sizing_site.configurator.api import SETUP_FIELDS, setup_query
from sizing_site.configurator.state import (
    ConfiguratorState,
    StateError,
    configuration_pair,
    configuration_size,
)
from sizing_site.reports import selectors, services
from sizing_site.reports.api.base import TAGS, ReportsApiView, schema_responses
from sizing_site.reports.api.configuration_schema import (
    COMPARE,
    DETAIL,
    DUPLICATE_REQUEST,
    EXPORT,
    MAX_TAGS,
    PAGE,
    RECOMPUTE,
    RENAME_REQUEST,
    SAVE_REQUEST,
    TAG_MAX,
)
from sizing_site.reports.forms import NameForm, SaveForm
from sizing_site.reports.models import SavedConfiguration
from sizing_site.tenancy.access import Tenant

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
SAVE_FIELDS = frozenset({"name", "notes", "tags", "model", "accelerator"}) | SETUP_FIELDS


# --- input ---------------------------------------------------------------------------


def _name(data: dict[str, Any]) -> str:
    """The body's "name", checked as the page's rename form checks it."""
    form = NameForm({"name": text(data, "name")})
    if not form.is_valid():
        raise Refused(form_errors(form))
    name: str = form.cleaned_data["name"]
    return name


def _tags(data: dict[str, Any]) -> tuple[str, list[str] | None]:
    """The save form's tags text, and the tags when they came as a list (None for text:
    SaveForm splits it)."""
    value = data.get("tags", "")
    if not isinstance(value, list):
        return text(data, "tags"), None
    if not all(isinstance(t, str) for t in value):
        raise Refused({"tags": [_("Expected a list of strings.")]})
    if len(value) > MAX_TAGS or any(len(t) > TAG_MAX for t in value):
        message = _("At most %(n)d tags of at most %(chars)d characters each.")
        raise Refused({"tags": [message % {"n": MAX_TAGS, "chars": TAG_MAX}]})
    return "", [t.strip() for t in value if t.strip()]


# --- the workflow's inputs -----------------------------------------------------------


def _pair(
    *, model_slug: str, accelerator_slug: str, tenant: Tenant
) -> tuple[LLMModel, Accelerator]:
    """The rows a state names, over the public catalog and the tenant's own
    (configurator.state.configuration_pair): an unknown slug (another organisation's own
    row too) is a 404 naming it."""
    try:
        return configuration_pair(
            model_slug=model_slug,
            accelerator_slug=accelerator_slug,
            organizations=[tenant.organization],
        )
    except StateError as exc:
        raise Refused(exc.errors, exc.status) from None


def _units(model: LLMModel) -> float:
    """Sizing a state costs one estimate of its model (sizing_site.apikit.budget)."""
    return budget.estimate_units(layers=stated_layers(model.config))


def _recomputed(
    request: Request, configuration: SavedConfiguration, tenant: Tenant
) -> ConfiguratorState | None:
    """The saved parameters sized today, as the recompute page sizes them, within the work
    budget; None when they no longer stand for a state that can be sized."""
    try:
        model, accelerator = configuration_pair(
            model_slug=configuration.model_slug,
            accelerator_slug=configuration.accelerator_slug,
            organizations=[tenant.organization],
        )
    except StateError:
        with budget.spend(request, 1):
            return None
    with budget.spend(request, _units(model)):
        try:
            return configuration_size(
                model=model, accelerator=accelerator, data=configuration.query
            )
        except StateError:
            return None


def _setup_query(data: dict[str, Any]) -> dict[str, str]:
    """The setup fields as the configurator's query parameters (as /api/v1/estimate/)."""
    return setup_query(data)


# --- output --------------------------------------------------------------------------


def _summary(c: SavedConfiguration) -> dict[str, Any]:
    """One row of the list: what the list page shows, from the frozen snapshot."""
    snapshot = c.frozen
    result, setup = snapshot.result, snapshot.setup
    return {
        "code": str(c.code),
        "name": c.name,
        "notes": c.notes,
        "tags": c.tags,
        "model": c.model_slug,
        "accelerator": c.accelerator_slug,
        "quant": setup.get("quant"),
        "gpus": setup.get("gpus"),
        "verdict": result["fit"]["verdict"],
        "per_device_bytes": result.get("per_device_bytes"),
        "saved_by": c.created_by.get_username() if c.created_by else None,
        "saved_at": c.created.isoformat(),
    }


def _detail(c: SavedConfiguration) -> dict[str, Any]:
    """The page's JSON export plus the model and card slugs."""
    return {
        **selectors.configuration_export(configuration=c),
        "model": c.model_slug,
        "accelerator": c.accelerator_slug,
    }


# --- views ---------------------------------------------------------------------------


class ConfigurationPages(NumberedPages):
    page_size = PAGE_SIZE
    max_page_size = MAX_PAGE_SIZE


LIST_PARAMETERS = [
    OpenApiParameter("q", str, description="Search in names, notes and tags."),
    OpenApiParameter("sort", str, enum=list(selectors.SORTS), description="Default: new."),
    OpenApiParameter("mine", bool, description="Only the caller's own."),
    OpenApiParameter("page", int),
    OpenApiParameter("page_size", int, description=f"At most {MAX_PAGE_SIZE}."),
]


class ConfigurationListApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_list",
        summary="The organization's saved configurations, a page at a time",
        parameters=LIST_PARAMETERS,
        responses=schema_responses(
            200, PAGE, bad="A bad sort, mine or page.", missing="Not a member, or no such page."
        ),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        params = request.query_params
        sort = params.get("sort", "new")
        if sort not in selectors.SORTS:
            raise Refused({"sort": [_("Expected one of: %s.") % ", ".join(selectors.SORTS)]})
        mine = params.get("mine", "false").lower()
        if mine not in ("true", "false", "1", "0"):
            raise Refused({"mine": [_("Expected true or false.")]})
        rows: QuerySet[SavedConfiguration] = selectors.saved_configuration_list(
            tenant=self.tenant,
            mine_of=request.user if mine in ("true", "1") else None,
            search=params.get("q", "").strip()[:100],
            sort=sort,
        )
        pages = ConfigurationPages()
        page = pages.paginate_queryset(rows, request, view=self) or []
        return pages.get_paginated_response([_summary(c) for c in page])

    @extend_schema(
        operation_id="configurations_create",
        summary="Size a setup now and save it",
        request=SAVE_REQUEST,
        responses={
            **schema_responses(
                201,
                DETAIL,
                write=True,
                bad="Bad input, the field named (an unknown field too).",
                missing="Not a member; or no model or card with this slug (the field named).",
            ),
            429: schema.BUDGET_RESPONSES[429],
        },
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        data = json_object(request.data, SAVE_FIELDS)
        query = _setup_query(data)
        tags_text, tags = _tags(data)
        form = SaveForm(
            {
                "name": text(data, "name"),
                "notes": text(data, "notes"),
                "tags": tags_text,
                "model": text(data, "model"),
                "accelerator": text(data, "accelerator"),
                "query": urlencode(query),
            }
        )
        if not form.is_valid():
            raise Refused(form_errors(form, {"query": "setup"}))
        clean = form.cleaned_data
        model, accelerator = _pair(
            model_slug=clean["model"], accelerator_slug=clean["accelerator"], tenant=self.tenant
        )
        try:
            # Sizing it costs one estimate of the model (sizing_site.apikit.budget).
            with budget.spend(request, _units(model)):
                state = configuration_size(
                    model=model, accelerator=accelerator, data=dict(parse_qsl(clean["query"]))
                )
                saved = services.saved_configuration_create(
                    tenant=self.tenant,
                    user=request.user,
                    name=clean["name"],
                    notes=clean["notes"],
                    tags=clean["tags"] if tags is None else tags,
                    state=state,
                )
        except StateError as exc:
            raise Refused(exc.errors, exc.status) from None
        return Response(_detail(saved), status=status.HTTP_201_CREATED)


class ConfigurationDetailApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_retrieve",
        summary="One saved configuration, its frozen snapshot",
        responses=schema_responses(200, DETAIL),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        return Response(_detail(self.configuration(code)))

    @extend_schema(
        operation_id="configurations_partial_update",
        summary="Rename a saved configuration",
        request=RENAME_REQUEST,
        responses=schema_responses(200, DETAIL, write=True, bad="Bad name, or another field sent."),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        data = json_object(request.data, frozenset({"name"}))
        renamed = services.saved_configuration_rename(
            tenant=self.tenant, user=request.user, configuration=configuration, name=_name(data)
        )
        return Response(_detail(renamed))

    @extend_schema(
        operation_id="configurations_destroy",
        summary="Delete a saved configuration (its share links with it)",
        request=None,
        responses=schema_responses(204, "Deleted.", write=True),
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, code: UUID) -> Response:
        services.saved_configuration_delete(
            tenant=self.tenant, user=request.user, configuration=self.configuration(code)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConfigurationRecomputeApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_recompute",
        summary="Today's figures for a saved configuration, and what changed",
        responses={**schema_responses(200, RECOMPUTE), 429: schema.BUDGET_RESPONSES[429]},
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        state = _recomputed(request, configuration, self.tenant)
        today, changes = selectors.configuration_changes(configuration=configuration, state=state)
        catalog = (
            selectors.catalog_changes(saved=configuration.frozen, today=today) if today else []
        )
        return Response(
            {
                "code": str(configuration.code),
                "sizeable": today is not None,
                "today": today.to_json() if today else None,
                "changes": changes,
                "catalog_changes": [{**row, "label": str(row["label"])} for row in catalog],
            }
        )


class ConfigurationExportApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_export",
        summary="A saved configuration as the report page's JSON export",
        responses=schema_responses(200, EXPORT),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        return Response(selectors.configuration_export(configuration=configuration))


class ConfigurationDuplicateApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_duplicate",
        summary="Copy a saved configuration (the same frozen snapshot)",
        request=DUPLICATE_REQUEST,
        responses=schema_responses(201, DETAIL, write=True, bad="Bad name, or another field sent."),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        data = json_object(request.data, frozenset({"name"}))
        # No name: the page's own name for a copy (the service's default).
        name = None if data.get("name") is None else _name(data)
        copy = services.saved_configuration_duplicate(
            tenant=self.tenant, user=request.user, configuration=configuration, name=name
        )
        return Response(_detail(copy), status=status.HTTP_201_CREATED)


class ConfigurationCompareApi(ReportsApiView):
    """2 to 4 saved configurations side by side, from their frozen snapshots (nothing is
    recomputed), as the compare page shows them: the best value of each figure marked."""

    @extend_schema(
        operation_id="configurations_compare",
        summary="Compare 2 to 4 saved configurations",
        parameters=[
            OpenApiParameter(
                "c",
                {
                    "type": "array",
                    "items": {"type": "string", "format": "uuid"},
                    "minItems": 2,
                    "maxItems": 4,
                    "uniqueItems": True,
                },
                description="A configuration's code, 2-4 different ones.",
                required=True,
                explode=True,
            )
        ],
        responses=schema_responses(
            200,
            COMPARE,
            bad="Fewer than 2 or more than 4 codes, one twice, or a malformed one.",
            missing="Not a member, or a code of no configuration of the organization.",
        ),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        codes = request.query_params.getlist("c")
        if not 2 <= len(codes) <= 4 or len(set(codes)) < len(codes):
            raise Refused({"c": [_("Send 2 to 4 different configuration codes.")]})
        try:
            codes = [str(UUID(code)) for code in codes]
        except ValueError:
            raise Refused({"c": [_("Expected configuration codes.")]}) from None
        rows = selectors.saved_configurations_by_codes(tenant=self.tenant, codes=codes)
        return Response(
            {
                "configurations": [_summary(c) for c in rows],
                "rows": [
                    {
                        "figure": row.label,
                        "kind": row.kind,
                        "values": row.values,
                        "best": sorted(row.best),
                    }
                    for row in selectors.saved_compare_rows(configurations=rows)
                ],
            }
        )
