"""The OpenAPI shapes of the saved-configuration endpoints (reports.api.configurations):
what they answer and the bodies they take."""

from __future__ import annotations

from typing import Any

from sizing_site.configurator import api_schema
from sizing_site.reports.api.base import (
    JSON_OBJECT,
    NULL_STRING,
    STRING,
    TAG_LIST,
    TIME,
    UUID_STRING,
)

# Tags sent as a list: each is one tag (commas and all), at most MAX_TAGS of at most
# TAG_MAX characters; sent as text: the save page's field (comma-separated, at most
# TAGS_TEXT_MAX characters, the first 20 tags kept).
MAX_TAGS, TAG_MAX, TAGS_TEXT_MAX = 20, 100, 300

_NUMBER = {"type": "number"}
_NULL_NUMBER = {"type": "number", "nullable": True}
# The answer panel's cost as saved (reports.snapshots.CostFacts); null: nothing was priced,
# or the configuration was saved before costs were kept ("cost not recorded").
COST: dict[str, Any] = {
    "type": "object",
    "nullable": True,
    "description": "The cost per 1M output tokens as the configurator showed it when saved, "
    "and its basis: rented (the offer) or owned (the purchase and its assumptions). Null: "
    "not recorded (saved before costs were kept) or nothing priced.",
    "properties": {
        "usd_per_million": {
            **_NUMBER,
            "description": "USD per 1M output tokens at the aggregate decode speed of "
            "`sequences` sequences at once: USD/h / (tok/s x 3,600) x 1e6.",
        },
        "basis": {"type": "string", "enum": ["rented", "owned"]},
        "sequences": {"type": "integer", "description": "At this concurrency; 1: per user."},
        "rented": {
            "type": "object",
            "nullable": True,
            "description": "The cloud offer (basis rented).",
            "properties": {
                "provider": STRING,
                "instance": STRING,
                "usd_per_hour": {**_NUMBER, "description": "The setup's share of the hour."},
                "instance_usd_per_hour": _NUMBER,
                "gpus": {"type": "integer", "description": "GPUs the setup uses."},
                "offer_gpus": {"type": "integer"},
                "checked_at": {**TIME, "nullable": True, "description": "Price checked."},
            },
        },
        "owned": {
            "type": "object",
            "nullable": True,
            "description": "Owning the hardware (basis owned; beside a rented cost, the "
            "owner's figures for owned_usd_per_million).",
            "properties": {
                "purchase_usd": _NUMBER,
                "power_w": _NUMBER,
                "years": {**_NUMBER, "description": "Paid off over."},
                "utilization": {**_NUMBER, "description": "Busy share of the day, 0-1."},
                "usd_per_kwh": _NUMBER,
                "pue": _NUMBER,
                "unit": {
                    "type": "string",
                    "description": "What the price is for: card (in a host), system, server.",
                },
                "gpus": {"type": "integer"},
                "typed_price": {"type": "boolean"},
                "base_price": {"type": "boolean"},
            },
        },
        "owned_usd_per_million": _NULL_NUMBER,
        "serving_usd_per_million": {
            **_NULL_NUMBER,
            "description": "The same hour at the serving point (serving_users users).",
        },
        "serving_users": {"type": "integer"},
    },
}

SUMMARY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": UUID_STRING,
        "name": STRING,
        "notes": STRING,
        "tags": TAG_LIST,
        "model": {"type": "string", "description": "Model slug."},
        "accelerator": {"type": "string", "description": "Accelerator slug."},
        "quant": STRING,
        "gpus": {"type": "integer"},
        "verdict": {"type": "string", "description": "The saved fit verdict."},
        "per_device_bytes": {"type": "integer"},
        "cost": COST,
        "saved_by": NULL_STRING,
        "saved_at": TIME,
    },
    "required": ["code", "name", "model", "accelerator", "saved_at"],
}
PAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "next": {"type": "string", "format": "uri", "nullable": True},
        "previous": {"type": "string", "format": "uri", "nullable": True},
        "results": {"type": "array", "items": SUMMARY},
    },
    "required": ["count", "results"],
}
EXPORT: dict[str, Any] = {
    "type": "object",
    "description": "A saved configuration as the report page's JSON export has it: the "
    "frozen snapshot (the estimator's result, the sized setup, the catalog figures used), "
    "the configurator's parameters and the estimator's request.",
    "properties": {
        "code": UUID_STRING,
        "name": STRING,
        "notes": STRING,
        "tags": TAG_LIST,
        "saved_by": NULL_STRING,
        "saved_at": TIME,
        "query": {"type": "object", "additionalProperties": {"type": "string"}},
        "estimator_request": JSON_OBJECT,
        "snapshot": {
            "type": "object",
            "properties": {
                "version": {
                    "type": "integer",
                    "description": "The snapshot's format version (3; older snapshots are "
                    "answered upgraded).",
                },
                "cost": COST,
                "result": api_schema.RESULT,
                "setup": JSON_OBJECT,
                "backend": STRING,
                "model": JSON_OBJECT,
                "accelerator": JSON_OBJECT,
                "computed_at": TIME,
            },
            "additionalProperties": True,
        },
    },
    "required": ["code", "name", "saved_at", "query", "estimator_request", "snapshot"],
}
DETAIL: dict[str, Any] = {
    **EXPORT,
    "properties": {**EXPORT["properties"], "model": STRING, "accelerator": STRING},
}
CHANGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "description": "Path into the result."},
        "old": {"type": "number", "nullable": True},
        "new": {"type": "number", "nullable": True},
        "change": {"type": "number", "nullable": True, "description": "Percent."},
        "changed": {"type": "boolean"},
    },
}
CATALOG_CHANGE: dict[str, Any] = {
    "type": "object",
    "properties": {"key": STRING, "label": STRING, "old": {}, "new": {}},
}
RECOMPUTE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": UUID_STRING,
        "sizeable": {
            "type": "boolean",
            "description": "False when the saved parameters cannot be sized any more.",
        },
        "today": {**JSON_OBJECT, "nullable": True, "description": "Today's snapshot."},
        "changes": {"type": "array", "items": CHANGE},
        "catalog_changes": {"type": "array", "items": CATALOG_CHANGE},
    },
    "required": ["code", "sizeable", "today", "changes", "catalog_changes"],
}
# The saved configuration's tags as the save body takes them (configurations.Tags).
TAGS_REQUEST: dict[str, Any] = {
    "oneOf": [
        {
            "type": "array",
            "maxItems": MAX_TAGS,
            "items": {"type": "string", "maxLength": TAG_MAX},
        },
        {
            "type": "string",
            "nullable": True,
            "maxLength": TAGS_TEXT_MAX,
            "description": "Comma-separated (the first 20 are kept).",
        },
    ],
}
COMPARE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "configurations": {"type": "array", "items": SUMMARY},
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "figure": STRING,
                    "kind": STRING,
                    "values": {"type": "array", "items": {}},
                    "best": {"type": "array", "items": {"type": "integer"}},
                    "uncalibrated": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "description": "Columns (from 0) of a speed or time row whose speed "
                        "no published measurement backs (the result's speed_calibrated "
                        "false): shown, never best.",
                    },
                },
            },
        },
    },
    "required": ["configurations", "rows"],
}
