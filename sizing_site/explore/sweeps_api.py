"""Sweeps under /api/v1/: the explore pages' tables for scripts.

- `sweeps/models/<model>/accelerators/`: a model on every card, as the model page
  (explore:model-gpus) computes it with the same filters and sort;
- `sweeps/accelerators/<card>/models/`: a card across every model, as the card page
  (explore:gpu-models).

Each reads the page's own form (sizing_site.explore.forms, with the sweep's `page` and
`page_size` beside it) from the query parameters into the page's typed query
(sizing_site.explore.queries), and calls the page's own table selector
(sizing_site.explore.selectors), so a row here is the row on the page; it renders the
table as JSON (sizing_site.explore.sweeps_schema). Bad filters are 400 naming the
parameter, an unknown slug 404, in the API's one error shape. The views are the catalog
API's (sizing_site.explore.catalog_base.CatalogView): reads for signed-in users, an `ETag`
from the catalog version, the cloud prices the table reads, the address and the caller's
staff flag (`If-None-Match` answers 304 before any sweep), and `Last-Modified` from the
newest edit of the rows' table. The compare endpoint (sizing_site.explore.compare_api)
builds on the same SweepView.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, QueryDict
from django.utils.http import quote_etag
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from catalog import sizing
from catalog.models import Accelerator, LLMModel
from catalog.sizing import candidates
from catalog.sizing.specs import stated_layers
from estimator.api import RequestError
from sizing_site.apikit import budget, schema
from sizing_site.apikit.errors import form_errors, single_values
from sizing_site.explore import api_schema, selectors
from sizing_site.explore import sweeps_schema as shapes
from sizing_site.explore.catalog_base import CatalogView
from sizing_site.explore.costs import offers_key
from sizing_site.explore.forms import (
    CARD_SORT_CHOICES,
    MODEL_SORT_CHOICES,
    CardModelsForm,
    ExploreForm,
    ModelCardsForm,
    ascii_count,
)
from sizing_site.explore.queries import (
    MAX_PAGE,
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    CardModelsQuery,
    ModelCardsQuery,
    TableQuery,
)
from sizing_site.explore.sweeps_schema import REF
from sizing_site.explore.tables import TablePage
from sizing_site.tenancy.models import Organization
from sizing_site.tenancy.selectors import viewer_organizations

Q = TypeVar("Q", bound=TableQuery)

# --- query parameters ------------------------------------------------------------------


class CountField(forms.Field):
    """A whole number from 1 to `most` in ASCII digits (forms.ascii_count), `default` when
    absent or empty."""

    def __init__(self, *, most: int, default: int, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)
        self.most, self.default = most, default

    def to_python(self, value: Any) -> int:
        text = str(value or "").strip()
        if not text:
            return self.default
        count = ascii_count(text, most=self.most)
        if count is None:
            message = _("Enter a whole number from 1 to %(max)s.") % {"max": self.most}
            raise ValidationError(message, code="invalid")
        return count


class SweepPaging(forms.Form):
    """A sweep's page of rows; a page links its own leniently (queries.page_number)."""

    page = CountField(most=MAX_PAGE, default=1)
    page_size = CountField(most=MAX_PAGE_SIZE, default=PAGE_SIZE)


class ModelCardsInput(SweepPaging, ModelCardsForm):
    """The model sweep's query parameters: the model page's filters and the page."""


class CardModelsInput(SweepPaging, CardModelsForm):
    """The card sweep's query parameters: the card page's filters and the page."""


# The sweeps' parameters that are numbers, true/false or a choice: blank or repeated is a
# 400 (apikit.errors.single_values), as the schema's types say.
TYPED_PARAMETERS = ("ctx", "show_all", "sort", "page", "page_size", "memory_min_gb")


def sweep_query(query_class: type[Q], form: ExploreForm, params: QueryDict) -> Q:
    """The sweep's typed query from its input form, or a 400 naming each bad parameter (a
    repeated or blank typed one too: the form would read the last, or the default)."""
    errors = {} if form.is_valid() else form_errors(form)
    errors.update(single_values(params, TYPED_PARAMETERS))
    if errors:
        raise exceptions.ValidationError(errors)
    return query_class.from_form(form)


def _page_there(query: TableQuery, page: TablePage[Any]) -> None:
    """A page past the last is 404 naming `page` (a page link clamps it instead)."""
    if query.page > page.pages:
        message = _("There is no page %(page)s: the table has %(pages)s.")
        raise exceptions.NotFound({"page": [message % {"page": query.page, "pages": page.pages}]})


