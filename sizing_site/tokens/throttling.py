"""Throttles per user and per token, and the refusal of token checks from an address that
sent too many bad tokens. Rates come from REST_FRAMEWORK's DEFAULT_THROTTLE_RATES ("user",
"token") and API_TOKEN_FAILURES, read at each request so settings can change them.

Every count lives in sizing_site.core.counters: the shared cache, or this process's memory
while the shared cache cannot be reached (a Redis outage must not turn the API into 500s).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle, UserRateThrottle

from sizing_site.core.counters import COUNTERS
from sizing_site.tokens.models import ApiToken


def _rate(scope: str | None) -> str | None:
    rates: dict[str, Any] = api_settings.DEFAULT_THROTTLE_RATES or {}
    rate = rates.get(scope or "")
    return str(rate) if rate is not None else None


class PerUserThrottle(UserRateThrottle):
    """All of a user's calls (session and every token together); by address when anonymous."""

    scope = "user"
    cache = COUNTERS  # type: ignore[assignment]

    def get_rate(self) -> str | None:
        return _rate(self.scope)


class PerTokenThrottle(SimpleRateThrottle):
    """Each token's own calls; calls without a token are not counted here."""

    scope = "token"
    cache = COUNTERS  # type: ignore[assignment]

    def get_rate(self) -> str | None:
        return _rate(self.scope)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


# --- failed token checks -----------------------------------------------------------------

_FAILURES_KEY = "api-token-failures:%(ident)s:%(window)d"
FAILURE_WINDOW_S = 60


def client_address(request: Any) -> str:
    """The address throttles count by: REMOTE_ADDR, or the X-Forwarded-For entry that the
    trusted proxies added (REST_FRAMEWORK["NUM_PROXIES"], from API_NUM_PROXIES)."""
    return BaseThrottle().get_ident(request) or "unknown"


def _failures_key(request: Any) -> tuple[str, int]:
    """The counter of this address's bad tokens in the current minute, and the seconds
    left in that minute (fixed windows: one counter a minute, no history to keep)."""
    now = time.time()
    window, left = int(now // FAILURE_WINDOW_S), FAILURE_WINDOW_S - int(now % FAILURE_WINDOW_S)
    return _FAILURES_KEY % {"ident": client_address(request), "window": window}, left


def refuse_after_failures(request: Any) -> None:
    """Before a token is looked up: 429 when this address sent API_TOKEN_FAILURE_LIMIT bad
    tokens this minute. A good token from that address waits too, so the refusal tells a
    guesser nothing, and the database sees no more lookups from it."""
    key, left = _failures_key(request)
    if int(COUNTERS.get(key, 0) or 0) >= settings.API_TOKEN_FAILURE_LIMIT:
        message = _("Too many invalid tokens from this address; try again in %(s)d s.")
        raise exceptions.Throttled(wait=left, detail=message % {"s": left})


def count_failure(request: Any) -> None:
    """One more bad token from this address this minute."""
    key, _left = _failures_key(request)
    COUNTERS.bump(key, 1, timeout=2 * FAILURE_WINDOW_S)
