"""Sweeps under /api/v1/: the explore pages' tables for scripts.

- `sweeps/models/<model>/accelerators/`: a model on every card, as the model page
  (explore:model-gpus) computes it with the same filters and sort;
- `sweeps/accelerators/<card>/models/`: a card across every model, as the card page
  (explore:gpu-models);
- `compare/`: up to four model:accelerator:quant:gpus columns at one context, as
  explore:compare, with the columns' estimator figures and the page's figure rows.

Each reads the page's own form (sizing_site.explore.forms) from the same query parameters
and calls the same selectors (sizing_site.explore.selectors), so a row here is the row on
the page. Bad filters are 400 naming the parameter, an unknown slug 404, in the API's one
error shape. The views are the catalog API's (sizing_site.api.catalog.CatalogView): reads
for signed-in users, an `ETag` from the catalog version, the cloud prices the table reads,
the address and the caller's staff flag (`If-None-Match` answers 304 before any sweep),
and `Last-Modified` from the newest edit of the rows' table.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from django.forms import Form
from django.http import HttpRequest
from django.urls import path
from django.utils.http import quote_etag
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.sizing import CardFit, candidates
from catalog.sizing.cache import remembered
from catalog.sizing.requests import GGUF_QUANTS
from catalog.sizing.specs import stated_layers
from estimator.api import RequestError
from estimator.units import Range
from sizing_site.api import budget, schema
from sizing_site.api.catalog import CatalogView
from sizing_site.api.errors import form_errors, single_values
from sizing_site.api.serializers import row_data
from sizing_site.explore import selectors
from sizing_site.explore.forms import (
    CARD_SORT_CHOICES,
    MAX_COLUMNS,
    MAX_GPUS,
    MODEL_SORT_CHOICES,
    CardModelsForm,
    CompareForm,
    ModelCardsForm,
    ascii_count,
)
from sizing_site.explore.templatetags.explore import compare_error
from sizing_site.tenancy.models import Organization
from sizing_site.tenancy.selectors import viewer_organizations

PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
MAX_PAGE = 1_000_000
# An explore row is one board: the sweep sizes each card alone (catalog.sizing.card_request).
ROW_GPUS = 1

Errors = dict[str, list[str]]


# --- query parameters ------------------------------------------------------------------


def _count(params: Mapping[str, str], name: str, *, default: int, most: int) -> int | str:
    """A whole number from 1 to `most` (the default when absent or empty), else the error
    message."""
    raw = (params.get(name) or "").strip()
    if not raw:
        return default
    value = ascii_count(raw, most=most)
    if value is None:
        return _("Enter a whole number from 1 to %(max)s.") % {"max": most}
    return value


# The sweeps' parameters that are numbers, true/false or a choice: blank or repeated is a
# 400 (api.errors.single_values), as the schema's types say.
TYPED_PARAMETERS = ("ctx", "show_all", "sort", "page", "page_size", "memory_min_gb")


def _paging(params: Mapping[str, str], errors: Errors) -> tuple[int, int]:
    """`page` and `page_size` (default 50, at most 1000); a bad one is added to `errors`."""
    page = _count(params, "page", default=1, most=MAX_PAGE)
    size = _count(params, "page_size", default=PAGE_SIZE, most=MAX_PAGE_SIZE)
    if isinstance(page, str):
        errors["page"] = [page]
    if isinstance(size, str):
        errors["page_size"] = [size]
    return (page if isinstance(page, int) else 1), (size if isinstance(size, int) else PAGE_SIZE)


def _page(rows: Sequence[Any], *, page: int, size: int) -> tuple[Sequence[Any], dict[str, int]]:
    """One page of `rows` and its position; past the last page is 404 naming `page`."""
    pages = max(1, math.ceil(len(rows) / size))
    if page > pages:
        message = _("There is no page %(page)s: the table has %(pages)s.")
        raise exceptions.NotFound({"page": [message % {"page": page, "pages": pages}]})
    start = (page - 1) * size
    return rows[start : start + size], {
        "count": len(rows),
        "page": page,
        "page_size": size,
        "pages": pages,
    }


def _query_key(form: Form, page: int, size: int) -> tuple[object, ...]:
    """The language and what the answer is computed from: the form's cleaned values and
    the page (not the raw query, so a parameter the form ignores cannot make a new entry)."""
    cleaned = tuple(sorted((name, repr(value)) for name, value in form.cleaned_data.items()))
    return (get_language(), cleaned, page, size)


def _sizing_error(exc: RequestError) -> exceptions.ValidationError:
    """The estimator's refusal of a sweep (the page shows it as a form error): the context
    is the only figure a visitor set, so it names ctx when about the context."""
    field = "ctx" if "context" in exc.field else "detail"
    return exceptions.ValidationError({field: [exc.message]})


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


def _cost(cost: selectors.RowCost | None) -> dict[str, Any] | None:
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


def card_row(
    row: selectors.CardRow, *, ctx: int, owners: Mapping[int, str] | None = None
) -> dict[str, Any]:
    card = row.accelerator
    return {
        "accelerator": {
            **owned_ref(card, owners or {}),
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


def model_row(
    row: selectors.ModelRow, *, ctx: int, owners: Mapping[int, str] | None = None
) -> dict[str, Any]:
    model = row.model
    return {
        "model": {
            **owned_ref(model, owners or {}),
            "family": model.family,
            "params_total": model.params_total,
            "params_active": model.params_active,
        },
        "fit": _fit(row.fit, ctx=ctx, confidence=row.confidence),
        "cost": _cost(row.cost),
    }


# --- the views -------------------------------------------------------------------------------


class SweepView(CatalogView):
    """CatalogView's reads, conditional GETs and error shape for a computed table: no
    search, ordering or cursor (the page's own form filters, sorts and pages)."""

    filter_backends = []
    pagination_class = None  # type: ignore[assignment]
    owned_rows = True  # a member's table holds the organisation's own rows

    @functools.cached_property
    def organizations(self) -> list[Organization]:
        """The caller's organisations (a token's only): their own models and cards are
        swept beside the public catalog, and nobody else's."""
        return viewer_organizations(cast(HttpRequest, self.request))

    @functools.cached_property
    def owners(self) -> dict[int, str]:
        return {o.pk: o.slug for o in self.organizations}

    def offers_key(self) -> tuple[object, ...]:
        """The cloud prices the table reads (they change without a catalog edit)."""
        return ()

    def _etag(self, request: Request) -> str | None:
        catalog_tag = super()._etag(request)
        if catalog_tag is None:
            return None
        basis = f"{catalog_tag}|{self.offers_key()}"
        return quote_etag(hashlib.sha256(basis.encode()).hexdigest()[:32])

    @functools.cached_property
    def offers(self) -> dict[int, selectors.Offer]:
        """The cheapest public offer per card, read once per request (ETag and rows)."""
        return selectors.cheapest_offers()


# A compare column as CompareForm reads it: model:accelerator, then optionally a GGUF
# quant (empty: Q4_K_M) and a GPU count (empty: 1); blank: no column.
_SLUG = "[-.A-Za-z0-9_]+"
_QUANTS = "|".join(re.escape(q) for q in GGUF_QUANTS)
COLUMN_PATTERN = (  # MAX_GPUS (8) is one digit
    rf"^\s*(?:{_SLUG}:{_SLUG}(?::(?:{_QUANTS})?(?::[1-{MAX_GPUS}]?)?)?)?\s*$"
)


def _parameters(*, sorts: Sequence[tuple[str, Any]], default_sort: str) -> list[OpenApiParameter]:
    return [
        OpenApiParameter(
            "ctx",
            schema.CONTEXT,
            OpenApiParameter.QUERY,
            description="Context tokens (at least 1024; default 8192, on a model at most "
            "its own limit).",
        ),
        OpenApiParameter(
            "quality",
            OpenApiTypes.STR,
            OpenApiParameter.QUERY,
            description="The most compressed GGUF quant accepted (a quant format's name, "
            "e.g. Q4_K_M; default the 3-bit floor).",
        ),
        OpenApiParameter(
            "q",
            {"type": "string", "maxLength": 100},
            OpenApiParameter.QUERY,
            description="Name contains.",
        ),
        OpenApiParameter(
            "show_all",
            OpenApiTypes.BOOL,
            OpenApiParameter.QUERY,
            description="Also list the rows that do not fit (default false).",
        ),
        OpenApiParameter(
            "sort",
            OpenApiTypes.STR,
            OpenApiParameter.QUERY,
            enum=[value for value, _label in sorts],
            default=default_sort,
            description="As the page's sort; rows without the value go last.",
        ),
        OpenApiParameter(
            "page",
            {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            OpenApiParameter.QUERY,
            description="Page number, from 1 (default 1).",
        ),
        OpenApiParameter(
            "page_size",
            {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
            OpenApiParameter.QUERY,
            description=f"Rows a page, 1 to {MAX_PAGE_SIZE} (default {PAGE_SIZE}).",
        ),
    ]


_REF: dict[str, Any] = {
    "type": "object",
    "properties": {"slug": {"type": "string"}, "name": {"type": "string"}},
    "required": ["slug", "name"],
}
_OWNED_REF: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_REF["properties"],
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
_CARD_ROW = {
    "type": "object",
    "properties": {
        "accelerator": {
            "type": "object",
            "properties": {
                **_OWNED_REF["properties"],
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
_MODEL_ROW = {
    "type": "object",
    "properties": {
        "model": {
            "type": "object",
            "properties": {
                **_OWNED_REF["properties"],
                "family": {"type": "string"},
                "params_total": {"type": "integer", "nullable": True},
                "params_active": {"type": "integer", "nullable": True},
            },
        },
        "fit": _FIT,
        "cost": _COST,
    },
}
_PAGE = {
    "count": {"type": "integer", "description": "Rows in the whole table."},
    "page": {"type": "integer"},
    "page_size": {"type": "integer"},
    "pages": {"type": "integer"},
}
_FILTERS = {"type": "object", "additionalProperties": True, "description": "The filters used."}
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}
_MEDIAN = {**_NUMBER, "description": "Median calibrated decode tok/s of the fitting rows."}


def _nullable(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "nullable": True}


MODEL_CARDS = {
    "type": "object",
    "properties": {
        "model": _OWNED_REF,
        "filters": _FILTERS,
        "quants": {"type": "array", "items": {"type": "string"}},
        **_PAGE,
        "summary": {
            "type": "object",
            "properties": {
                "cards": {"type": "integer", "description": "Cards the estimator can size."},
                "candidates": {"type": "integer", "description": "Cards matching the filters."},
                "fitting": {"type": "integer"},
                "median_tokens_per_s": _MEDIAN,
                "median_of": {"type": "integer"},
                "confidence_counts": _COUNTS,
                "unpriced": {"type": "integer"},
                "priced_unranked": {"type": "integer"},
                **{
                    name: _nullable(_CARD_ROW)
                    for name in (
                        "smallest",
                        "fastest",
                        "cheapest_run",
                        "cheapest_buy",
                        "nearest_miss",
                    )
                },
            },
        },
        "results": {"type": "array", "items": _CARD_ROW},
    },
}
CARD_MODELS = {
    "type": "object",
    "properties": {
        "accelerator": _OWNED_REF,
        "filters": _FILTERS,
        "quants": {"type": "array", "items": {"type": "string"}},
        **_PAGE,
        "summary": {
            "type": "object",
            "properties": {
                "candidates": {"type": "integer"},
                "fitting": {"type": "integer"},
                "comfortable": {"type": "integer"},
                "skipped": {
                    "type": "array",
                    "description": "Models left out: a shorter context, or a config the "
                    "estimator refuses.",
                    "items": {
                        "type": "object",
                        "properties": {"model": _REF, "reason": {"type": "string"}},
                    },
                },
                "median_tokens_per_s": _MEDIAN,
                "median_of": {"type": "integer"},
                "confidence_counts": _COUNTS,
                "largest_comfortable": _nullable(_MODEL_ROW),
                "fastest": _nullable(_MODEL_ROW),
            },
        },
        "results": {"type": "array", "items": _MODEL_ROW},
    },
}
COMPARE = {
    "type": "object",
    "properties": {
        "ctx": {"type": "integer"},
        "columns": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "param": {"type": "string", "description": "c1..c4"},
                    "spec": {"type": "string", "description": "model:accelerator:quant:gpus"},
                    "model": _REF,
                    "accelerator": _REF,
                    "quant": {"type": "string"},
                    "gpus": {"type": "integer"},
                    "engine": {"type": "string"},
                    "backend": {"type": "string"},
                    "result": {
                        "type": "object",
                        "additionalProperties": True,
                        "description": "The estimator's result (as /api/v1/estimate/).",
                    },
                },
            },
        },
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "figure": {"type": "string"},
                    "kind": {
                        "type": "string",
                        "enum": [
                            "bytes",
                            "speed",
                            "seconds",
                            "tokens",
                            "count",
                            "verdict",
                            "share",
                        ],
                    },
                    "values": {"type": "array", "items": {}},
                    "best": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "description": "Indexes of the columns with the best value.",
                    },
                },
            },
        },
    },
}

