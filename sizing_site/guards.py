"""Request guard: refuse addresses no page can answer before any view or query runs.

PostgreSQL refuses a NUL byte in any text parameter (psycopg raises, the page gives a
500), and Django decodes a query string that is not UTF-8 by replacing the bad bytes, so
a view would quietly work on different text than was sent. Both are a 400 here, once,
instead of a check in every view. Form bodies are left to the forms: Django's CharField
already refuses NUL with a field error.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.translation import gettext as _

from sizing_site.apikit.errors import error_response, is_api


def query_bytes(request: HttpRequest) -> bytes:
    """The query string as sent: WSGI hands it over as Latin-1 text of the raw bytes."""
    raw = request.META.get("QUERY_STRING", "")
    try:
        return raw.encode("iso-8859-1")
    except UnicodeEncodeError:  # a test client or ASGI server that already decoded it
        return raw.encode("utf-8", "surrogateescape")


def refusal(request: HttpRequest) -> str | None:
    """Why this request's path or query is unusable, or None when it is fine."""
    if "\x00" in request.path:  # the script prefix plus path_info: both are covered
        return _("The address contains a NUL character.")
    decoded = unquote_to_bytes(query_bytes(request).replace(b"+", b" "))
    if b"\x00" in decoded:
        return _("The query contains a NUL character.")
    try:
        decoded.decode("utf-8")
    except UnicodeDecodeError:
        return _("The query is not valid UTF-8.")
    return None


class RequestGuardMiddleware:
    """Answers 400 to a NUL byte (raw or %00) in the path or query and to a query string
    that is not UTF-8; placed before the session and locale middleware touch the request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        reason = refusal(request)
        if reason is not None:
            if is_api(request):  # the API's one error shape
                return error_response("request", reason, 400)
            return HttpResponseBadRequest(reason, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
