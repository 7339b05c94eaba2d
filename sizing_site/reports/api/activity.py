"""The org's activity log in the API (admins), as the activity page shows it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sizing_site.apikit import schema
from sizing_site.reports import selectors
from sizing_site.reports.api.base import (
    BAD_TOKEN,
    NOT_FOUND,
    NULL_STRING,
    STRING,
    TAGS,
    TIME,
    ReportsApiView,
)
from sizing_site.tenancy.models import Role

ACTIVITY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "actor": NULL_STRING,
                    "action": STRING,
                    "action_label": STRING,
                    "subject": STRING,
                    "at": TIME,
                },
            },
        }
    },
    "required": ["entries"],
}


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
