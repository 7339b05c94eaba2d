"""The OpenAPI schema (/api/v1/schema/) and its Swagger UI (/api/v1/docs/), with the
estimate endpoint's request and response shapes and real examples
(schema_examples.json: recorded calls, which tests/api/test_schema.py re-runs)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from estimator.api.schema import KV_DTYPES
from sizing_site.configurator.commands import ENGINE_NAMES
from sizing_site.explore.forms import MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS
from sizing_site.tenancy.models import Role

EXAMPLES_FILE = Path(__file__).with_name("schema_examples.json")


@cache
def recorded() -> dict[str, Any]:
    """The recorded calls by name: {"request": body, "status": code, "response": body}."""
    data: dict[str, Any] = json.loads(EXAMPLES_FILE.read_text())
    return data


class SchemaView(SpectacularAPIView):
    """The OpenAPI 3 schema: YAML by default, JSON for Accept: application/json or
    ?format=json."""


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

# --- the work budget (sizing_site.api.budget) ------------------------------------------

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


# A context as the explore pages' forms take it (a model's own limit besides, which no
# schema can state: a 400 naming ctx).
CONTEXT: dict[str, Any] = {
    "type": "integer",
    "minimum": MIN_CONTEXT_TOKENS,
    "maximum": MAX_CONTEXT_TOKENS,
}

# --- estimate ------------------------------------------------------------------------

_RANGE = {
    "type": "object",
    "description": "A speed with its range.",
    "properties": {k: {"type": "number"} for k in ("estimate", "low", "high")},
    "required": ["estimate", "low", "high"],
}
_NULLABLE_INT = {"type": "integer", "nullable": True}
_NULLABLE_NUMBER = {"type": "number", "nullable": True}

# The configurator's setup fields within ConfigureForm's own bounds. What the model and
# the card allow besides (the context limit, the engines of the card, the weights of the
# model, its layers) is checked against them: a 400 naming the field.
SETUP_PROPERTIES: dict[str, Any] = {
    "quant": {
        "type": "string",
        "nullable": True,
        "description": "Quant name; empty, null or absent: best that fits.",
    },
    "ctx": {"type": "integer", "minimum": 1, "description": "Context tokens."},
    "gpus": {"type": "integer", "minimum": 1, "maximum": 64},
    "seqs": {
        "type": "integer",
        "minimum": 1,
        "maximum": 4096,
        "description": "Concurrent sequences.",
    },
    "kv": {"type": "string", "enum": list(KV_DTYPES), "description": "KV cache type."},
    "engine": {
        "type": "string",
        "enum": list(ENGINE_NAMES),
        "description": "Engine (one that runs on the card).",
    },
    "offload": {"type": "integer", "minimum": 0, "maximum": 100, "description": "% offloaded."},
    "layers": {**_NULLABLE_INT, "description": "Layers offloaded to the host."},
    "moe": {"type": "boolean", "description": "Offload MoE experts to the host."},
    "moe_layers": _NULLABLE_INT,
    "host_bw": {
        **_NULLABLE_NUMBER,
        "minimum": 1,
        "maximum": 2000,
        "description": "Host memory bandwidth, GB/s.",
    },
    "prompt": {"type": "integer", "minimum": 1, "description": "Prompt tokens."},
    "output": {"type": "integer", "minimum": 1, "description": "Output tokens."},
}

RENT_PROPERTIES: dict[str, Any] = {
    "hours": {"type": "number", "minimum": 1, "maximum": 24, "description": "Active hours a day."},
    "hw_usd": {
        "type": "number",
        "minimum": 0,
        "maximum": 1e9,
        "description": "Hardware price, USD.",
    },
    "power_w": {"type": "number", "minimum": 0, "maximum": 1e6, "description": "Power draw, W."},
    "kwh_usd": {"type": "number", "minimum": 0, "maximum": 10, "description": "USD per kWh."},
    "pue": {"type": "number", "minimum": 1, "maximum": 5},
    "years": {"type": "number", "minimum": 0.5, "maximum": 15, "description": "Pay-off years."},
    "busy": {"type": "number", "minimum": 1, "maximum": 100, "description": "Busy share, %."},
}

SHORTCUT_REQUEST: dict[str, Any] = {
    "type": "object",
    "title": "Catalog shortcut",
    "description": "A catalog model and card by slug, and the configurator's setup fields "
    "under its query-parameter names; absent ones at the page's defaults. The rent-or-buy "
    "fields set the owner's cost (defaults: the catalog's price and power); analysis: true "
    "adds the page's deeper sections.",
    "properties": {
        "model": {"type": "string", "description": "Model slug."},
        "accelerator": {"type": "string", "description": "Accelerator slug."},
        **SETUP_PROPERTIES,
        **RENT_PROPERTIES,
        "analysis": {"type": "boolean", "description": "Add the deeper sections."},
    },
    "required": ["model", "accelerator"],
    "additionalProperties": False,
}
# The estimator's request at its top level (estimator.api.parse, TOP_LEVEL); each section
# is read and checked by the estimator, which names the field it refuses.
_SECTION = {"type": "object", "nullable": True, "additionalProperties": True}
RAW_REQUEST: dict[str, Any] = {
    "type": "object",
    "title": "Estimator request",
    "description": 'The estimator\'s own request (docs/estimator.md, "The request").',
    "properties": {
        "request": {
            "type": "object",
            "properties": {
                **{
                    name: _SECTION
                    for name in ("weights", "engine", "workload", "pricing", "finetune", "serving")
                },
                "model": {**_SECTION, "nullable": False, "description": "hf_config and more."},
                "device": {**_SECTION, "nullable": False},
                "recommend": {"type": "boolean", "nullable": True},
                "id": {
                    # Echoed as sent, any text (openapi.NO_NUL does not apply).
                    "oneOf": [{"type": "string", "x-any-text": True}, {"type": "integer"}],
                    "nullable": True,
                },
            },
            "required": ["model", "device"],
            "additionalProperties": False,
        }
    },
    "required": ["request"],
    "additionalProperties": False,
}
# A batch's item is sized or refused on its own: one that is no valid item is answered in
# its place with its errors, and the batch is still a 200.
BATCH_ITEM: dict[str, Any] = {
    "description": "A catalog shortcut or an estimator request, as one item's body; "
    'anything else is answered in its place with {"errors": ...}.',
    "anyOf": [SHORTCUT_REQUEST, RAW_REQUEST, {}],
}
ESTIMATE_BODY: dict[str, Any] = {
    "oneOf": [
        SHORTCUT_REQUEST,
        RAW_REQUEST,
        {"type": "array", "title": "Batch", "maxItems": 100, "items": BATCH_ITEM},
    ]
}
ESTIMATE_REQUEST = {"application/json": ESTIMATE_BODY}

RESULT: dict[str, Any] = {
    "type": "object",
    "title": "Estimate",
    "description": 'The estimator\'s result (docs/estimator.md, "The result"). A catalog '
    "shortcut adds model, accelerator, setup (the sized setup), cost, launch_commands and, "
    "when asked, analysis.",
    "properties": {
        "model": {
            "type": "object",
            "properties": {"slug": {"type": "string"}, "name": {"type": "string"}},
        },
        "accelerator": {
            "type": "object",
            "properties": {"slug": {"type": "string"}, "name": {"type": "string"}},
        },
        "setup": {
            "type": "object",
            "properties": {**SETUP_PROPERTIES, "backend": {"type": "string"}},
        },
        **{
            name: {"type": "integer"}
            for name in (
                "params_total",
                "params_active",
                "params_multimodal",
                "weights_bytes",
                "per_device_weights_bytes",
                "multimodal_bytes",
                "offloaded_bytes",
                "kv_cache_bytes",
                "kv_cache_bytes_per_token",
                "overhead_bytes",
                "total_bytes",
                "per_device_bytes",
                "usable_bytes_per_device",
                "max_context_tokens",
                "kv_cache_capacity_tokens",
                "max_concurrent_sequences",
            )
        },
        "overhead_breakdown": {"type": "object", "additionalProperties": {"type": "integer"}},
        "fit": {
            "type": "object",
            "properties": {
                "verdict": {"type": "string"},
                "reserve_bytes": {"type": "integer"},
                "reserve_fraction": {"type": "number"},
                "utilisation": {"type": "number"},
            },
        },
        "decode_tokens_per_s": _RANGE,
        "aggregate_decode_tokens_per_s": _RANGE,
        "prefill_tokens_per_s": _RANGE,
        "ttft_s": _RANGE,
        "explanation": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "figure": {"type": "string"},
                    "formula": {"type": "string"},
                    "inputs": {"type": "object", "additionalProperties": True},
                    "value": {},
                    "source": {"type": "string"},
                },
            },
        },
        "notes": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "speed_calibrated": {"type": "boolean"},
        "cost": {
            "type": "object",
            "description": "Cost per 1M output tokens: the cheapest public cloud offer's, "
            "else owning the hardware.",
            "properties": {
                "usd_per_million_tokens": _NULLABLE_NUMBER,
                "source": {"type": "string", "nullable": True, "enum": ["cloud", "owned", None]},
                "cloud_offer": {"type": "object", "nullable": True, "additionalProperties": True},
                "owned_usd_per_million_tokens": _NULLABLE_NUMBER,
                "base_price": {"type": "boolean"},
            },
        },
        "launch_commands": {
            "type": "object",
            "description": "By engine: the command line (null when the engine refuses the "
            "setup, the reason in refused) and its notes.",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "engine": {"type": "string"},
                    "text": {"type": "string", "nullable": True},
                    "refused": {"type": "string", "nullable": True},
                    "notes": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "analysis": {
            "type": "object",
            "description": "The configurator's deeper sections (with analysis: true).",
            "properties": {
                "hours_per_day": {"type": "number"},
                "offers": {"type": "array", "items": {"type": "object"}},
                "cheapest_offer": {"type": "object", "nullable": True},
                "rent_vs_buy": {"type": "object", "nullable": True},
                "owner_month": {"type": "object", "nullable": True},
                "recommended": {"type": "object"},
                "quant_matrix": {"type": "array", "items": {"type": "object"}},
                "memory_by_context": {"type": "array", "items": {"type": "object"}},
                "make_it_fit": {"type": "array", "items": {"type": "object"}},
                "kv_alternatives": {"type": "array", "items": {"type": "object"}},
                "finetune": {"type": "array", "items": {"type": "object"}},
            },
        },
    },
    "required": ["weights_bytes", "total_bytes", "per_device_bytes", "fit", "explanation"],
}
ESTIMATE_RESPONSE: dict[str, Any] = {
    "oneOf": [RESULT, {"type": "array", "items": {"oneOf": [RESULT, ERRORS]}}]
}


def _example(name: str, title: str, *, request: bool = True) -> list[OpenApiExample]:
    call = recorded()[name]
    found = [
        OpenApiExample(
            title, value=call["response"], response_only=True, status_codes=[str(call["status"])]
        )
    ]
    if request:
        found.append(OpenApiExample(title, value=call["request"], request_only=True))
    return found


def estimate_examples() -> list[OpenApiExample]:
    return [
        *_example("shortcut", "Catalog shortcut"),
        *_example("raw", "Estimator request"),
        *_example("batch", "Batch with one bad item"),
        *_example("bad_input", "Bad input"),
        *_example("unknown_slug", "Unknown slug"),
    ]


ESTIMATE_RESPONSES: dict[int, OpenApiResponse] = {
    200: OpenApiResponse(
        response=ESTIMATE_RESPONSE,
        description="One item: its result. A batch: a list in the same order, a result "
        'or an {"errors": ...} object per item.',
    ),
    400: errors("Bad input, the field named; or a batch of more than 100 items."),
    403: NOT_LOGGED_IN,
    404: errors("No model or card with this slug."),
    413: BUDGET_RESPONSES[413],
    429: BUDGET_RESPONSES[429],
}

# --- tenancy members -----------------------------------------------------------------

MEMBERSHIP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "format": "uuid", "description": "The membership's code."},
        "username": {"type": "string"},
        "role": {"type": "string", "enum": list(Role.values)},
    },
    "required": ["code", "username", "role"],
}
MEMBER_LIST: dict[str, Any] = {
    "type": "object",
    "properties": {
        "organization": {"type": "string", "description": "The organization's slug."},
        "members": {"type": "array", "items": MEMBERSHIP},
    },
    "required": ["organization", "members"],
}
NOT_A_MEMBER = errors(
    "Not a member of this organization (or no such organization or object).",
    OpenApiExample("Not found", value={"errors": {"detail": ["Not found."]}}, response_only=True),
)


def member_list_responses() -> dict[int, OpenApiResponse]:
    call = recorded()["members"]
    example = OpenApiExample("Members", value=call["response"], response_only=True)
    return {
        200: OpenApiResponse(response=MEMBER_LIST, examples=[example]),
        403: NOT_LOGGED_IN,
        404: NOT_A_MEMBER,
    }


def member_detail_responses() -> dict[int, OpenApiResponse]:
    member = recorded()["members"]["response"]["members"][0]
    example = OpenApiExample("Member", value=member, response_only=True)
    return {
        200: OpenApiResponse(response=MEMBERSHIP, examples=[example]),
        403: NOT_LOGGED_IN,
        404: NOT_A_MEMBER,
    }
