"""The OpenAPI schema (/api/v1/schema/) and its Swagger UI (/api/v1/docs/), the shapes
every endpoint shares (the error shape, the refusals around every operation, the work
budget's) and the recorded calls the endpoints' examples quote (schema_examples.json,
which tests/api/test_schema.py re-runs). Each app's own shapes live beside its endpoints
(configurator.api_schema, explore.api_schema, tenancy.api_schema)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import translation
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.request import Request
from rest_framework.response import Response

EXAMPLES_FILE = Path(__file__).with_name("schema_examples.json")


@cache
def recorded() -> dict[str, Any]:
    """The recorded calls by name: {"request": body, "status": code, "response": body}."""
    data: dict[str, Any] = json.loads(EXAMPLES_FILE.read_text())
    return data


# The generated schema per language, kept for the process's life: it depends only on the
# code (its enums are the models' fixed choices, no catalog rows), and generating it takes
# about half a second a request (the Swagger UI asks for it on every visit). Its rendered
# bytes are kept beside it per accepted media type: PyYAML writes the YAML in pure Python,
# ~0.2 s a request (9.5 % of the viewer's hostile-input walk, which asks for it often).
@dataclass
class _Schema:
    data: dict[str, Any]
    # accepted renderer and media type -> (Content-Type, body)
    rendered: dict[str, tuple[str, bytes]] = field(default_factory=dict)


_SCHEMAS: dict[str, _Schema] = {}


class _RenderedOnce(Response):
    """The schema's Response: rendered once per accepted media type (the renderer, its
    version parameter), then served from `kept.rendered` with the same Content-Type."""

    def __init__(self, kept: _Schema, **kwargs: Any) -> None:
        super().__init__(data=kept.data, **kwargs)
        self.kept = kept

    @property
    def rendered_content(self) -> Any:  # bytes (DRF's stubs: Any)
        key = f"{self.accepted_renderer.format} {self.accepted_media_type}"
        found = self.kept.rendered.get(key)
        if found is None:
            body = super().rendered_content  # sets the Content-Type header
            found = self.kept.rendered[key] = (self["Content-Type"], body)
        self["Content-Type"] = found[0]
        return found[1]


class SchemaView(SpectacularAPIView):
    """The OpenAPI 3 schema: YAML by default, JSON for Accept: application/json or
    ?format=json. Generated once per language and process, and rendered once per language
    and format (_SCHEMAS); a request naming a version, or a language the site does not
    offer, gets a fresh one."""

    def _get_schema_response(self, request: Request) -> Response:
        language = translation.get_language()
        offered = {code for code, _ in settings.LANGUAGES}
        version = self.api_version or request.version or self._get_version_parameter(request)
        # a schema for the caller's permissions (not public) would differ by user
        if version or language not in offered or not self.serve_public:
            return super()._get_schema_response(request)
        kept = _SCHEMAS.get(language)
        if kept is None:
            generator = self.generator_class(urlconf=self.urlconf, patterns=self.patterns)
            kept = _SCHEMAS[language] = _Schema(generator.get_schema(request=request, public=True))
        filename = self._get_filename(request, version)
        return _RenderedOnce(
            kept, headers={"Content-Disposition": f'inline; filename="{filename}"'}
        )


class DocsView(SpectacularSwaggerSplitView):
    """Swagger UI. The split view serves its start-up script as a file of its own
    (?script), and the page's template has no inline style, for the site's CSP."""

    template_name = "api/docs.html"
    url_name = "api:schema"
    title = "Rightsize API"


# --- shared shapes -------------------------------------------------------------------

ERRORS: dict[str, Any] = {
    "type": "object",
    "description": "One error shape: the field named, its messages. Errors naming no field "
    'are under "detail" ("request" for a body that is not JSON).',
    "properties": {
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        }
    },
    "required": ["errors"],
}


def errors(description: str, *examples: OpenApiExample) -> OpenApiResponse:
    return OpenApiResponse(response=ERRORS, description=description, examples=list(examples))


BAD_TOKEN = errors(
    "An API token was sent that is invalid, expired or revoked.",
    OpenApiExample(
        "Bad token",
        value={"errors": {"detail": ["Invalid, expired or revoked token."]}},
        response_only=True,
    ),
)


NOT_LOGGED_IN = errors(
    "Not logged in (no session or token).",
    OpenApiExample(
        "Not logged in",
        value={"errors": {"detail": ["Authentication credentials were not provided."]}},
        response_only=True,
    ),
)

# --- the work budget (sizing_site.apikit.budget) ------------------------------------------

OVER_LIMIT: dict[str, Any] = {
    "type": "object",
    "description": "The one error shape, with the limit's figures beside it.",
    "properties": {
        **ERRORS["properties"],
        "detail": {"type": "string", "description": "The message in errors.detail."},
        "limit": {
            "type": "string",
            "description": "The setting that refused the request: API_COST_PER_REQUEST, "
            "API_COST_PER_MINUTE_USER, API_COST_PER_MINUTE_TOKEN, API_CONCURRENT_PER_USER "
            "or API_WORK_DEADLINE_S.",
        },
        "allowed": {"type": "integer", "description": "What the limit allows."},
        "cost": {"type": "integer", "description": "The request's price in work units."},
        "spent": {"type": "integer", "description": "Work units already spent this minute."},
        "in_flight": {"type": "integer", "description": "Priced requests running now."},
        "retry_after_s": {"type": "integer", "description": "As the Retry-After header."},
    },
    "required": ["errors", "detail", "limit", "allowed", "cost"],
}


def _over_limit(description: str, name: str, value: dict[str, Any]) -> OpenApiResponse:
    example = OpenApiExample(name, value=value, response_only=True)
    return OpenApiResponse(response=OVER_LIMIT, description=description, examples=[example])


def _refusal(message: str, **figures: Any) -> dict[str, Any]:
    return {"errors": {"detail": [message]}, "detail": message, **figures}


BUDGET_RESPONSES: dict[int, OpenApiResponse] = {
    413: _over_limit(
        "The request costs more work units than one request may (API_COST_PER_REQUEST).",
        "Over the per-request budget",
        _refusal(
            "This request costs 1000 work units; one request may cost at most 500. Send "
            "fewer items.",
            limit="API_COST_PER_REQUEST",
            allowed=500,
            cost=1000,
        ),
    ),
    429: OpenApiResponse(
        # A throttle's 429 (any operation's: limit_responses) has no figures.
        response={"anyOf": [OVER_LIMIT, ERRORS]},
        description="The user's or the token's work units for this minute are spent, or the "
        "user has as many priced requests in flight as allowed (with the figures); or a "
        "request throttle (API_THROTTLE_USER, API_THROTTLE_TOKEN, API_TOKEN_FAILURE_LIMIT: "
        "the error only). Retry-After says when to ask again.",
        examples=[
            OpenApiExample(
                "Minute spent",
                value=_refusal(
                    "This request costs 400 work units and 2800 of the 3000 a minute allows "
                    "are spent; try again in 41 s.",
                    limit="API_COST_PER_MINUTE_USER",
                    allowed=3000,
                    cost=400,
                    spent=2800,
                    retry_after_s=41,
                ),
                response_only=True,
            )
        ],
    ),
    503: _over_limit(
        "The work did not finish within the time limit (API_WORK_DEADLINE_S).",
        "Time limit",
        _refusal(
            "The work did not finish within the time limit of 20 s; try again later (a "
            "card sweep keeps what it finished).",
            limit="API_WORK_DEADLINE_S",
            allowed=20,
            cost=120,
        ),
    ),
}

# --- the limits around every operation (openapi.AutoSchema adds what one lacks) -------

_JSON_ERRORS = {"application/json": {"schema": ERRORS}}
# gunicorn's own refusals, before the application: a short HTML page.
_GUNICORN_PAGE = {"text/html": {"schema": {"type": "string"}}}


def limit_responses(*, parameters: bool, body: bool) -> dict[str, dict[str, Any]]:
    """The refusals any operation may answer before or around its view, as OpenAPI
    responses by status code: the request guard's 400 (with path or query parameters), a
    bad token, gunicorn's request line and header limits, the throttles, and for an
    operation with a body the body limit and the parsers."""
    found: dict[str, dict[str, Any]] = {
        "401": {"description": BAD_TOKEN.description, "content": _JSON_ERRORS},
        "414": {
            "description": "The request line (the address and its query) is longer than "
            "gunicorn's limit_request_line (GUNICORN_LIMIT_REQUEST_LINE, 4,094 bytes): "
            "refused by the server before the application.",
            "content": _GUNICORN_PAGE,
        },
        "429": {
            "description": "Too many requests: the throttles per user and per token "
            "(API_THROTTLE_USER, API_THROTTLE_TOKEN), or any token from an address that sent "
            "API_TOKEN_FAILURE_LIMIT invalid ones this minute. Retry-After says when to ask "
            "again.",
            "content": _JSON_ERRORS,
        },
        "431": {
            "description": "Too many headers, or one too long (GUNICORN_LIMIT_REQUEST_FIELDS, "
            "GUNICORN_LIMIT_REQUEST_FIELD_SIZE): refused by the server before the application.",
            "content": _GUNICORN_PAGE,
        },
    }
    if parameters:
        found["400"] = {
            "description": "A NUL character in the address or query, or a query that is not UTF-8.",
            "content": _JSON_ERRORS,
        }
    if body:
        found["413"] = {
            "description": "A body over the API's limit of 8 MiB, refused before it is read "
            "(sizing_site.body_limits).",
            "content": _JSON_ERRORS,
        }
        found["415"] = {
            "description": "A body of a media type the operation does not take.",
            "content": _JSON_ERRORS,
        }
    return found


NOT_A_MEMBER = errors(
    "Not a member of this organization (or no such organization or object).",
    OpenApiExample("Not found", value={"errors": {"detail": ["Not found."]}}, response_only=True),
)
