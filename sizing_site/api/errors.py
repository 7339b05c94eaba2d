"""The API's one error shape, {"errors": {"<field>": ["message", ...]}}, for every DRF
refusal (settings.REST_FRAMEWORK["EXCEPTION_HANDLER"])."""

from __future__ import annotations

from typing import Any

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
