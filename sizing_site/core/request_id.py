"""A request id for every request: taken from X-Request-ID when it is safe, made otherwise.

It goes back on the response and, through a context variable, onto every log line written
while the request runs (see sizing_site.core.logconfig), so one id ties a proxy's access
log, our log lines and a user's bug report together.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponseBase

HEADER = "X-Request-ID"
# Only characters that cannot forge a log line or a header: a client may send anything.
_VALID = re.compile(r"[A-Za-z0-9-]{1,64}")
_NO_REQUEST = "-"

_current: ContextVar[str] = ContextVar("request_id", default=_NO_REQUEST)
logger = logging.getLogger("sizing_site.request")


def current_request_id() -> str:
    """The id of the request this thread is serving, or "-" outside a request."""
    return _current.get()


def request_id_from(header: str | None) -> str:
    """The client's id when it is 1-64 of [A-Za-z0-9-], else a fresh random one."""
    if header and _VALID.fullmatch(header):
        return header
    return uuid.uuid4().hex


def clear_request_id(**kwargs: object) -> None:
    """request_finished receiver. The id is cleared here, not in the middleware: Django
    logs 4xx/5xx responses ("Not Found: ...") after the middleware chain has returned."""
    _current.set(_NO_REQUEST)


# The URL keyword that carries a secret in the path: a public share link's token (the
# reports' /r/<token>/ and the planner's /s/plan/<token>/). Logs keep "<token>" instead.
SECRET_KWARGS = ("token",)
REDACTED = "<token>"


def loggable_path(request: HttpRequest) -> str:
    """The request's path with any secret URL part replaced, for the log: whoever reads
    the logs (or a log collector) must not be able to open the reports shared."""
    match = getattr(request, "resolver_match", None)
    path = request.path
    if match is not None:
        for name in SECRET_KWARGS:
            secret = match.kwargs.get(name)
            if isinstance(secret, str) and secret:
                path = path.replace(secret, REDACTED)
    return path


class RequestIdMiddleware:
    """Sets the request id for the request's duration and logs one line when it ends.

    Place it first in MIDDLEWARE so lines logged by every other middleware carry the id.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = request_id_from(request.META.get("HTTP_X_REQUEST_ID"))
        _current.set(request_id)
        started = time.perf_counter()
        response = self.get_response(request)
        response[HEADER] = request_id
        path = loggable_path(request)
        logger.info(
            "%s %s %s",
            request.method,
            path,
            response.status_code,
            extra={
                "method": request.method,
                "path": path,
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return response
