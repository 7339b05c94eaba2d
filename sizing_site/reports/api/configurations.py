"""Saved configurations in the API: list, save (sized on the server), read, rename,
delete, recompute, export, duplicate and compare (reports.api, for the rules)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode
from uuid import UUID

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import Accelerator, LLMModel
from catalog.sizing.specs import stated_layers
from sizing_site.apikit import budget, schema
from sizing_site.apikit.errors import Refused, form_errors
from sizing_site.apikit.inputs import BodyInput, Choice, OptionalText, QueryInput
from sizing_site.apikit.pagination import NumberedPages
from sizing_site.configurator.api import RENT_FIELDS, setup_query
from sizing_site.configurator.api_schema import RENT_PROPERTIES, SETUP_PROPERTIES
from sizing_site.configurator.rent_forms import RentBuyForm
from sizing_site.configurator.state import (
    ConfiguratorState,
    StateError,
    configuration_pair,
    configuration_size,
)
from sizing_site.reports import selectors, services
from sizing_site.reports.api.base import TAGS, ReportsApiView, schema_responses
from sizing_site.reports.api.configuration_schema import (
    COMPARE,
    DETAIL,
    EXPORT,
    MAX_TAGS,
    PAGE,
    RECOMPUTE,
    TAG_MAX,
    TAGS_REQUEST,
)
from sizing_site.reports.forms import SaveForm
from sizing_site.reports.models import NAME_MAX, NOTES_MAX, SavedConfiguration
from sizing_site.tenancy.access import Tenant

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200


# --- input ---------------------------------------------------------------------------


class Schemed(serializers.Field[Any, Any, Any, Any]):
    """A body field whose JSON value the save page's form checks, with its schema given:
    a setup field (what POST /api/v1/estimate/ takes: a number, a string, true, false or
    null, turned into the configurator's query by setup_query) or the tags."""

    def __init__(self, schema: dict[str, Any], **kwargs: Any) -> None:
        self.schema = schema
        super().__init__(required=False, allow_null=True, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class SchemedSchema(OpenApiSerializerFieldExtension):
    """The schema a Schemed field (Tags too) was given."""

    target_class = Schemed
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        field: Schemed = self.target
        return field.schema


class Tags(Schemed):
    """The tags as a list of strings (each one tag), or as the save page's text (SaveForm
    splits it at commas); null is no tags."""

    def to_internal_value(self, data: Any) -> str | list[str]:
        if isinstance(data, str):
            return data
        if not isinstance(data, list):
            raise serializers.ValidationError(_("Expected a string."))
        if not all(isinstance(t, str) for t in data):
            raise serializers.ValidationError(_("Expected a list of strings."))
        if len(data) > MAX_TAGS or any(len(t) > TAG_MAX for t in data):
            message = _("At most %(n)d tags of at most %(chars)d characters each.")
            raise serializers.ValidationError(message % {"n": MAX_TAGS, "chars": TAG_MAX})
        return [t.strip() for t in data if t.strip()]


class NameInput(BodyInput):
    """A name as the page's rename form (NameForm) takes it: not blank once stripped."""

    name = serializers.CharField(max_length=NAME_MAX)

    class Meta:
        ref_name = "ConfigurationName"

    # Never partial: a rename is a PATCH that must send the name, and drf-spectacular
    # documents a PATCH body as partial (every field optional) unless the serializer says no.
    @property
    def partial(self) -> bool:
        return False

    @partial.setter
    def partial(self, value: bool) -> None:
        pass


class SaveInput(NameInput):
    """A name, and the setup as POST /api/v1/estimate/ takes it (absent setup fields at
    the configurator's defaults), with its rent-or-buy figures for the cost (absent: the
    catalog's). The server sizes it; the slugs are SaveForm's to check."""

    notes = OptionalText(max_length=NOTES_MAX)
    tags = Tags(TAGS_REQUEST)
    model = serializers.CharField(help_text="Model slug.")
    accelerator = serializers.CharField(help_text="Accelerator slug.")

    class Meta:
        ref_name = "ConfigurationSave"

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        # The setup fields are the configurator's (its schema names each).
        setup = {
            name: Schemed(schema)
            for name, schema in {**SETUP_PROPERTIES, **RENT_PROPERTIES}.items()
        }
        return {**super().get_fields(), **setup}


# --- the workflow's inputs -----------------------------------------------------------


def _pair(
    *, model_slug: str, accelerator_slug: str, tenant: Tenant
) -> tuple[LLMModel, Accelerator]:
    """The rows a state names, over the public catalog and the tenant's own
    (configurator.state.configuration_pair): an unknown slug (another organisation's own
    row too) is a 404 naming it."""
    try:
        return configuration_pair(
            model_slug=model_slug,
            accelerator_slug=accelerator_slug,
            organizations=[tenant.organization],
        )
    except StateError as exc:
        raise Refused(exc.errors, exc.status) from None


def _check_rent(data: dict[str, str], *, accelerator: Accelerator, gpus: int) -> None:
    """Rent-or-buy figures the estimate endpoint would refuse are refused here too (400
    naming the field), not saved as a cost at the catalog's figures."""
    rent = RentBuyForm.for_card(data, accelerator=accelerator, gpus=gpus)
    if rent.is_bound and not rent.is_valid():
        raise Refused(form_errors(rent))


def _units(model: LLMModel) -> float:
    """Sizing a state costs one estimate of its model (sizing_site.apikit.budget)."""
    return budget.estimate_units(layers=stated_layers(model.config))


def _recomputed(
    request: Request, configuration: SavedConfiguration, tenant: Tenant
) -> ConfiguratorState | None:
    """The saved parameters sized today, as the recompute page sizes them, within the work
    budget; None when they no longer stand for a state that can be sized."""
    try:
        model, accelerator = configuration_pair(
            model_slug=configuration.model_slug,
            accelerator_slug=configuration.accelerator_slug,
            organizations=[tenant.organization],
        )
    except StateError:
        with budget.spend(request, 1):
            return None
    with budget.spend(request, _units(model)):
        try:
            return configuration_size(
                model=model, accelerator=accelerator, data=configuration.query
            )
        except StateError:
            return None


# --- output --------------------------------------------------------------------------


def _summary(c: SavedConfiguration) -> dict[str, Any]:
    """One row of the list: what the list page shows, from the frozen snapshot."""
    snapshot = c.frozen
    result, setup = snapshot.result, snapshot.setup
    return {
        "code": str(c.code),
        "name": c.name,
        "notes": c.notes,
        "tags": c.tags,
        "model": c.model_slug,
        "accelerator": c.accelerator_slug,
        "quant": setup.get("quant"),
        "gpus": setup.get("gpus"),
        "verdict": result["fit"]["verdict"],
        "per_device_bytes": result.get("per_device_bytes"),
        "cost": None if snapshot.cost is None else snapshot.cost.to_json(),
        "saved_by": c.created_by.get_username() if c.created_by else None,
        "saved_at": c.created.isoformat(),
    }


def _detail(c: SavedConfiguration) -> dict[str, Any]:
    """The page's JSON export plus the model and card slugs."""
    return {
        **selectors.configuration_export(configuration=c),
        "model": c.model_slug,
        "accelerator": c.accelerator_slug,
    }


# --- views ---------------------------------------------------------------------------


class ConfigurationPages(NumberedPages):
    page_size = PAGE_SIZE
    max_page_size = MAX_PAGE_SIZE


PAGE_PARAMETERS = [
    OpenApiParameter("page", int),
    OpenApiParameter("page_size", int, description=f"At most {MAX_PAGE_SIZE}."),
]


class ConfigurationListApi(ReportsApiView):
    class InputSerializer(QueryInput):
        """The list page's search, order and "mine only"; each may be left out."""

        q = serializers.CharField(
            required=False,
            allow_blank=True,
            default="",
            help_text="Search in names, notes and tags.",
        )
        sort = Choice(
            choices=list(selectors.SORTS),
            default="new",
            error_messages={"invalid_choice": gettext_lazy("Expected one of: %(choices)s.")},
            help_text="Default: new.",
        )
        mine = serializers.BooleanField(
            default=False,
            error_messages={"invalid": gettext_lazy("Expected true or false.")},
            help_text="Only the caller's own.",
        )

    @extend_schema(
        operation_id="configurations_list",
        summary="The organization's saved configurations, a page at a time",
        parameters=[InputSerializer, *PAGE_PARAMETERS],
        responses=schema_responses(
            200, PAGE, bad="A bad sort, mine or page.", missing="Not a member, or no such page."
        ),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        wanted = params.validated_data
        rows: QuerySet[SavedConfiguration] = selectors.saved_configuration_list(
            tenant=self.tenant,
            mine_of=request.user if wanted["mine"] else None,
            search=wanted["q"][:100],
            sort=wanted["sort"],
        )
        pages = ConfigurationPages()
        page = pages.paginate_queryset(rows, request, view=self) or []
        return pages.get_paginated_response([_summary(c) for c in page])

    @extend_schema(
        operation_id="configurations_create",
        summary="Size a setup now and save it",
        request=SaveInput,
        responses={
            **schema_responses(
                201,
                DETAIL,
                write=True,
                bad="Bad input, the field named (an unknown field too).",
                missing="Not a member; or no model or card with this slug (the field named).",
            ),
            429: schema.BUDGET_RESPONSES[429],
        },
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        body = SaveInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        tags = data.get("tags")
        # Tags sent as text are the page's field, for SaveForm to split.
        form = SaveForm(
            {
                **{name: data[name] for name in ("name", "notes", "model", "accelerator")},
                "tags": tags if isinstance(tags, str) else "",
                "query": urlencode(setup_query(data)),
            }
        )
        if not form.is_valid():
            raise Refused(form_errors(form, {"query": "setup"}))
        clean = form.cleaned_data
        model, accelerator = _pair(
            model_slug=clean["model"], accelerator_slug=clean["accelerator"], tenant=self.tenant
        )
        try:
            # Sizing it costs one estimate of the model (sizing_site.apikit.budget).
            with budget.spend(request, _units(model)):
                state = configuration_size(
                    model=model, accelerator=accelerator, data=dict(parse_qsl(clean["query"]))
                )
                # null is "not given": the figure the page would use (the card's price...).
                sent = setup_query(data, RENT_FIELDS)
                rent = {name: value for name, value in sent.items() if value != ""}
                _check_rent(rent, accelerator=accelerator, gpus=state.setup.gpus)
                saved = services.saved_configuration_create(
                    tenant=self.tenant,
                    user=request.user,
                    name=clean["name"],
                    notes=clean["notes"],
                    tags=tags if isinstance(tags, list) else clean["tags"],
                    state=state,
                    data=rent,
                )
        except StateError as exc:
            raise Refused(exc.errors, exc.status) from None
        return Response(_detail(saved), status=status.HTTP_201_CREATED)


class ConfigurationDetailApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_retrieve",
        summary="One saved configuration, its frozen snapshot",
        responses=schema_responses(200, DETAIL),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        return Response(_detail(self.configuration(code)))

    @extend_schema(
        operation_id="configurations_partial_update",
        summary="Rename a saved configuration",
        request=NameInput,
        responses=schema_responses(200, DETAIL, write=True, bad="Bad name, or another field sent."),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        body = NameInput(data=request.data)
        body.is_valid(raise_exception=True)
        renamed = services.saved_configuration_rename(
            tenant=self.tenant,
            user=request.user,
            configuration=configuration,
            name=body.validated_data["name"],
        )
        return Response(_detail(renamed))

    @extend_schema(
        operation_id="configurations_destroy",
        summary="Delete a saved configuration (its share links with it)",
        request=None,
        responses=schema_responses(204, "Deleted.", write=True),
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, code: UUID) -> Response:
        services.saved_configuration_delete(
            tenant=self.tenant, user=request.user, configuration=self.configuration(code)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConfigurationRecomputeApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_recompute",
        summary="Today's figures for a saved configuration, and what changed",
        responses={**schema_responses(200, RECOMPUTE), 429: schema.BUDGET_RESPONSES[429]},
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        state = _recomputed(request, configuration, self.tenant)
        today, changes = selectors.configuration_changes(configuration=configuration, state=state)
        catalog = (
            selectors.catalog_changes(saved=configuration.frozen, today=today) if today else []
        )
        return Response(
            {
                "code": str(configuration.code),
                "sizeable": today is not None,
                "today": today.to_json() if today else None,
                "changes": changes,
                "catalog_changes": [{**row, "label": str(row["label"])} for row in catalog],
            }
        )


class ConfigurationExportApi(ReportsApiView):
    @extend_schema(
        operation_id="configurations_export",
        summary="A saved configuration as the report page's JSON export",
        responses=schema_responses(200, EXPORT),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        return Response(selectors.configuration_export(configuration=configuration))


class ConfigurationDuplicateApi(ReportsApiView):
    class InputSerializer(NameInput):
        """No name (or null): the page's own name for a copy (the service's default)."""

        name = serializers.CharField(required=False, allow_null=True, max_length=NAME_MAX)

        class Meta:
            ref_name = "ConfigurationDuplicate"

    @extend_schema(
        operation_id="configurations_duplicate",
        summary="Copy a saved configuration (the same frozen snapshot)",
        request=InputSerializer,
        responses=schema_responses(201, DETAIL, write=True, bad="Bad name, or another field sent."),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str, code: UUID) -> Response:
        configuration = self.configuration(code)
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        copy = services.saved_configuration_duplicate(
            tenant=self.tenant,
            user=request.user,
            configuration=configuration,
            name=body.validated_data.get("name"),
        )
        return Response(_detail(copy), status=status.HTTP_201_CREATED)


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "format": "uuid"},
        "minItems": 2,
        "maxItems": 4,
        "uniqueItems": True,
    }
)
class Codes(serializers.ListField):
    """Configuration codes, checked by the view's own words (validate_c) rather than
    a UUIDField's, whose refusal would name the item's index."""


class ConfigurationCompareApi(ReportsApiView):
    """2 to 4 saved configurations side by side, from their frozen snapshots (nothing is
    recomputed), as the compare page shows them: the best value of each figure marked."""

    class InputSerializer(QueryInput):
        TWO_TO_FOUR = gettext_lazy("Send 2 to 4 different configuration codes.")

        c = Codes(
            child=serializers.CharField(allow_blank=True, trim_whitespace=False),
            min_length=2,
            max_length=4,
            error_messages=dict.fromkeys(
                ("required", "empty", "min_length", "max_length"), TWO_TO_FOUR
            ),
            help_text="A configuration's code, 2-4 different ones.",
        )

        def validate_c(self, codes: list[str]) -> list[str]:
            if len(set(codes)) < len(codes):
                raise serializers.ValidationError(self.TWO_TO_FOUR)
            try:
                return [str(UUID(code)) for code in codes]
            except ValueError:
                raise serializers.ValidationError(_("Expected configuration codes.")) from None

    @extend_schema(
        operation_id="configurations_compare",
        summary="Compare 2 to 4 saved configurations",
        parameters=[InputSerializer],
        responses=schema_responses(
            200,
            COMPARE,
            bad="Fewer than 2 or more than 4 codes, one twice, or a malformed one.",
            missing="Not a member, or a code of no configuration of the organization.",
        ),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        codes = params.validated_data["c"]
        rows = selectors.saved_configurations_by_codes(tenant=self.tenant, codes=codes)
        return Response(
            {
                "configurations": [_summary(c) for c in rows],
                "rows": [
                    {
                        "figure": row.label,
                        "kind": row.kind,
                        "values": row.values,
                        "best": sorted(row.best),
                        "uncalibrated": sorted(row.uncalibrated),
                    }
                    for row in selectors.saved_compare_rows(configurations=rows)
                ],
            }
        )
