"""What every share-link endpoint has in common (saved configurations' in reports.api.links,
saved plans' in planner.saved_api): a new link's expiry from the JSON body, checked by the
share form and the org's sharing policy; the revoke rule's 403; the schema hook that says
a body takes one expiry at most."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response

from sizing_site.apikit.errors import Refused, form_errors, json_object
from sizing_site.sharing.forms import MAX_SHARE_DAYS, share_form
from sizing_site.tenancy.access import Tenant


def share_expiry(data: dict[str, Any]) -> Any:
    """ShareForm's input: "expires_at" (ISO 8601) as sent, or "expires_in_days" from now."""
    if "expires_at" in data and "expires_in_days" in data:
        raise Refused({"expires_in_days": [_("Send either expires_at or expires_in_days.")]})
    days = data.get("expires_in_days")
    if days is None:
        value = data.get("expires_at")
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise Refused({"expires_at": [_("Expected a date and time (ISO 8601).")]})
        return value or ""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_SHARE_DAYS:
        message = _("Expected a whole number of days from 1 to %(max)d.") % {"max": MAX_SHARE_DAYS}
        raise Refused({"expires_in_days": [message]})
    return timezone.now() + timedelta(days=days)


def new_link_expiry(request: Request, tenant: Tenant) -> datetime | None:
    """A new share link's expiry from the request's JSON body (None: never); a 400 with
    the field named for a bad one, or with "detail" when the org turned public links off."""
    data = json_object(request.data, frozenset({"expires_at", "expires_in_days"}))
    form = share_form({"expires_at": share_expiry(data)}, tenant=tenant)
    if not form.is_valid():
        raise Refused(form_errors(form))
    expires_at: datetime | None = form.cleaned_data["expires_at"]
    return expires_at


def one_expiry(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """A postprocessing hook (SPECTACULAR_SETTINGS): every share link's body (saved
    configurations' and saved plans') says what share_expiry reads: either expiry or
    neither, null as absent."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request"):
            _one_expiry(component)
    for item in result.get("paths", {}).values():
        for operation in item.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            for media in (body or {}).get("content", {}).values():
                _one_expiry(media.get("schema") or {})
    return result


def _one_expiry(schema: dict[str, Any]) -> None:
    properties = schema.get("properties", {})
    if {"expires_at", "expires_in_days"} <= set(properties):
        schema["not"] = {"required": ["expires_at", "expires_in_days"]}
        for name in ("expires_at", "expires_in_days"):
            properties[name] = {**properties[name], "nullable": True}


def revoked(revoke: Callable[[], object]) -> Response:
    """Call a share link's revoke service: 204, or 403 for an editor revoking someone
    else's link (editors revoke their own links, admins any)."""
    try:
        revoke()
    except DjangoPermissionDenied:
        raise exceptions.PermissionDenied(
            _("Only an admin may revoke someone else's link.")
        ) from None
    return Response(status=status.HTTP_204_NO_CONTENT)
