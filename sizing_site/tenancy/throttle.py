"""Sign-up links are throttled like the login pages: django-axes counts a link that does
not open as a failed login of one fixed name from the caller's address, so the same limit
and cool-off apply (AXES_FAILURE_LIMIT, AXES_COOLOFF_TIME) and staff see and reset the
attempts where they see the logins' (admin, `axes_reset`)."""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest

# Not a username anyone can have: Django's usernames allow no spaces or brackets.
SIGNUP_CREDENTIALS = {"username": "(invitation sign-up link)"}


def signup_locked(request: HttpRequest) -> bool:
    """Whether this address sent too many bad sign-up links within the cool-off."""
    return not AxesProxyHandler.is_allowed(request, SIGNUP_CREDENTIALS)


def signup_failed(request: HttpRequest) -> bool:
    """Count one bad link from this address; True when that one locked it out."""
    user_login_failed.send(sender=__name__, credentials=SIGNUP_CREDENTIALS, request=request)
    locked = bool(getattr(request, "axes_locked_out", False))
    # The sign-up page answers the lockout itself (its own words, 429): axes' middleware
    # would put the login page's "too many failed logins" in its place.
    request.axes_locked_out = False  # type: ignore[attr-defined]
    return locked