def _sizing_error(exc: RequestError) -> exceptions.ValidationError:
    """The estimator's refusal of a sweep (the page shows it as a form error): the context
    is the only figure a visitor set, so it names ctx when about the context."""
    field = "ctx" if "context" in exc.field else "detail"
    return exceptions.ValidationError({field: [exc.message]})


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

    @functools.cached_property
    def viewer(self) -> selectors.ExploreViewer:
        """What the table reads, once per request (the offers: ETag and rows)."""
        return selectors.ExploreViewer(self.organizations)

    def offers_key(self) -> tuple[object, ...]:
        """The cloud prices the table reads (they change without a catalog edit)."""
        return ()

    def _etag(self, request: Request) -> str | None:
        catalog_tag = super()._etag(request)
        if catalog_tag is None:
            return None
        basis = f"{catalog_tag}|{self.offers_key()}"
        return quote_etag(hashlib.sha256(basis.encode()).hexdigest()[:32])


def _parameters(*, sorts: Sequence[tuple[str, Any]], default_sort: str) -> list[OpenApiParameter]:
    return [
        OpenApiParameter(
            "ctx",
            api_schema.CONTEXT,
            OpenApiParameter.QUERY,
            description="Context tokens (at least 1024; default 8192, on a model at most "
            "its own limit).",
        ),
        OpenApiParameter(
            "quality",
            OpenApiTypes.STR,
            OpenApiParameter.QUERY,
            description="The most compressed GGUF quant accepted (a quant format's name, "
            "e.g. Q4_K_M; default the lowest format of quality tier good, see docs/estimator.md).",
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


MODEL_CARDS = {
    "type": "object",
    "properties": {
        "model": shapes.OWNED_REF,
        "filters": shapes.FILTERS,
        "quants": {"type": "array", "items": {"type": "string"}},
        **shapes.PAGE,
        "summary": {
            "type": "object",
            "properties": {
                "cards": {"type": "integer", "description": "Cards the estimator can size."},
                "candidates": {"type": "integer", "description": "Cards matching the filters."},
                "fitting": {"type": "integer"},
                "median_tokens_per_s": shapes.MEDIAN,
                "median_of": {"type": "integer"},
                "confidence_counts": shapes.COUNTS,
                "unpriced": {"type": "integer"},
                "priced_unranked": {"type": "integer"},
                **{
                    name: shapes.nullable(shapes.CARD_ROW)
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
        "results": {"type": "array", "items": shapes.CARD_ROW},
    },
}
CARD_MODELS = {
    "type": "object",
    "properties": {
        "accelerator": shapes.OWNED_REF,
        "filters": shapes.FILTERS,
        "quants": {"type": "array", "items": {"type": "string"}},
        **shapes.PAGE,
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
                        "properties": {"model": REF, "reason": {"type": "string"}},
                    },
                },
                "median_tokens_per_s": shapes.MEDIAN,
                "median_of": {"type": "integer"},
                "confidence_counts": shapes.COUNTS,
                "largest_comfortable": shapes.nullable(shapes.MODEL_ROW),
                "fastest": shapes.nullable(shapes.MODEL_ROW),
            },
        },
        "results": {"type": "array", "items": shapes.MODEL_ROW},
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
        return offers_key(self.viewer.offers)

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
        viewer = self.viewer
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
        params = request.query_params
        form = ModelCardsInput(
            params, ladder=viewer.ladder, max_context=max_context, vendors=viewer.vendors
        )
        query = sweep_query(ModelCardsQuery, form, params)
        # Priced at its width before it runs, kept or not; filters and pages do not narrow
        # the sweep itself, so it is never too large, only charged (sizing_site.apikit.budget).
        units = budget.sweep_units([stated_layers(model.config)] * len(viewer.cards))
        with budget.spend(request, units, divisible=False):
            try:
                table = selectors.model_card_table_for(model=model, query=query, viewer=viewer)
            except RequestError as exc:
                raise _sizing_error(exc) from None
        _page_there(query, table.page)
        body = shapes.model_cards_data(table, model=model, query=query, owners=self.owners)
        return Response(body)


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
        # The card's table reads this card's offer only.
        return (self.viewer.offers.get(self.card.pk),)

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
        card, viewer = self.card, self.viewer
        params = request.query_params
        form = CardModelsInput(params, ladder=viewer.ladder)
        query = sweep_query(CardModelsQuery, form, params)
        units = budget.sweep_units(stated_layers(m.config) for m in viewer.models)
        with budget.spend(request, units, divisible=False):
            table = selectors.card_model_table_for(card=card, query=query, viewer=viewer)
        _page_there(query, table.page)
        body = shapes.card_models_data(table, card=card, query=query, owners=self.owners)
        return Response(body)
