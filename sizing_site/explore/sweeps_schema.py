"""The sweeps' rows as JSON and as OpenAPI shapes (sizing_site.explore.sweeps_api answers
with them): a row of the model table (`card_row`, CARD_ROW) or the card table
(`model_row`, MODEL_ROW), and a whole answer: the row the table is of, the filters, one
page of rows and the table's summary (model_cards_data, card_models_data)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catalog.models import Accelerator, LLMModel
from catalog.sizing import CardFit
from estimator.units import Range
from sizing_site.configurator.serializers import row_data
from sizing_site.explore.costs import RowCost
from sizing_site.explore.queries import CardModelsQuery, ModelCardsQuery
from sizing_site.explore.tables import CardRow, CardTable, ModelRow, ModelTable, TablePage

# An explore row is one board: the sweep sizes each card alone (catalog.sizing.card_request).
ROW_GPUS = 1

# --- rows as JSON --------------------------------------------------------------------------


def _speed(speed: Range | None) -> dict[str, float] | None:
    if speed is None:
        return None
    return {"estimate": speed.estimate, "low": speed.low, "high": speed.high}


def _fit(fit: CardFit, *, ctx: int, confidence: str) -> dict[str, Any]:
    return {
        "fits": fit.quant is not None,
        "verdict": fit.verdict,
        "quant": fit.quant,
        "engine": fit.engine,
        "backend": fit.backend,
        "gpus": ROW_GPUS,
        "context_tokens": ctx,
        "need_bytes": fit.need_bytes,
        "usable_bytes": fit.usable_bytes,
        "decode_tokens_per_s": _speed(fit.decode_tokens_per_s),
        "calibrated": fit.calibrated,
        "confidence": confidence,
    }


def _cost(cost: RowCost | None) -> dict[str, Any] | None:
    if cost is None:
        return None
    return {
        "usd_per_million_tokens": cost.usd_per_million,
        "basis": cost.basis,
        "usd_per_hour": cost.usd_per_hour,
        "provider": cost.provider,
    }


def owned_ref(row: LLMModel | Accelerator, owners: Mapping[int, str]) -> dict[str, Any]:
    """row_data with the slug of the organisation whose own row it is (`owners`: the
    caller's organisations by key), None for the public catalog."""
    return {**row_data(row), "organization": owners.get(row.organization_id or 0)}


def card_row(row: CardRow, *, ctx: int, owners: Mapping[int, str]) -> dict[str, Any]:
    card = row.accelerator
    return {
        "accelerator": {
            **owned_ref(card, owners),
            "vendor": card.vendor,
            "memory_gib": card.capacity_gib,
            "bandwidth_gbps": card.bandwidth_gbps,
            "price_usd": card.price_usd,
            "curated": card.curated,
        },
        "fit": _fit(row.fit, ctx=ctx, confidence=row.confidence),
        "cost": _cost(row.cost),
        "usd_per_token_per_s": row.usd_per_token_per_s,
        "shortfall_bytes": row.shortfall_bytes,
        "devices_by_memory": row.devices_by_memory,
    }


def model_row(row: ModelRow, *, ctx: int, owners: Mapping[int, str]) -> dict[str, Any]:
    model = row.model
    return {
        "model": {
            **owned_ref(model, owners),
            "family": model.family,
            "params_total": model.params_total,
            "params_active": model.params_active,
        },
        "fit": _fit(row.fit, ctx=ctx, confidence=row.confidence),
        "cost": _cost(row.cost),
    }


def _position(page: TablePage[Any]) -> dict[str, int]:
    return {"count": page.count, "page": page.number, "page_size": page.size, "pages": page.pages}


def model_cards_data(
    table: CardTable, *, model: LLMModel, query: ModelCardsQuery, owners: Mapping[int, str]
) -> dict[str, Any]:
    """The model sweep's answer (MODEL_CARDS): the table's page of rows and its summary."""

    def one(row: CardRow | None) -> dict[str, Any] | None:
        return card_row(row, ctx=query.ctx, owners=owners) if row is not None else None

    return {
        "model": owned_ref(model, owners),
        "filters": query.filters(),
        "quants": list(query.quants),
        **_position(table.page),
        "summary": {
            "cards": table.cards,
            "candidates": table.candidates,
            "fitting": table.fitting,
            "median_tokens_per_s": table.median_speed,
            "median_of": table.median_of,
            "confidence_counts": table.confidence_counts,
            "unpriced": table.unpriced,
            "priced_unranked": table.priced_unranked,
            "smallest": one(table.smallest),
            "fastest": one(table.fastest),
            "cheapest_run": one(table.cheapest_run),
            "cheapest_buy": one(table.cheapest_buy),
            "nearest_miss": one(table.nearest_miss),
        },
        "results": [card_row(row, ctx=query.ctx, owners=owners) for row in table.page],
    }


def card_models_data(
    table: ModelTable, *, card: Accelerator, query: CardModelsQuery, owners: Mapping[int, str]
) -> dict[str, Any]:
    """The card sweep's answer (CARD_MODELS): the table's page of rows (each model a row;
    the page folds a family's variants) and its summary."""

    def one(row: ModelRow | None) -> dict[str, Any] | None:
        return model_row(row, ctx=query.ctx, owners=owners) if row is not None else None

    return {
        "accelerator": owned_ref(card, owners),
        "filters": query.filters(),
        "quants": list(query.quants),
        **_position(table.page),
        "summary": {
            "candidates": table.candidates,
            "fitting": table.fitting,
            "comfortable": table.comfortable,
            "skipped": [
                {"model": row_data(model), "reason": str(reason)} for model, reason in table.skipped
            ],
            "median_tokens_per_s": table.median_speed,
            "median_of": table.median_of,
            "confidence_counts": table.confidence_counts,
            "largest_comfortable": one(table.largest_comfortable),
            "fastest": one(table.fastest),
        },
        "results": [model_row(row, ctx=query.ctx, owners=owners) for row in table.page],
    }


# --- the same as OpenAPI shapes ------------------------------------------------------------

REF: dict[str, Any] = {
    "type": "object",
    "properties": {"slug": {"type": "string"}, "name": {"type": "string"}},
    "required": ["slug", "name"],
}
OWNED_REF: dict[str, Any] = {
    "type": "object",
    "properties": {
        **REF["properties"],
        "organization": {
            "type": "string",
            "nullable": True,
            "description": "The slug of the caller's organisation that added this row "
            "for its members only; null for the public catalog.",
        },
    },
    "required": ["slug", "name", "organization"],
}
_NUMBER = {"type": "number", "nullable": True}
_SPEED = {
    "type": "object",
    "nullable": True,
    "description": "Decode tok/s of one sequence with the calibration's low-high range; "
    "null when nothing fits.",
    "properties": {k: {"type": "number"} for k in ("estimate", "low", "high")},
}
_FIT = {
    "type": "object",
    "properties": {
        "fits": {"type": "boolean"},
        "verdict": {
            "type": "string",
            "description": "comfortable, tight, does_not_fit or no_engine (of the most "
            "compressed quant when none fits).",
        },
        "quant": {"type": "string", "nullable": True, "description": "Least compressed that fits."},
        "engine": {"type": "string", "description": "The card's default engine."},
        "backend": {"type": "string"},
        "gpus": {"type": "integer", "description": "Boards sized: the sweep sizes one."},
        "context_tokens": {"type": "integer"},
        "need_bytes": {"type": "integer"},
        "usable_bytes": {"type": "integer"},
        "decode_tokens_per_s": _SPEED,
        "calibrated": {
            "type": "boolean",
            "description": "False when no measurement covers this engine on this backend.",
        },
        "confidence": {"type": "string", "enum": ["high", "medium", "low", ""]},
    },
}
_COST = {
    "type": "object",
    "nullable": True,
    "description": "USD per 1M output tokens at the row's decode speed: the cheapest public "
    "cloud offer (basis cloud), else owning the card at the pages' defaults (owned).",
    "properties": {
        "usd_per_million_tokens": {"type": "number"},
        "basis": {"type": "string", "enum": ["cloud", "owned"]},
        "usd_per_hour": {"type": "number"},
        "provider": {"type": "string"},
    },
}
CARD_ROW = {
    "type": "object",
    "properties": {
        "accelerator": {
            "type": "object",
            "properties": {
                **OWNED_REF["properties"],
                "vendor": {"type": "string"},
                "memory_gib": _NUMBER,
                "bandwidth_gbps": _NUMBER,
                "price_usd": _NUMBER,
                "curated": {"type": "boolean"},
            },
        },
        "fit": _FIT,
        "cost": _COST,
        "usd_per_token_per_s": {**_NUMBER, "description": "Card price per decode tok/s."},
        "shortfall_bytes": {"type": "integer", "description": "Memory one board lacks."},
        "devices_by_memory": {"type": "integer"},
    },
}
MODEL_ROW = {
    "type": "object",
    "properties": {
        "model": {
            "type": "object",
            "properties": {
                **OWNED_REF["properties"],
                "family": {"type": "string"},
                "params_total": {"type": "integer", "nullable": True},
                "params_active": {"type": "integer", "nullable": True},
            },
        },
        "fit": _FIT,
        "cost": _COST,
    },
}
PAGE = {
    "count": {"type": "integer", "description": "Rows in the whole table."},
    "page": {"type": "integer"},
    "page_size": {"type": "integer"},
    "pages": {"type": "integer"},
}
FILTERS = {"type": "object", "additionalProperties": True, "description": "The filters used."}
COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}
MEDIAN = {**_NUMBER, "description": "Median calibrated decode tok/s of the fitting rows."}


def nullable(shape: dict[str, Any]) -> dict[str, Any]:
    return {**shape, "nullable": True}
