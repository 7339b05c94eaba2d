"""Share links to saved configurations and the org's sharing policy in the API. The
links themselves are sizing_site.sharing's (as saved plans' are, planner.saved_api): the
expiry a body sets, the policy it follows, the revoke rule."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from sizing_site.apikit import schema
from sizing_site.apikit.errors import Refused, json_object
from sizing_site.reports import selectors, services
from sizing_site.reports.api.base import (
    NULL_STRING,
    NULL_TIME,
    STRING,
    TAGS,
    TIME,
    UUID_STRING,
    ReportsApiView,
    schema_responses,
)
from sizing_site.reports.models import ShareLink
from sizing_site.sharing.api import new_link_expiry, revoked
from sizing_site.sharing.forms import MAX_SHARE_DAYS
from sizing_site.sharing.selectors import public_links_allowed
from sizing_site.sharing.views import share_address
from sizing_site.tenancy.access import get_owned_or_404
from sizing_site.tenancy.models import Role

LINK: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": UUID_STRING,
        "configuration": UUID_STRING,
        "configuration_name": STRING,
        "token": {
            **NULL_STRING,
            "description": "The link's secret, in the answer that created it only (null "
            "afterwards: the database keeps its SHA-256, nobody can read it again).",
        },
        "url": {
            "type": "string",
            "format": "uri",
            "nullable": True,
            "description": "The public report, in the answer that created it only.",
        },
        "created_by": NULL_STRING,
        "created": TIME,
        "expires_at": NULL_TIME,
        "revoked_at": NULL_TIME,
    },
    "required": ["code", "configuration", "token", "url", "expires_at"],
}
LINK_LIST: dict[str, Any] = {
    "type": "object",
    "properties": {"links": {"type": "array", "items": LINK}},
    "required": ["links"],
}
SHARE_REQUEST: dict[str, Any] = {
    "application/json": {
        "type": "object",
        "description": "At most one of the two; neither (or null): the link never expires.",
        "properties": {
            "expires_at": {
                **NULL_TIME,
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

POLICY: dict[str, Any] = {
    "type": "object",
    "properties": {"public_links": {"type": "boolean"}},
    "required": ["public_links"],
}


def _link(request: Request, link: ShareLink) -> dict[str, Any]:
    return {
        "code": str(link.code),
        "configuration": str(link.configuration.code),
        "configuration_name": link.configuration.name,
        # Only in the answer that creates the link: the database keeps its SHA-256.
        "token": link.token or None,
        "url": share_address(request, link) if link.token else None,
        "created_by": link.created_by.get_username() if link.created_by else None,
        "created": link.created.isoformat(),
        "expires_at": link.expires_at.isoformat() if link.expires_at else None,
        "revoked_at": link.revoked_at.isoformat() if link.revoked_at else None,
    }


class ShareLinkCreateApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_share",
        summary="Create a public share link to a saved configuration",
        request=SHARE_REQUEST,
        responses=schema_responses(
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
        responses=schema_responses(200, LINK_LIST),
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
        responses=schema_responses(200, LINK),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        return Response(_link(request, self.link(code)))

    @extend_schema(
        operation_id="share_links_revoke",
        summary="Revoke a share link (editors their own, admins any)",
        request=None,
        responses=schema_responses(
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


class SharePolicyApi(ReportsApiView):
    """Whether the organization allows public share links: members read it, admins set
    it (the links page's policy form, services.share_policy_update)."""

    write_role = Role.ADMIN

    @extend_schema(
        operation_id="share_policy_retrieve",
        summary="The organization's sharing policy",
        responses=schema_responses(200, POLICY),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        return Response({"public_links": public_links_allowed(tenant=self.tenant)})

    @extend_schema(
        operation_id="share_policy_update",
        summary="Allow or forbid public share links (admins)",
        request={"application/json": {**POLICY, "additionalProperties": False}},
        responses={
            **schema_responses(200, POLICY, bad="public_links missing or not true or false."),
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
