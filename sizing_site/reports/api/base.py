"""What every reports endpoint shares: the base view (who may read and write), the shape
of its documented responses, and the schema's building blocks."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request

from sizing_site.apikit import schema
from sizing_site.apikit.parsers import JsonBodyParser
from sizing_site.reports.models import SavedConfiguration
from sizing_site.tenancy.access import get_owned_or_404
from sizing_site.tenancy.api import TenantApiView
from sizing_site.tenancy.models import Role

TAGS = ["configurations"]

STRING = {"type": "string"}
UUID_STRING = {"type": "string", "format": "uuid"}
TIME = {"type": "string", "format": "date-time"}
NULL_STRING = {"type": "string", "nullable": True}
NULL_TIME = {"type": "string", "format": "date-time", "nullable": True}
TAG_LIST = {"type": "array", "items": STRING}
JSON_OBJECT = {"type": "object", "additionalProperties": True}

BAD_TOKEN = schema.BAD_TOKEN
FORBIDDEN_READ = schema.errors("Not logged in (no session or token).")
FORBIDDEN_WRITE = schema.errors(
    "Not logged in, a viewer (writes need an editor) or a read-only token."
)
NOT_FOUND = schema.NOT_A_MEMBER


def schema_responses(
    ok: int, body: Any, *, write: bool = False, bad: str | None = None, missing: str = ""
) -> dict[int, Any]:
    """An operation's documented answers: `ok` with `body`, 401, 403 (an editor's for a
    write), 404 (`missing` when it says more than "not a member"), 400 when `bad` says why."""
    responses: dict[int, Any] = {
        ok: body if ok != status.HTTP_204_NO_CONTENT else OpenApiResponse(description=body),
        401: BAD_TOKEN,
        403: FORBIDDEN_WRITE if write else FORBIDDEN_READ,
        404: schema.errors(missing) if missing else NOT_FOUND,
    }
    if bad:
        responses[400] = schema.errors(bad)
    return responses


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
