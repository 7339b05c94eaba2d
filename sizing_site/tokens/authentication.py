"""DRF authentication by API token: `Authorization: Bearer rs_…` (or `Token rs_…`).

Listed before SessionAuthentication, so the pages' own calls keep their session. A request
without a token header is left to the next class; a request with a bad token (unknown,
revoked, expired, malformed) is a 401; an address that sent API_TOKEN_FAILURE_LIMIT bad
tokens in a minute gets 429 for any token until that minute is over. A read-only token's
unsafe request is a 403, except POST /api/v1/estimate/, which writes nothing. The
organization limit is applied by TenantApiView through `ApiToken.allows_organization`.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request

from sizing_site.tokens.models import ApiToken
from sizing_site.tokens.services import token_for, token_touch
from sizing_site.tokens.throttling import count_failure, refuse_after_failures

KEYWORDS = (b"bearer", b"token")
# Routes a read-only token may POST to: they compute and write nothing.
READ_ONLY_POST_VIEWS = frozenset({"api:estimate"})


def token_allows(token: ApiToken, method: str, view_name: str | None) -> bool:
    """Whether this token may make this request (the read-only limit)."""
    if not token.read_only or method in SAFE_METHODS:
        return True
    return method == "POST" and view_name in READ_ONLY_POST_VIEWS


def _token_header(request: Request) -> list[bytes] | None:
    parts = get_authorization_header(request).split()
    if not parts or parts[0].lower() not in KEYWORDS:
        return None
    return parts


def _token(parts: list[bytes]) -> ApiToken | None:
    """The live token the header names, None for a malformed, unknown, revoked or expired
    one."""
    if len(parts) != 2:
        return None
    try:
        return token_for(parts[1].decode("ascii"))
    except UnicodeDecodeError:
        return None


class ApiTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = _token_header(request)
        if parts is None:
            return None
        refuse_after_failures(request)
        token = _token(parts)
        if token is None:
            count_failure(request)
            raise exceptions.AuthenticationFailed(_("Invalid, expired or revoked token."))
        match = getattr(request, "resolver_match", None)
        if not token_allows(token, request.method or "", match.view_name if match else None):
            raise exceptions.PermissionDenied(_("This token is read-only."))
        token_touch(token)
        return (token.user, token)

    def authenticate_header(self, request: Request) -> str | None:
        # A 401 (with this challenge) only where a token was sent: a caller without one keeps
        # the session's 403, as before tokens existed.
        return 'Bearer realm="api"' if _token_header(request) is not None else None
