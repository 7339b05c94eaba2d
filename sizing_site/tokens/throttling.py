"""Throttles per user and per token. Rates come from REST_FRAMEWORK's
DEFAULT_THROTTLE_RATES ("user", "token"), read at each request so settings can change them."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from sizing_site.tokens.models import ApiToken


def _rate(scope: str | None) -> str | None:
    rates: dict[str, Any] = api_settings.DEFAULT_THROTTLE_RATES or {}
    rate = rates.get(scope or "")
    return str(rate) if rate is not None else None


class PerUserThrottle(UserRateThrottle):
    """All of a user's calls (session and every token together); by address when anonymous."""

    scope = "user"

    def get_rate(self) -> str | None:
        return _rate(self.scope)


class PerTokenThrottle(SimpleRateThrottle):
    """Each token's own calls; calls without a token are not counted here."""

    scope = "token"

    def get_rate(self) -> str | None:
        return _rate(self.scope)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}
