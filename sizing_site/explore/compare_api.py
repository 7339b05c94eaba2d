"""GET /api/v1/compare/: up to four configurator states side by side, as the compare
page shows them."""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import LLMModel
from sizing_site.apikit import budget, schema
from sizing_site.apikit.errors import form_errors, single_values
from sizing_site.configurator.forms import ALL_FORMATS
from sizing_site.configurator.serializers import row_data
from sizing_site.explore import api_schema
from sizing_site.explore.compare import CompareColumn, compare_columns, compare_rows
from sizing_site.explore.forms import (
    COMPARE_ENGINES,
    MAX_COLUMNS,
    MAX_GPUS,
    CompareForm,
    column_param,
)
from sizing_site.explore.sweeps_api import BAD_TOKEN, REF, SweepView
from sizing_site.explore.templatetags.explore import compare_error

# A compare column as CompareForm reads it: model:accelerator, then optionally a weights
# format of the configurator's (empty: the best that fits), a GPU count (empty: 1) and an
# engine (empty: the card's default); blank: no column.
_SLUG = "[-.A-Za-z0-9_]+"
_QUANTS = "|".join(re.escape(q) for q in sorted(ALL_FORMATS))
_ENGINES = "|".join(re.escape(e) for e in sorted(COMPARE_ENGINES))
COLUMN_PATTERN = (  # MAX_GPUS (8) is one digit
    rf"^\s*(?:{_SLUG}:{_SLUG}(?::(?:{_QUANTS})?(?::[1-{MAX_GPUS}]?(?::(?:{_ENGINES})?)?)?)?)?\s*$"
)

NUMBER_OR_NULL = {"type": "number", "nullable": True}
COST = {
    "type": "object",
    "nullable": True,
    "description": "The column's cost as the configurator's answer panel gives it (null "
    "when the column cannot be sized): usd_per_million (output tokens, at the aggregate "
    "decode speed of `sequences` sequences; null when it does not fit or nothing prices "
    "it) with its basis: rented (the cheapest public on-demand USD offer with at least "
    "the column's GPUs: provider, usd_per_hour = the column's share of the instance's "
    "hour, gpus of offer_gpus) or owned (purchase_usd: the cards, and a host, at the "
    "catalog price, paid off over three years, busy half of every day); purchase_usd is "
    "given whenever the catalog prices the hardware.",
    "properties": {
        "usd_per_million": NUMBER_OR_NULL,
        "basis": {"type": "string", "enum": ["rented", "owned", ""]},
        "sequences": {"type": "integer"},
        "provider": {"type": "string"},
        "usd_per_hour": NUMBER_OR_NULL,
        "gpus": {"type": "integer"},
        "offer_gpus": {"type": "integer"},
        "purchase_usd": NUMBER_OR_NULL,
        "owned_usd_per_million": NUMBER_OR_NULL,
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
                    "spec": {
                        "type": "string",
                        "description": "The column as sized, model:accelerator:quant:gpus "
                        "with the quant sized (the best that fits, when the column left it "
                        "out), and :engine when the column named one.",
                    },
                    "model": REF,
                    "accelerator": REF,
                    "quant": {"type": "string", "description": "The quant sized."},
                    "gpus": {"type": "integer"},
                    "engine": {"type": "string", "description": "The engine sized."},
                    "backend": {"type": "string"},
                    "quant_note": {
                        "type": "string",
                        "description": "Why the format the column named was dropped for "
                        "the best that fits (the engine does not load it); empty otherwise.",
                    },
                    "cost": COST,
                    "result": {
                        "type": "object",
                        "additionalProperties": True,
                        "description": "The estimator's result as /api/v1/estimate/ answers "
                        "it: when the verdict is does_not_fit the speeds "
                        "(decode_tokens_per_s, aggregate_decode_tokens_per_s, "
                        "prefill_tokens_per_s, ttft_s, serving) are null.",
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
                            "cost",
                            "usd_per_hour",
                            "usd",
                        ],
                        "description": "cost: the column's cost object (as the column's "
                        "`cost`), or null; usd_per_hour: the rented offer's price for the "
                        "column's GPUs; usd: the hardware's purchase price.",
                    },
                    "values": {"type": "array", "items": {}},
                    "best": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "description": "Indexes of the columns with the best value: only on "
                        "the rows where more (decode, prefill) or less (ttft, cost, "
                        "cloud_price, hardware_price) is clearly better, among the columns "
                        "that fit and whose speed published measurements back.",
                    },
                },
            },
        },
    },
}


class CompareApi(SweepView):
    """Up to four columns c1..c4 (model:accelerator:quant:gpus:engine; as on the
    configurator, the best that fits, one GPU and the card's default engine when left
    out) at one context, as explore:compare: each column sized as the configurator sizes
    it (every GGUF and Hugging Face format, every engine the card runs), and the page's
    figure rows with the best values. A column that does not fit has no speed. A column
    with an unknown slug is 404, one the configurator refuses 400, naming its
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
                    description=f"Column {n}: model:accelerator:quant:gpus:engine (gpus 1 "
                    f"to {MAX_GPUS}; quant empty: the best that fits; engine left out: the "
                    "card's default).",
                )
                for n in range(1, MAX_COLUMNS + 1)
            ),
            OpenApiParameter(
                "ctx",
                api_schema.CONTEXT,
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
        # A column costs an ordinary estimate (sizing_site.apikit.budget).
        with budget.spend(request, len(form.cleaned_data["columns"])):
            columns = compare_columns(specs=form.cleaned_data["columns"], context_tokens=ctx)
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
                "columns": [_column_data(name, c) for name, c in zip(names, columns, strict=True)],
                "rows": [
                    {
                        "figure": row.label,
                        "kind": row.kind,
                        "values": row.values,
                        "best": sorted(row.best),
                    }
                    for row in compare_rows(columns)
                ],
            }
        )


def _column_data(name: str, column: CompareColumn) -> dict[str, Any]:
    """A column as the page shows it: the quant, engine and backend sized."""
    choice, spec = column.choice, column.spec
    engine = spec.engine if spec is not None else ""
    slugs = (column.model.slug, column.accelerator.slug)
    return {
        "param": name,
        "spec": column_param(*slugs, column.quant, column.gpus, engine),
        "model": row_data(column.model),
        "accelerator": row_data(column.accelerator),
        "quant": column.quant,
        "gpus": column.gpus,
        "engine": choice.engine if choice else "",
        "backend": choice.backend if choice else "",
        "quant_note": column.note,
        "cost": None if column.cost is None else column.cost.to_json(),
        "result": column.result,
    }
