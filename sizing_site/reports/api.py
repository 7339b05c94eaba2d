"""Saved configurations, share links and the activity log under /api/v1/o/<org_slug>/:
what the reports pages do (sizing_site.reports.views), for scripts.

- Every view is a TenantApiView: a non-member gets 404 whatever the method; reads need
  a viewer, writes (any unsafe method) an editor, else 403. Rows are named by their public
  `code`.
- A configuration is saved the way the configurator's Save form saves it: the page's
  SaveForm for name, notes and tags, the setup fields (the configurator's query-parameter
  names, as POST /api/v1/estimate/ takes them) through `configurator_state`, then
  `services.saved_configuration_create`, which sizes the setup on the server. The client
  sends no figures: an unknown field is a 400 naming it.
- Share links follow the org's sharing policy and the share form (ShareForm); editors
  revoke their own links, admins any.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode
from uuid import UUID

from django.db.models import QuerySet
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import Accelerator, LLMModel
from catalog.sizing.specs import stated_layers
from sizing_site.api import budget, schema
from sizing_site.api.errors import Refused, form_errors, json_object, text
from sizing_site.api.openapi import NON_BLANK
from sizing_site.api.pagination import NumberedPages
from sizing_site.api.parsers import JsonBodyParser
from sizing_site.api.views import SETUP_FIELDS, setup_query
from sizing_site.configurator import selectors as configurator
from sizing_site.configurator.forms import (
    ConfiguratorState,
    ConfigureForm,
    StateError,
    configurator_state,
)
from sizing_site.reports import selectors, services
from sizing_site.reports.forms import NameForm, SaveForm
from sizing_site.reports.models import NAME_MAX, NOTES_MAX, SavedConfiguration, ShareLink
from sizing_site.reports.share_api import MAX_SHARE_DAYS, new_link_expiry, revoked
from sizing_site.tenancy.access import Tenant, get_owned_or_404
from sizing_site.tenancy.api import TenantApiView
from sizing_site.tenancy.models import Organization, Role

TAGS = ["configurations"]
PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
SAVE_FIELDS = frozenset({"name", "notes", "tags", "model", "accelerator"}) | SETUP_FIELDS


# --- errors --------------------------------------------------------------------------


def _name(data: dict[str, Any]) -> str:
    """The body's "name", checked as the page's rename form checks it."""
    form = NameForm({"name": text(data, "name")})
    if not form.is_valid():
        raise Refused(form_errors(form))
    name: str = form.cleaned_data["name"]
    return name


# Tags sent as a list: each is one tag (commas and all), at most MAX_TAGS of at most
# TAG_MAX characters; sent as text: the save page's field (comma-separated, at most
# TAGS_TEXT_MAX characters, the first 20 tags kept).
MAX_TAGS, TAG_MAX, TAGS_TEXT_MAX = 20, 100, 300


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


def _state(
    *, model_slug: str, accelerator_slug: str, query: dict[str, str], tenant: Tenant
) -> ConfiguratorState:
    """`configurator_state` (the save page's path) over the public catalog and the
    tenant's own rows; when it refuses, the reason under the field it belongs to: an
    unknown slug (another organisation's own row too) is a 404 naming it, a setup field
    the page's ConfigureForm rejects is a 400 naming that field."""
    organizations = [tenant.organization]
    try:
        return configurator_state(
            model_slug=model_slug,
            accelerator_slug=accelerator_slug,
            query=query,
            organizations=organizations,
        )
    except StateError as exc:
        raise _state_refusal(model_slug, accelerator_slug, query, str(exc), organizations) from None


def _state_refusal(
    model_slug: str,
    accelerator_slug: str,
    query: dict[str, str],
    message: str,
    organizations: list[Organization],
) -> Refused:
    try:
        model, accelerator = configurator.configuration_rows(
            model_slug=model_slug, accelerator_slug=accelerator_slug, organizations=organizations
        )
    except LLMModel.DoesNotExist:
        return Refused({"model": [_("No model with this slug.")]}, status.HTTP_404_NOT_FOUND)
    except Accelerator.DoesNotExist:
        return Refused({"accelerator": [_("No card with this slug.")]}, status.HTTP_404_NOT_FOUND)
    scope = configurator.page_scope(model=model, accelerator=accelerator)
    if scope.max_context_tokens is not None and scope.sizeable_card and scope.engines:
        form = ConfigureForm.for_pair(
            query,
            model=model,
            accelerator=accelerator,
            max_context_tokens=scope.max_context_tokens,
            engines=scope.engines,
        )
        if not form.is_valid():
            return Refused(form_errors(form, {"__all__": "setup"}))
    return Refused({"setup": [message]})


def _state_units(state: ConfiguratorState) -> float:
    """Sizing a state costs one estimate of its model (sizing_site.api.budget)."""
    return budget.estimate_units(layers=stated_layers(state.model.config))


def _setup_query(data: dict[str, Any]) -> dict[str, str]:
    """The setup fields as the configurator's query parameters (as /api/v1/estimate/)."""
    return setup_query(data)


# --- output --------------------------------------------------------------------------


def _summary(c: SavedConfiguration) -> dict[str, Any]:
    """One row of the list: what the list page shows, from the frozen snapshot."""
    result, setup = c.snapshot["result"], c.snapshot["setup"]
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


def _link(request: Request, link: ShareLink) -> dict[str, Any]:
    return {
        "code": str(link.code),
        "configuration": str(link.configuration.code),
        "configuration_name": link.configuration.name,
        # Only in the answer that creates the link: the database keeps its SHA-256.
        "token": link.token or None,
        "url": request.build_absolute_uri(reverse("reports:shared", args=[link.token]))
        if link.token
        else None,
        "created_by": link.created_by.get_username() if link.created_by else None,
        "created": link.created.isoformat(),
        "expires_at": link.expires_at.isoformat() if link.expires_at else None,
        "revoked_at": link.revoked_at.isoformat() if link.revoked_at else None,
    }


# --- schema --------------------------------------------------------------------------

_STR = {"type": "string"}
_UUID = {"type": "string", "format": "uuid"}
_TIME = {"type": "string", "format": "date-time"}
_NULL_STR = {"type": "string", "nullable": True}
_NULL_TIME = {"type": "string", "format": "date-time", "nullable": True}
_TAGS = {"type": "array", "items": _STR}
_JSON = {"type": "object", "additionalProperties": True}

SUMMARY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": _UUID,
        "name": _STR,
        "notes": _STR,
        "tags": _TAGS,
        "model": {"type": "string", "description": "Model slug."},
        "accelerator": {"type": "string", "description": "Accelerator slug."},
        "quant": _STR,
        "gpus": {"type": "integer"},
        "verdict": {"type": "string", "description": "The saved fit verdict."},
        "per_device_bytes": {"type": "integer"},
        "saved_by": _NULL_STR,
        "saved_at": _TIME,
    },
    "required": ["code", "name", "model", "accelerator", "saved_at"],
}
PAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "next": {"type": "string", "format": "uri", "nullable": True},
        "previous": {"type": "string", "format": "uri", "nullable": True},
        "results": {"type": "array", "items": SUMMARY},
    },
    "required": ["count", "results"],
}
EXPORT: dict[str, Any] = {
    "type": "object",
    "description": "A saved configuration as the report page's JSON export has it: the "
    "frozen snapshot (the estimator's result, the sized setup, the catalog figures used), "
    "the configurator's parameters and the estimator's request.",
    "properties": {
        "code": _UUID,
        "name": _STR,
        "notes": _STR,
        "tags": _TAGS,
        "saved_by": _NULL_STR,
        "saved_at": _TIME,
        "query": {"type": "object", "additionalProperties": {"type": "string"}},
        "estimator_request": _JSON,
        "snapshot": {
            "type": "object",
            "properties": {
                "result": schema.RESULT,
                "setup": _JSON,
                "backend": _STR,
                "model": _JSON,
                "accelerator": _JSON,
                "computed_at": _TIME,
            },
            "additionalProperties": True,
        },
    },
    "required": ["code", "name", "saved_at", "query", "estimator_request", "snapshot"],
}
DETAIL: dict[str, Any] = {
    **EXPORT,
    "properties": {**EXPORT["properties"], "model": _STR, "accelerator": _STR},
}
CHANGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "description": "Path into the result."},
        "old": {"type": "number", "nullable": True},
        "new": {"type": "number", "nullable": True},
        "change": {"type": "number", "nullable": True, "description": "Percent."},
        "changed": {"type": "boolean"},
    },
}
CATALOG_CHANGE: dict[str, Any] = {
    "type": "object",
    "properties": {"key": _STR, "label": _STR, "old": {}, "new": {}},
}
RECOMPUTE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": _UUID,
        "sizeable": {
            "type": "boolean",
            "description": "False when the saved parameters cannot be sized any more.",
        },
        "today": {**_JSON, "nullable": True, "description": "Today's snapshot."},
        "changes": {"type": "array", "items": CHANGE},
        "catalog_changes": {"type": "array", "items": CATALOG_CHANGE},
    },
    "required": ["code", "sizeable", "today", "changes", "catalog_changes"],
}
LINK: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": _UUID,
        "configuration": _UUID,
        "configuration_name": _STR,
        "token": {
            **_NULL_STR,
            "description": "The link's secret, in the answer that created it only (null "
            "afterwards: the database keeps its SHA-256, nobody can read it again).",
        },
        "url": {
            "type": "string",
            "format": "uri",
            "nullable": True,
            "description": "The public report, in the answer that created it only.",
        },
        "created_by": _NULL_STR,
        "created": _TIME,
        "expires_at": _NULL_TIME,
        "revoked_at": _NULL_TIME,
    },
    "required": ["code", "configuration", "token", "url", "expires_at"],
}
LINK_LIST: dict[str, Any] = {
    "type": "object",
    "properties": {"links": {"type": "array", "items": LINK}},
    "required": ["links"],
}
ACTIVITY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "actor": _NULL_STR,
                    "action": _STR,
                    "action_label": _STR,
                    "subject": _STR,
                    "at": _TIME,
                },
            },
        }
    },
    "required": ["entries"],
}
# A name as NameForm takes it: at most 120 characters, not blank once stripped.
_NAME = {"type": "string", "maxLength": NAME_MAX, "pattern": NON_BLANK}
_SLUG_TEXT = {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"}
SAVE_REQUEST: dict[str, Any] = {
    "application/json": {
        "type": "object",
        "description": "A name, and the setup as POST /api/v1/estimate/ takes it (absent "
        "setup fields at the configurator's defaults). The server sizes it.",
        "properties": {
            "name": _NAME,
            "notes": {"type": "string", "nullable": True, "maxLength": NOTES_MAX},
            "tags": {
                "oneOf": [
                    {
                        "type": "array",
                        "maxItems": MAX_TAGS,
                        "items": {"type": "string", "maxLength": TAG_MAX},
                    },
                    {
                        "type": "string",
                        "nullable": True,
                        "maxLength": TAGS_TEXT_MAX,
                        "description": "Comma-separated (the first 20 are kept).",
                    },
                ],
            },
            "model": {**_SLUG_TEXT, "description": "Model slug."},
            "accelerator": {**_SLUG_TEXT, "description": "Accelerator slug."},
            **schema.SETUP_PROPERTIES,
        },
        "required": ["name", "model", "accelerator"],
        "additionalProperties": False,
    }
}
RENAME_REQUEST: dict[str, Any] = {
    "application/json": {
        "type": "object",
        "properties": {"name": _NAME},
        "required": ["name"],
        "additionalProperties": False,
    }
}
DUPLICATE_REQUEST: dict[str, Any] = {
    "application/json": {
        "type": "object",
        "description": "No name (or null): the copy is named after the original.",
        "properties": {"name": {**_NAME, "nullable": True}},
        "additionalProperties": False,
    }
}
SHARE_REQUEST: dict[str, Any] = {
    "application/json": {
        "type": "object",
        "description": "At most one of the two; neither (or null): the link never expires.",
        "properties": {
            "expires_at": {
                **_NULL_TIME,
                "description": "A time in the future, at most 3,650 days ahead.",
            },
            "expires_in_days": {
                "type": "integer",
                "nullable": True,
                "minimum": 1,
                "maximum": MAX_SHARE_DAYS,
            },
        },
        "not": {"required": ["expires_at", "expires_in_days"]},
        "additionalProperties": False,
    }
}

BAD_TOKEN = schema.BAD_TOKEN
FORBIDDEN_READ = schema.errors("Not logged in (no session or token).")
FORBIDDEN_WRITE = schema.errors(
    "Not logged in, a viewer (writes need an editor) or a read-only token."
)
NOT_FOUND = schema.NOT_A_MEMBER


def _responses(
    ok: int, body: Any, *, write: bool = False, bad: str | None = None, missing: str = ""
) -> dict[int, Any]:
    responses: dict[int, Any] = {
        ok: body if ok != status.HTTP_204_NO_CONTENT else OpenApiResponse(description=body),
        401: BAD_TOKEN,
        403: FORBIDDEN_WRITE if write else FORBIDDEN_READ,
        404: schema.errors(missing) if missing else NOT_FOUND,
    }
    if bad:
        responses[400] = schema.errors(bad)
    return responses


# --- views ---------------------------------------------------------------------------


class ReportsApiView(TenantApiView):
    """Reads for viewers; a write (any unsafe method) needs an editor: 403 otherwise.
    The tenant is resolved first, so a non-member gets 404 whatever the method."""

    parser_classes = [JsonBodyParser]
    write_role: str = Role.EDITOR

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method not in SAFE_METHODS and not self.tenant.can(self.write_role):
            raise exceptions.PermissionDenied

    def configuration(self, code: UUID) -> SavedConfiguration:
        return get_owned_or_404(self.tenant, SavedConfiguration, code)


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
        responses=_responses(
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
            **_responses(
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
        state = _state(
            model_slug=clean["model"],
            accelerator_slug=clean["accelerator"],
            query=dict(parse_qsl(clean["query"])),
            tenant=self.tenant,
        )
        try:
            # Sizing it costs one estimate of the model (sizing_site.api.budget).
            with budget.spend(request, _state_units(state)):
                saved = services.saved_configuration_create(
                    tenant=self.tenant,
                    user=request.user,
                    name=clean["name"],
                    notes=clean["notes"],
                    tags=clean["tags"] if tags is None else tags,
                    state=state,
                )
        except StateError as exc:
            raise Refused({"setup": [str(exc)]}) from None
        return Response(_detail(saved), status=status.HTTP_201_CREATED)


class ConfigurationDetailApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_retrieve",
        summary="One saved configuration, its frozen snapshot",
        responses=_responses(200, DETAIL),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        return Response(_detail(self.configuration(code)))

    @extend_schema(
        operation_id="configurations_partial_update",
        summary="Rename a saved configuration",
        request=RENAME_REQUEST,
        responses=_responses(200, DETAIL, write=True, bad="Bad name, or another field sent."),
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
        responses=_responses(204, "Deleted.", write=True),
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
        responses={**_responses(200, RECOMPUTE), 429: schema.BUDGET_RESPONSES[429]},
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        # As the recompute page: parameters that no longer stand for a state are None.
        state: ConfiguratorState | None
        try:
            state = configurator_state(
                model_slug=configuration.model_slug,
                accelerator_slug=configuration.accelerator_slug,
                query=configuration.query,
                organizations=[self.tenant.organization],
            )
        except StateError:
            state = None
        with budget.spend(request, _state_units(state) if state else 1):
            today, changes = selectors.configuration_changes(
                configuration=configuration, state=state
            )
        catalog = (
            selectors.catalog_changes(saved=configuration.snapshot, today=today) if today else []
        )
        return Response(
            {
                "code": str(configuration.code),
                "sizeable": today is not None,
                "today": today,
                "changes": changes,
                "catalog_changes": [{**row, "label": str(row["label"])} for row in catalog],
            }
        )


class ConfigurationExportApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_export",
        summary="A saved configuration as the report page's JSON export",
        responses=_responses(200, EXPORT),
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
        responses=_responses(201, DETAIL, write=True, bad="Bad name, or another field sent."),
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


class ShareLinkCreateApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_share",
        summary="Create a public share link to a saved configuration",
        request=SHARE_REQUEST,
        responses=_responses(
            201,
            LINK,
            write=True,
            bad="A bad expiry (the field named), or public links are turned off for this "
            'organization ("detail").',
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        link = services.share_link_create(
            tenant=self.tenant,
            user=request.user,
            configuration=configuration,
            expires_at=new_link_expiry(request, self.tenant),
        )
        return Response(_link(request, link), status=status.HTTP_201_CREATED)


class ShareLinkListApi(ReportsApiView):
    @extend_schema(
        operation_id="share_links_list",
        summary="The organization's active share links",
        responses=_responses(200, LINK_LIST),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        links = selectors.share_link_list(tenant=self.tenant)
        return Response({"links": [_link(request, link) for link in links]})


class ShareLinkDetailApi(ReportsApiView):
    def link(self, code: UUID) -> ShareLink:
        return get_owned_or_404(self.tenant, ShareLink, code)

    @extend_schema(
        operation_id="share_links_retrieve",
        summary="One share link (also revoked or expired ones)",
        responses=_responses(200, LINK),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        return Response(_link(request, self.link(code)))

    @extend_schema(
        operation_id="share_links_revoke",
        summary="Revoke a share link (editors their own, admins any)",
        request=None,
        responses=_responses(
            204,
            "Revoked (also when it already was).",
            write=True,
        )
        | {
            403: schema.errors(
                "Not logged in, a viewer, a read-only token, or an editor revoking "
                "someone else's link."
            )
        },
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, code: UUID) -> Response:
        link = self.link(code)
        return revoked(
            lambda: services.share_link_revoke(tenant=self.tenant, user=request.user, link=link)
        )


class ActivityApi(ReportsApiView):
    """The org's activity log: for admins, as the activity page."""

    min_role = Role.ADMIN

    @extend_schema(
        operation_id="activity_list",
        summary="The organization's activity log, newest first (admins)",
        responses={
            200: ACTIVITY,
            401: BAD_TOKEN,
            403: schema.errors("Not logged in, or not an admin of this organization."),
            404: NOT_FOUND,
        },
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        entries = [
            {
                "actor": e.actor.get_username() if e.actor else None,
                "action": e.action,
                "action_label": str(e.get_action_display()),
                "subject": e.subject,
                "at": e.created.isoformat(),
            }
            for e in selectors.activity_list(tenant=self.tenant)
        ]
        return Response({"entries": entries})


COMPARE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "configurations": {"type": "array", "items": SUMMARY},
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "figure": _STR,
                    "kind": _STR,
                    "values": {"type": "array", "items": {}},
                    "best": {"type": "array", "items": {"type": "integer"}},
                },
            },
        },
    },
    "required": ["configurations", "rows"],
}
POLICY: dict[str, Any] = {
    "type": "object",
    "properties": {"public_links": {"type": "boolean"}},
    "required": ["public_links"],
}


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
        responses=_responses(
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


class SharePolicyApi(ReportsApiView):
    """Whether the organization allows public share links: members read it, admins set
    it (the links page's policy form, services.share_policy_update)."""

    write_role = Role.ADMIN

    @extend_schema(
        operation_id="share_policy_retrieve",
        summary="The organization's sharing policy",
        responses=_responses(200, POLICY),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        return Response({"public_links": selectors.public_links_allowed(tenant=self.tenant)})

    @extend_schema(
        operation_id="share_policy_update",
        summary="Allow or forbid public share links (admins)",
        request={"application/json": {**POLICY, "additionalProperties": False}},
        responses={
            **_responses(200, POLICY, bad="public_links missing or not true or false."),
            403: schema.errors("Not logged in, or not an admin of this organization."),
        },
        tags=TAGS,
    )
    def put(self, request: Request, org_slug: str) -> Response:
        data = json_object(request.data, frozenset({"public_links"}))
        value = data.get("public_links")
        if not isinstance(value, bool):
            raise Refused({"public_links": [_("Expected true or false.")]})
        services.share_policy_update(tenant=self.tenant, user=request.user, public_links=value)
        return Response({"public_links": value})


ORG = "o/<slug:org_slug>/"
ONE = ORG + "configurations/<uuid:code>/"

urlpatterns: list[URLPattern] = [
    path(ORG + "configurations/", ConfigurationListApi.as_view(), name="configurations"),
    path(
        ORG + "configurations/compare/",
        ConfigurationCompareApi.as_view(),
        name="configurations-compare",
    ),
    path(ONE, ConfigurationDetailApi.as_view(), name="configuration"),
    path(ONE + "recompute/", ConfigurationRecomputeApi.as_view(), name="configuration-recompute"),
    path(ONE + "export/", ConfigurationExportApi.as_view(), name="configuration-export"),
    path(ONE + "duplicate/", ConfigurationDuplicateApi.as_view(), name="configuration-duplicate"),
    path(ONE + "share-links/", ShareLinkCreateApi.as_view(), name="configuration-share"),
    path(ORG + "share-links/", ShareLinkListApi.as_view(), name="share-links"),
    path(ORG + "share-links/<uuid:code>/", ShareLinkDetailApi.as_view(), name="share-link"),
    path(ORG + "share-policy/", SharePolicyApi.as_view(), name="share-policy"),
    path(ORG + "activity/", ActivityApi.as_view(), name="activity"),
]
