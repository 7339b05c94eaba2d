"""The API's one error shape, {"errors": {"<field>": ["message", ...]}}, for every DRF
refusal (settings.REST_FRAMEWORK["EXCEPTION_HANDLER"]), and for the refusals that come
before any API view runs: an address no API route matches (handler404) and the request
guard's (sizing_site.guards)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.views import defaults
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler


def _messages(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return [str(value)]


def errors_shape(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's own refusals (not logged in, wrong method, malformed JSON, not JSON, a
    serializer's validation) in the API's one error shape. A serializer's field errors
    keep their field names; errors that name no field go under "detail" (or "request" for
    a body that cannot be parsed)."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, dict) and "detail" not in data and data:
        errors = {
            ("detail" if name == "non_field_errors" else str(name)): _messages(value)
            for name, value in data.items()
        }
        response.data = {"errors": errors}
        return response
    field = "detail"
    if isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        field = "request"
    detail = data.get("detail") if isinstance(data, dict) else None
    response.data = {"errors": {field: _messages(detail if detail is not None else data)}}
    return response


API_PREFIX = "/api/"


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def error_response(field: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"errors": {field: [message]}}, status=status)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404 (sizing_site.urls): an API address that no route matches (a code that is
    no UUID, a slug with characters no slug has) is a 404 in the one error shape, as the
    views' own 404s are; every other address gets the site's page."""
    if is_api(request):
        return error_response("detail", _("Not found."), 404)
    return defaults.page_not_found(request, exception)
