"""Request body limits: a body over its address's limit is a 413 before anything reads it.

Django reads a body only when something touches request.POST, FILES or body (the CSRF
check does, on every POST that carries a CSRF cookie), and then takes all of it: form
fields into memory, an upload into a temporary file, whatever its size. DRF reads the API's
bodies with no cap at all. This middleware runs before both and knows each address's limit
from its URL name alone:

- a declared Content-Length over the limit is refused unread;
- a body sent without one (chunked) is read here, into a spooled file, and refused as soon
  as it passes the limit; one within it is handed on with its length set, as if declared
  (Django alone would see an empty body);
- past this point Django reads at most the declared length, so a client that sends more
  than it declared is not read further.

Under ASGI Django reads the whole body before any middleware runs: there only the proxy's
limit (docs/operations.md) protects the disk.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import IO

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import filesizeformat
from django.urls import Resolver404, resolve
from django.utils import translation
from django.utils.translation import gettext as _

from catalog.forms import MAX_WHOLE_GGUF_BYTES
from catalog.services.configs import MAX_CONFIG_BYTES
from sizing_site.apikit.errors import error_response, is_api
from sizing_site.owncatalog.forms import MAX_MODEL_POST_BYTES
from sizing_site.prices.forms import MAX_FEED_BYTES

# A user name, a password and a CSRF token.
LOGIN_BYTES = 64 * 1024
# Every other page's form: a few fields, notes of a few kilobytes.
FORM_BYTES = 1024 * 1024
# A JSON body: a config.json of up to 1 MB or a price feed of up to 2 MB sent as JSON text,
# escaped (a non-ASCII character becomes a 6-byte \u escape).
API_BYTES = 8 * 1024 * 1024
# A form's other fields and the multipart framing around its upload.
FRAMING = 64 * 1024
# Pasted config.json (a browser may send a character as up to 4 bytes) beside an uploaded
# one; also the admin's change forms, whose JSON fields hold a config.json.
CONFIG_FORM_BYTES = 4 * MAX_CONFIG_BYTES + FRAMING
ADMIN_BYTES = CONFIG_FORM_BYTES
# By URL name: the login pages, and the pages that take an upload (the form checks the
# upload's own cap again, with a message on the page).
BY_NAME = {
    "login": LOGIN_BYTES,
    "admin:login": LOGIN_BYTES,
    "catalog:gguf-upload": MAX_WHOLE_GGUF_BYTES + FRAMING,
    "owncatalog:model-new": MAX_MODEL_POST_BYTES,
    "catalog:config-import": CONFIG_FORM_BYTES,
    "pricing:org-feed": MAX_FEED_BYTES + FRAMING,
}
BY_NAMESPACE = {"api": API_BYTES, "admin": ADMIN_BYTES}
CHUNK_BYTES = 64 * 1024


def body_limit(path_info: str) -> int:
    """The largest body the address takes; an address no route matches gets FORM_BYTES
    (its 404 reads nothing)."""
    try:
        # Before LocaleMiddleware: i18n_patterns match the active language's prefix only.
        with translation.override(translation.get_language_from_path(path_info)):
            match = resolve(path_info)
    except Resolver404:
        return FORM_BYTES
    if match.view_name in BY_NAME:
        return BY_NAME[match.view_name]
    return BY_NAMESPACE.get(match.namespaces[0] if match.namespaces else "", FORM_BYTES)


def _refusal(request: HttpRequest, message: str, status: int) -> HttpResponse:
    if is_api(request):  # the API's one error shape
        return error_response("request", message, status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _too_large(request: HttpRequest, limit: int) -> HttpResponse:
    # Before LocaleMiddleware too: the language of the address, else of the browser.
    with translation.override(translation.get_language_from_request(request, check_path=True)):
        message = _("The request body is too large: this address takes at most %(size)s.") % {
            "size": filesizeformat(limit)
        }
        return _refusal(request, message, 413)


def _chunked(meta: dict[str, object]) -> bool:
    """A body sent without a Content-Length that may be read to its end: only a server
    that ends the input where the body ends (gunicorn) says so; with another, Django reads
    nothing of such a body anyway."""
    encoding = str(meta.get("HTTP_TRANSFER_ENCODING", "")).lower()
    return "chunked" in encoding and bool(meta.get("wsgi.input_terminated"))


def _spool(request: HttpRequest, spool: IO[bytes], limit: int) -> bool:
    """Copy a body sent without a Content-Length into `spool`, at most limit + 1 bytes of
    it; False when it is over the limit, else hand it on as a body of known length."""
    source = request.META["wsgi.input"]
    size = 0
    while size <= limit:
        chunk = source.read(min(CHUNK_BYTES, limit + 1 - size))
        if not chunk:
            break
        size += len(chunk)
        spool.write(chunk)
    if size > limit:
        return False
    spool.seek(0)
    request.META["CONTENT_LENGTH"] = str(size)
    # WSGIRequest made its stream from the missing length (an empty one): replace it.
    request._stream = LimitedStream(spool, size)  # type: ignore[arg-type,assignment]
    return True


class BodyLimitMiddleware:
    """413 for a body over its address's limit (body_limit), before CSRF, sessions or any
    view read it; placed right after the request guard."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = request.META.get("CONTENT_LENGTH") or ""
        if length:
            if not (length.isascii() and length.isdecimal()):
                return _refusal(request, _("The Content-Length header is not a number."), 400)
            limit = body_limit(request.path_info)
            if int(length) > limit:
                return _too_large(request, limit)
        elif _chunked(request.META):
            limit = body_limit(request.path_info)
            max_memory = settings.FILE_UPLOAD_MAX_MEMORY_SIZE
            with tempfile.SpooledTemporaryFile(max_size=max_memory) as spool:
                if not _spool(request, spool, limit):
                    return _too_large(request, limit)
                return self.get_response(request)
        return self.get_response(request)
