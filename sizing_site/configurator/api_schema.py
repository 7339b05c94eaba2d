"""OpenAPI shapes of POST /api/v1/estimate/ (configurator.api): the request forms
(catalog shortcut, estimator request, batch), the result, and examples from the recorded
calls. Saved configurations (reports.api) reuse the setup fields and the result."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse

from estimator.engines import ENGINES, KV_DTYPES
from sizing_site.apikit.schema import (
    BUDGET_RESPONSES,
    ERRORS,
    NOT_LOGGED_IN,
    errors,
    recorded,
)

_RANGE = {
    "type": "object",
    "description": "A speed with its range.",
    "properties": {k: {"type": "number"} for k in ("estimate", "low", "high")},
    "required": ["estimate", "low", "high"],
}
# A speed of the result: a catalog shortcut whose verdict is does_not_fit shows none, as
# the configurator page (configurator.state.shown_figures); the estimator's own request
# answers the estimator's figures whatever the verdict.
_SPEED = {
    **_RANGE,
    "nullable": True,
    "description": "A speed with its range; null for a catalog shortcut whose fit verdict "
    "is does_not_fit (nothing would run at it).",
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
        "enum": list(ENGINES),
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
    "when asked, analysis; its speeds are null when the fit verdict is does_not_fit, as the "
    "configurator page shows none.",
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
                "margin_bytes": {
                    "type": "integer",
                    "description": "What the engine's defaults leave unused of each device "
                    "that its start flags release (llama.cpp: 1 GiB).",
                },
                "within_default_margin": {
                    "type": "boolean",
                    "description": "The need is above the engine's default budget but "
                    "within the device: tight, starts only with start_flags.",
                },
                "start_flags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Command-line words that start a setup within the "
                    "default margin; [] otherwise.",
                },
                "start_memory_share": _NULLABLE_NUMBER,
                "wired_limit_mb": {
                    **_NULLABLE_INT,
                    "description": "Apple: sudo sysctl iogpu.wired_limit_mb=N first.",
                },
            },
        },
        "decode_tokens_per_s": _SPEED,
        "aggregate_decode_tokens_per_s": _SPEED,
        "prefill_tokens_per_s": {
            **_SPEED,
            "description": f"{_SPEED['description']} Also null without the card's FP16 TFLOPS.",
        },
        "ttft_s": {
            **_SPEED,
            "description": f"{_SPEED['description']} Also null without the card's FP16 TFLOPS.",
        },
        "serving": {
            "type": "object",
            "nullable": True,
            "additionalProperties": True,
            "description": "vLLM, SGLang and TensorRT-LLM on the GPUs alone: the batched "
            "serving point. Left out for the llama.cpp family and offloaded setups; null "
            "for a catalog shortcut that does not fit.",
        },
        "compute_rate": {
            "type": "object",
            "description": "Only when the card publishes no FP16 rate: the rate imputed "
            "from its unit count and clock (imputed true, imputed_from the arithmetic), or "
            "none at all (decode_compute unknown: decode counts memory reads and overhead "
            "only).",
            "properties": {
                "fp16_tflops": _NULLABLE_NUMBER,
                "imputed": {"type": "boolean"},
                "imputed_from": {"type": "string", "nullable": True},
                "decode_compute": {"type": "string", "enum": ["included", "unknown"]},
            },
        },
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
        "speed_calibrated": {
            "type": "boolean",
            "description": "Whether published measurements of this engine on this backend "
            "and the device vendor's hardware back the speeds (docs/estimator.md, "
            "Calibration coverage); false: the configurator shows the uncalibrated badge "
            "and rankings leave the speeds out.",
        },
        "speed_family": {
            "type": "object",
            "nullable": True,
            "description": "The hardware family whose published measurements set the local "
            "engines' speed corrections and ranges (docs/accuracy.md, one user); null for "
            "the serving engines.",
            "properties": {
                "family": {"type": "string"},
                "label": {"type": "string"},
                "current_hardware": {"type": "boolean"},
                "calibrated": {"type": "boolean"},
                "decode_measurements": {"type": "integer"},
                "decode_ratio_low": {"type": "number"},
                "decode_ratio_high": {"type": "number"},
                "prefill_measurements": {"type": "integer"},
                "prefill_ratio_low": _NULLABLE_NUMBER,
                "prefill_ratio_high": _NULLABLE_NUMBER,
            },
        },
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
