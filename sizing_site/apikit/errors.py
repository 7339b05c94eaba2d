"""The API's one error shape, {"errors": {"<field>": ["message", ...]}}, for every DRF
refusal (settings.REST_FRAMEWORK["EXCEPTION_HANDLER"]), and for the refusals that come
before any API view runs: an address no API route matches (handler404), a server error
(handler500) and the request guard's (sizing_site.guards).

Also the API views' shared ways to refuse input: `Refused` (errors by field, with a
status), a page form's errors under the API's names, and the checks of a JSON body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from django.utils.translation import gettext as _
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

Errors = dict[str, list[str]]


class Refused(exceptions.APIException):
    """Bad input: its errors by field, and the status it answers with (400 unless told;
    404 for a slug or code that names nothing)."""

    def __init__(self, errors: Errors, status_code: int = status.HTTP_400_BAD_REQUEST) -> None:
        super().__init__(errors)
        self.errors = errors
        self.status_code = status_code


class OverLimit(exceptions.APIException):
    """A refusal by a limit, with its figures beside the one error shape: which limit (the
    setting's name), what it allows, what the request costs, and any count it was checked
    against (sizing_site.apikit.budget). `retry_after_s` becomes the Retry-After header."""

    def __init__(self, status_code: int, message: str, **figures: Any) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.figures = figures
        self.wait: int | None = figures.get("retry_after_s")

    def body(self) -> dict[str, Any]:
        return {"errors": {"detail": [self.message]}, "detail": self.message, **self.figures}


def form_errors(form: forms.Form, rename: Mapping[str, str] | None = None) -> Errors:
    """A page form's errors under the API's names: form-wide ones under "detail" (or the
    name `rename` gives "__all__"), fields renamed as `rename` says."""
    names = {NON_FIELD_ERRORS: "detail", **(rename or {})}
    return {
        names.get(name, name): [str(m) for m in messages] for name, messages in form.errors.items()
    }


def json_object(data: Any, allowed: frozenset[str] | None = None) -> dict[str, Any]:
    """The JSON body as an object, with no field outside `allowed` (when given)."""
    if not isinstance(data, Mapping):
        raise Refused({"request": [_("Expected a JSON object.")]})
    if allowed is not None:
        unknown = sorted(str(k) for k in data if k not in allowed)
        if unknown:
            raise Refused({k: [_("Unknown field.")] for k in unknown})
    return dict(data)


def text(data: Mapping[str, Any], name: str) -> str:
    """A string field of a JSON body; absent or null is ""; anything else a 400."""
    value = data.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Refused({name: [_("Expected a string.")]})
    return value


def json_types(
    data: Mapping[str, Any], fields: Mapping[str, serializers.Field[Any, Any, Any, Any]]
) -> None:
    """A JSON body states its types, and DRF's fields are lenient about them (a number
    for a CharField, true or "1" for a number): a value of another JSON type than its
    field's is a 400 naming the field (a row named by its slug takes a string). Null is
    the field's own business (allow_null)."""
    wrong: Errors = {}
    for name, value in data.items():
        field = fields.get(name)
        if field is None or value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(field, serializers.BooleanField):
            ok, expected = isinstance(value, bool), _("Expected true or false.")
        elif isinstance(field, serializers.IntegerField):
            ok, expected = number and float(value).is_integer(), _("Expected a whole number.")
        elif isinstance(field, serializers.FloatField | serializers.DecimalField):
            ok, expected = number, _("Expected a number.")
        elif isinstance(
            field, serializers.CharField | serializers.ChoiceField | serializers.SlugRelatedField
        ):
            ok, expected = isinstance(value, str), _("Expected a string.")
        elif isinstance(field, serializers.DateField | serializers.DateTimeField):
            ok, expected = isinstance(value, str), _("Expected a date (ISO 8601).")
        else:
            continue
        if not ok:
            wrong[name] = [expected]
    if wrong:
        raise Refused(wrong)


def single_values(params: Any, names: tuple[str, ...]) -> Errors:
    """The query parameters among `names` that came twice or blank, each with its error:
    a form reads the last of repeated values and a blank one as absent (its default),
    which would hide a malformed request."""
    errors: Errors = {}
    for name in names:
        values = params.getlist(name)
        if len(values) > 1:
            errors[name] = [_("Send this parameter once.")]
        elif values and not values[0].strip():
            errors[name] = [_("Expected a value; leave the parameter out for its default.")]
    return errors


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
    if isinstance(exc, OverLimit):
        response.data = exc.body()
        return response
    data = response.data
    # Errors by field (a dict detail) keep every field, "detail" among them; a single
    # message (DRF's "Not found.", "Authentication credentials ...") goes under "detail".
    by_field = isinstance(getattr(exc, "detail", None), dict)
    if isinstance(data, dict) and data and (by_field or "detail" not in data):
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


@csrf_exempt  # it changes nothing: a PATCH to no route is a 404, not a CSRF page
def unmatched(request: HttpRequest) -> HttpResponse:
    """The API's last route: an address under /api/v1/ that no route matches, answered
    with the one error shape whatever DEBUG says, for every method. An address that only
    lacks its final slash is redirected, as CommonMiddleware's APPEND_SLASH does without
    this route."""
    path = request.path_info
    if settings.APPEND_SLASH and not path.endswith("/") and request.method in ("GET", "HEAD"):
        try:
            match = resolve(path + "/")
        except Resolver404:
            match = None
        if match is not None and match.url_name != "api-unmatched":
            return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
    return error_response("detail", _("Not found."), 404)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: under /api/ a 500 in the one error shape (a script reads JSON), else
    the site's page. A bug still; the logs have it with the request id."""
    if is_api(request):
        return error_response("detail", _("Server error."), 500)
    return defaults.server_error(request)