BAD_TOKEN = schema.BAD_TOKEN
NO_PAGE = OpenApiExample(
    "No such page",
    value={"errors": {"page": ["There is no page 9: the table has 2."]}},
    response_only=True,
)


def _sweep_responses(body: dict[str, Any], missing: str) -> dict[int, OpenApiResponse]:
    return {
        200: OpenApiResponse(response=body),
        400: schema.errors(
            "A bad filter, the parameter named.",
            OpenApiExample(
                "Bad filter",
                value={"errors": {"ctx": ["Enter a whole number."]}},
                response_only=True,
            ),
        ),
        401: BAD_TOKEN,
        403: schema.NOT_LOGGED_IN,
        404: schema.errors(
            missing,
            OpenApiExample(
                "Unknown slug", value={"errors": {"model": [missing]}}, response_only=True
            ),
            NO_PAGE,
        ),
        **schema.BUDGET_RESPONSES,
    }


class ModelAcceleratorsApi(SweepView):
    """A model on every card the estimator can size, each under its default engine: the
    model page's table (explore:model-gpus) with its filters, sort and summary."""

    table = Accelerator

    def offers_key(self) -> tuple[object, ...]:
        return selectors.offers_key(self.offers)

    @extend_schema(
        operation_id="sweeps_model_accelerators",
        summary="A model on every card",
        parameters=[
            *_parameters(sorts=CARD_SORT_CHOICES, default_sort=ModelCardsForm.default_sort),
            OpenApiParameter(
                "vendor", OpenApiTypes.STR, OpenApiParameter.QUERY, description="Exact vendor."
            ),
            OpenApiParameter(
                "memory_min_gb",
                {"type": "number", "minimum": 0},
                OpenApiParameter.QUERY,
                description="The board's memory at least (GiB).",
            ),
        ],
        responses=_sweep_responses(MODEL_CARDS, "No model with this slug."),
        tags=["sweeps"],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def read(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            model = candidates.explore_model(
                slug=kwargs["model_slug"], organizations=self.organizations
            )
        except LLMModel.DoesNotExist:
            raise exceptions.NotFound({"model": [_("No model with this slug.")]}) from None
        max_context = sizing.model_context_limit(model)
        if max_context is None:  # the page's 404 too: nothing to size
            message = _("The estimator cannot read this model's config.")
            raise exceptions.NotFound({"model": [message]})
        ladder = candidates.quant_ladder()
        organizations = self.organizations
        read_cards = functools.cache(lambda: candidates.sweep_accelerators(organizations))
        vendors = candidates.card_vendors(read_cards, organizations)
        params = request.query_params
        form = ModelCardsForm(params, ladder=ladder, max_context=max_context, vendors=vendors)
        errors = {} if form.is_valid() else form_errors(form)
        errors.update(single_values(params, TYPED_PARAMETERS))
        page, size = _paging(params, errors)
        if errors:
            raise exceptions.ValidationError(errors)
        quants, ctx, filters = selectors.table_filters(form.cleaned_data, ladder=ladder)

        def build() -> dict[str, Any]:
            cards = read_cards()
            try:
                table = selectors.model_card_table(
                    model=model,
                    accelerators=cards,
                    quants=quants,
                    context_tokens=ctx,
                    offers=self.offers,
                    powers=selectors.unit_powers(organizations=self.organizations),
                    matrix=hardware.support_matrix(),
                    **filters,
                )
            except RequestError as exc:
                raise _sizing_error(exc) from None
            rows, position = _page(table.rows, page=page, size=size)

            def one(row: selectors.CardRow | None) -> dict[str, Any] | None:
                return card_row(row, ctx=ctx, owners=self.owners) if row is not None else None

            return {
                "model": owned_ref(model, self.owners),
                "filters": {"ctx": ctx, "quality": form.cleaned_data["quality"], **filters},
                "quants": quants,
                **position,
                "summary": {
                    "cards": len(cards),
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
                "results": [card_row(row, ctx=ctx, owners=self.owners) for row in rows],
            }

        # Kept as the page keeps its results part: per catalog version, cloud prices,
        # language and query.
        # Keyed by the caller's organisations: their own rows stay in their members' entry.
        orgs = candidates.organization_keys(self.organizations)
        key = (model.pk, selectors.offers_key(self.offers), orgs, *_query_key(form, page, size))
        # Priced at its width before it runs, kept or not; filters and pages do not narrow
        # the sweep itself, so it is never too large, only charged (sizing_site.api.budget).
        units = budget.sweep_units([stated_layers(model.config)] * len(read_cards()))
        with budget.spend(request, units, divisible=False):
            return Response(remembered("api:sweeps-model", key, build))


class AcceleratorModelsApi(SweepView):
    """A card across every model with a config, as the card page (explore:gpu-models):
    one row per model (the page folds a family's identical variants; here each is a row),
    a model whose published context is shorter than ctx skipped."""

    table = LLMModel

    @functools.cached_property
    def card(self) -> Accelerator:
        try:
            return candidates.explore_accelerator(
                slug=self.kwargs["accelerator_slug"], organizations=self.organizations
            )
        except Accelerator.DoesNotExist:
            message = _("No card with this slug.")
            raise exceptions.NotFound({"accelerator": [message]}) from None

    def offers_key(self) -> tuple[object, ...]:
        # The page keys its cached part on this card's offer only.
        return (self.offers.get(self.card.pk),)

    @extend_schema(
        operation_id="sweeps_accelerator_models",
        summary="A card across every model",
        parameters=_parameters(sorts=MODEL_SORT_CHOICES, default_sort=CardModelsForm.default_sort),
        responses=_sweep_responses(CARD_MODELS, "No card with this slug."),
        tags=["sweeps"],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def read(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        card = self.card
        params = request.query_params
        form = CardModelsForm(params, ladder=candidates.quant_ladder())
        errors = {} if form.is_valid() else form_errors(form)
        errors.update(single_values(params, TYPED_PARAMETERS))
        page, size = _paging(params, errors)
        if errors:
            raise exceptions.ValidationError(errors)
        quants, ctx, filters = selectors.table_filters(form.cleaned_data, ladder=form.ladder)

        models = candidates.explore_models(self.organizations)

        def build() -> dict[str, Any]:
            table = selectors.card_model_table(
                accelerator=card,
                models=models,
                quants=quants,
                context_tokens=ctx,
                offers=self.offers,
                powers=selectors.unit_powers([card.pk], self.organizations),
                **filters,
            )
            rows, position = _page(table.rows, page=page, size=size)

            def one(row: selectors.ModelRow | None) -> dict[str, Any] | None:
                return model_row(row, ctx=ctx, owners=self.owners) if row is not None else None

            return {
                "accelerator": owned_ref(card, self.owners),
                "filters": {"ctx": ctx, "quality": form.cleaned_data["quality"], **filters},
                "quants": quants,
                **position,
                "summary": {
                    "candidates": table.candidates,
                    "fitting": table.fitting,
                    "comfortable": table.comfortable,
                    "skipped": [
                        {"model": row_data(model), "reason": str(reason)}
                        for model, reason in table.skipped
                    ],
                    "median_tokens_per_s": table.median_speed,
                    "median_of": table.median_of,
                    "confidence_counts": table.confidence_counts,
                    "largest_comfortable": one(table.largest_comfortable),
                    "fastest": one(table.fastest),
                },
                "results": [model_row(row, ctx=ctx, owners=self.owners) for row in rows],
            }

        orgs = candidates.organization_keys(self.organizations)
        key = (card.pk, self.offers.get(card.pk), orgs, *_query_key(form, page, size))
        units = budget.sweep_units(stated_layers(m.config) for m in models)
        with budget.spend(request, units, divisible=False):
            return Response(remembered("api:sweeps-card", key, build))


class CompareApi(SweepView):
    """Up to four columns c1..c4 (model:accelerator:quant:gpus; quant Q4_K_M and one GPU
    when left out) at one context, as explore:compare: each column's estimator result
    under the card's default engine, and the page's figure rows with the best values. A
    column with an unknown slug is 404, one the estimator refuses 400, naming its
    parameter."""

    table = LLMModel

    @extend_schema(
        operation_id="compare",
        summary="Compare up to four setups",
        parameters=[
            *(
                OpenApiParameter(
                    f"c{n}",
                    {"type": "string", "pattern": COLUMN_PATTERN},
                    OpenApiParameter.QUERY,
                    description=f"Column {n}: model:accelerator:quant:gpus (gpus 1 to {MAX_GPUS}).",
                )
                for n in range(1, MAX_COLUMNS + 1)
            ),
            OpenApiParameter(
                "ctx",
                schema.CONTEXT,
                OpenApiParameter.QUERY,
                description="Context tokens for every column (at least 1024; default 8192).",
            ),
        ],
        responses={
            200: OpenApiResponse(response=COMPARE),
            400: schema.errors(
                "A malformed column or context, or a column the estimator refuses; the "
                "parameter named.",
                OpenApiExample(
                    "Bad column",
                    value={"errors": {"c2": ["Column 2: unknown quantization Q9."]}},
                    response_only=True,
                ),
            ),
            401: BAD_TOKEN,
            403: schema.NOT_LOGGED_IN,
            404: schema.errors(
                "A column names an unknown model or accelerator.",
                OpenApiExample(
                    "Unknown slug",
                    value={"errors": {"c1": ["Column 1: unknown model or accelerator."]}},
                    response_only=True,
                ),
            ),
            413: schema.BUDGET_RESPONSES[413],
            429: schema.BUDGET_RESPONSES[429],
        },
        tags=["sweeps"],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def read(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = CompareForm(request.query_params)
        errors = single_values(request.query_params, ("ctx",))
        if not form.is_valid():
            errors = {**form_errors(form), **errors}
            if form.column_errors:  # form-wide only because c1..c4 are no form fields
                errors.pop("detail", None)
                errors.update(form.column_errors)
        if errors:
            raise exceptions.ValidationError(errors)
        ctx = form.cleaned_data["ctx"]
        # A column costs an ordinary estimate (sizing_site.api.budget).
        with budget.spend(request, len(form.cleaned_data["columns"])):
            columns = selectors.compare_columns(
                specs=form.cleaned_data["columns"], context_tokens=ctx
            )
        # The columns in the order of their parameters (CompareForm skips empty ones).
        names = [
            f"c{n}"
            for n in range(1, MAX_COLUMNS + 1)
            if (request.query_params.get(f"c{n}") or "").strip()
        ]
        failed = {
            name: [f"{_('Column %(n)s:') % {'n': name[1:]}} {compare_error(column.error)}"]
            for name, column in zip(names, columns, strict=True)
            if column.error
        }
        if failed:
            unknown = any(c.error == "unknown" for c in columns)
            error = exceptions.NotFound if unknown else exceptions.ValidationError
            raise error(failed)
        return Response(
            {
                "ctx": ctx,
                "columns": [
                    {
                        "param": name,
                        "spec": f"{c.model.slug}:{c.accelerator.slug}:{c.quant}:{c.gpus}",
                        "model": row_data(c.model),
                        "accelerator": row_data(c.accelerator),
                        "quant": c.quant,
                        "gpus": c.gpus,
                        "engine": c.choice.engine if c.choice else "",
                        "backend": c.choice.backend if c.choice else "",
                        "result": c.result,
                    }
                    for name, c in zip(names, columns, strict=True)
                ],
                "rows": [
                    {
                        "figure": row.label,
                        "kind": row.kind,
                        "values": row.values,
                        "best": sorted(row.best),
                    }
                    for row in selectors.compare_rows(columns)
                ],
            }
        )


urlpatterns = [
    path(
        "sweeps/models/<slug:model_slug>/accelerators/",
        ModelAcceleratorsApi.as_view(),
        name="sweeps-model-accelerators",
    ),
    path(
        "sweeps/accelerators/<slug:accelerator_slug>/models/",
        AcceleratorModelsApi.as_view(),
        name="sweeps-accelerator-models",
    ),
    path("compare/", CompareApi.as_view(), name="compare"),
]
