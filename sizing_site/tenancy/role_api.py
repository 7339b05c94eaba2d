"""An org API view whose roles follow the method: reads for viewers, writes for editors,
DELETE for admins (the fleet's and the own catalog's APIs), and the schema's responses
for it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request

from sizing_site.apikit import schema
from sizing_site.apikit.parsers import JsonBodyParser
from sizing_site.tenancy.api import TenantApiView
from sizing_site.tenancy.models import Role

FORBIDDEN_READ = schema.errors("Not logged in (no session or token).")
FORBIDDEN_WRITE = schema.errors(
    "Not logged in, a read-only token, or a role too low (editors write, admins delete)."
)


def role_responses(ok: int, body: Any, *, write: bool = False, bad: str = "") -> dict[int, Any]:
    """The responses of a RoleApiView's operation: `ok` with `body` (a description for
    204), 401, 403 (a write's or a read's), 404 for a non-member, and 400 when `bad`."""
    responses: dict[int, Any] = {
        ok: body if ok != status.HTTP_204_NO_CONTENT else OpenApiResponse(description=body),
        401: schema.BAD_TOKEN,
        403: FORBIDDEN_WRITE if write else FORBIDDEN_READ,
        404: schema.NOT_A_MEMBER,
    }
    if bad:
        responses[400] = schema.errors(bad)
    return responses


class RoleApiView(TenantApiView):
    """An org's API view: reads need a viewer, writes (unsafe methods) an editor, DELETE
    an admin, else 403; a non-member gets 404 whatever the method (TenantApiView)."""

    parser_classes = [JsonBodyParser]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method == "DELETE":
            needed = Role.ADMIN
        elif request.method in SAFE_METHODS:
            needed = Role.VIEWER
        else:
            needed = Role.EDITOR
        if not self.tenant.can(needed):
            raise exceptions.PermissionDenied
