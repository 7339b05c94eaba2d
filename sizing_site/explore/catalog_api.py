"""The catalog under /api/v1/catalog/: models (with their config summary, the config.json
on a model's own page), a model's weights and measured sizes, accelerators (the engine
support matrix on a card's own page), engines and quant formats.

- Reads (GET, HEAD, OPTIONS) for any signed-in user; staff may PATCH a few scalar fields
  of one row: notes on a model, engine or quant format; notes, price_usd and price_date
  on an accelerator (weights are read-only). Every other write is 405 for staff and 403
  for everyone else.
- Filters as query parameters (400 with {"errors": {"<param>": [...]}} when malformed:
  the project's error shape, sizing_site.apikit.errors),
  `?search=` (DRF SearchFilter), `?ordering=` (the names in each view's ORDERING, "-" for
  descending), cursor pagination of 50 rows (`page_size` up to 200).
- `ETag` from the catalog version (catalog.sizing.cache: every catalog edit starts a new
  one), the address and the caller's staff flag, so `If-None-Match` answers 304 before
  any row is read; `Last-Modified` is the newest `updated` of the rows' table.

The catalog tables have no organisation-owned rows (only price offers do, and they are not
served here), so every signed-in user sees the same rows.
"""

from __future__ import annotations

from datetime import date
from typing import Any, ClassVar

from django.db.models import BigIntegerField, Q, QuerySet, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from rest_framework import exceptions

from catalog.hardware import support_matrix
from catalog.models import (
    Accelerator,
    InferenceEngine,
    LLMModel,
    ModelWeights,
    QuantFormat,
    Segment,
)
from catalog.selectors import visible_accelerators_among, visible_models_among
from sizing_site.apikit.errors import single_values
from sizing_site.explore import catalog_serializers as cs
from sizing_site.explore.catalog_base import (
    BOOLEAN,
    CONFIG_KEYS,
    NUMBER,
    TEXT,
    CatalogView,
    boolean_filter,
    documented,
    floor_of,
    number_filter,
    query_parameter,
)

# --- models ------------------------------------------------------------------------------


class ModelRows(CatalogView):
    table = LLMModel
    owned_rows = True
    search_fields = ["name", "family", "publisher", "hf_repo", "slug"]
    ORDERING: ClassVar[dict[str, str]] = {
        "name": "name",
        "slug": "slug",
        "family": "family",
        "params_total": "sort_params",
        "max_context_tokens": "sort_context",
        "release_date": "sort_release",
    }
    ordering: ClassVar[list[str]] = ["family", "name", "slug"]
    patch_serializer_class = cs.NotesPatchSerializer

    def get_queryset(self) -> QuerySet[LLMModel]:
        params = self.request.query_params
        rows = visible_models_among(self.organization_keys()).select_related("organization")
        rows = rows.annotate(
            sort_params=floor_of("params_total", -1, BigIntegerField()),
            sort_context=floor_of("max_context_tokens", -1, BigIntegerField()),
            sort_release=Coalesce("release_date", Value(date.min)),
            **{name: KT(path) for name, path in CONFIG_KEYS.items()},
        )
        if family := params.get("family", "").strip():
            rows = rows.filter(family__iexact=family)
        billion = 1e9
        if (low := number_filter(params, "params_min_b")) is not None:
            rows = rows.filter(params_total__gte=low * billion)
        if (high := number_filter(params, "params_max_b")) is not None:
            rows = rows.filter(params_total__lte=high * billion)
        moe = boolean_filter(params, "moe")
        if moe is not None:
            is_moe = Q(architecture__in=("moe", "mla"))
            rows = rows.filter(is_moe) if moe else rows.exclude(is_moe)
        return rows


@documented(
    "models",
    cs.ModelSerializer,
    what="models",
    filters=(
        query_parameter("family", TEXT, "Family, exact, any case."),
        query_parameter("params_min_b", NUMBER, "Total parameters at least, billions."),
        query_parameter("params_max_b", NUMBER, "Total parameters at most, billions."),
        query_parameter("moe", BOOLEAN, "Mixture-of-experts models only (true) or none (false)."),
    ),
)
class ModelListApi(ModelRows):
    """Models with their config summary. Filters: family (exact, any case), params_min_b
    and params_max_b (total parameters, billions), moe (true/false). Search: name,
    family, publisher, Hugging Face repo, slug."""

    serializer_class = cs.ModelSerializer

    def get_queryset(self) -> QuerySet[LLMModel]:
        return super().get_queryset().defer("config")


@documented(
    "models", cs.ModelDetailSerializer, what="model", detail=True, patch=cs.NotesPatchSerializer
)
class ModelDetailApi(ModelRows):
    """One model by slug, with its config.json. Staff may PATCH: notes."""

    detail = True

    serializer_class = cs.ModelDetailSerializer


@documented(
    "models_weights",
    cs.WeightsSerializer,
    what="weights of a model",
    filters=(query_parameter("format", TEXT, "gguf or hf."),),
)
class WeightsListApi(CatalogView):
    """A model's weights and measured sizes, by format then quant. Filter: format
    (gguf/hf). Search: quant, repo."""

    table = ModelWeights
    owned_rows = True
    serializer_class = cs.WeightsSerializer
    search_fields = ["quant", "repo"]
    ORDERING: ClassVar[dict[str, str]] = {
        "quant": "quant",
        "format": "format",
        "file_bytes": "sort_bytes",
    }
    ordering: ClassVar[list[str]] = ["format", "quant", "pk"]
    TIEBREAK = "pk"

    def get_queryset(self) -> QuerySet[ModelWeights]:
        models = visible_models_among(self.organization_keys()).only("pk")
        model = get_object_or_404(models, slug=self.kwargs["slug"])
        rows = (
            ModelWeights.objects.filter(model=model)
            .select_related("model")
            .only(*[f.name for f in ModelWeights._meta.concrete_fields], "model__slug")
            .annotate(sort_bytes=floor_of("file_bytes", -1, BigIntegerField()))
        )
        if fmt := self.request.query_params.get("format", "").strip():
            rows = rows.filter(format=fmt.lower())
        return rows


# --- accelerators ------------------------------------------------------------------------


class AcceleratorRows(CatalogView):
    table = Accelerator
    owned_rows = True
    search_fields = ["name", "vendor", "slug", "aliases"]
    ORDERING: ClassVar[dict[str, str]] = {
        "name": "name",
        "slug": "slug",
        "vendor": "vendor",
        "memory_gb": "sort_memory",
        "bandwidth_gbps": "sort_bandwidth",
        "fp16_tflops": "sort_fp16",
        "price_usd": "sort_price",
        "release_date": "sort_release",
    }
    ordering: ClassVar[list[str]] = ["vendor", "name", "slug"]
    patch_serializer_class = cs.AcceleratorPatchSerializer

    def get_queryset(self) -> QuerySet[Accelerator]:
        params = self.request.query_params
        rows = visible_accelerators_among(self.organization_keys())
        rows = rows.select_related("default_engine", "organization").annotate(
            sort_memory=floor_of("memory_gb"),
            sort_bandwidth=floor_of("bandwidth_gbps"),
            sort_fp16=floor_of("fp16_tflops"),
            sort_price=floor_of("price_usd"),
            sort_release=Coalesce("release_date", Value(date.min)),
        )
        if vendor := params.get("vendor", "").strip():
            rows = rows.filter(vendor__iexact=vendor)
        if errors := single_values(params, ("segment",)):
            raise exceptions.ValidationError(errors)
        if segment := params.get("segment", "").strip():
            if segment not in Segment.values:
                choices = ", ".join(Segment.values)
                message = _("Choose one of: %(choices)s.") % {"choices": choices}
                raise exceptions.ValidationError({"segment": [message]})
            rows = rows.filter(segment=segment)
        if (memory := number_filter(params, "memory_min_gb")) is not None:
            rows = rows.filter(memory_gb__gte=memory)
        curated = boolean_filter(params, "curated")
        if curated is not None:
            rows = rows.filter(curated=curated)
        return rows


@documented(
    "accelerators",
    cs.AcceleratorSerializer,
    what="accelerators",
    filters=(
        query_parameter("vendor", TEXT, "Vendor, exact, any case."),
        query_parameter("segment", TEXT, "The market segment.", enum=list(Segment.values)),
        query_parameter("memory_min_gb", NUMBER, "The vendor's memory figure at least, GB."),
        query_parameter("curated", BOOLEAN, "Curated cards only (true) or the others (false)."),
    ),
)
class AcceleratorListApi(AcceleratorRows):
    """Accelerators with their specs and sources. Filters: vendor (exact, any case),
    segment (consumer/workstation/datacenter/soc), memory_min_gb (the vendor's memory
    figure, GB), curated (true/false). Search: name, vendor, slug, aliases."""

    serializer_class = cs.AcceleratorSerializer


@documented(
    "accelerators",
    cs.AcceleratorDetailSerializer,
    what="accelerator",
    detail=True,
    patch=cs.AcceleratorPatchSerializer,
)
class AcceleratorDetailApi(AcceleratorRows):
    """One card by slug with the engine support matrix. Staff may PATCH: notes,
    price_usd, price_date."""

    detail = True

    serializer_class = cs.AcceleratorDetailSerializer

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "support_matrix": support_matrix()}


# --- engines and quant formats -------------------------------------------------------------


class EngineRows(CatalogView):
    table = InferenceEngine
    search_fields = ["name", "slug"]
    ORDERING: ClassVar[dict[str, str]] = {"name": "name", "slug": "slug"}
    ordering: ClassVar[list[str]] = ["name", "slug"]
    patch_serializer_class = cs.NotesPatchSerializer
    serializer_class = cs.EngineSerializer

    def get_queryset(self) -> QuerySet[InferenceEngine]:
        return InferenceEngine.objects.all()


@documented("engines", cs.EngineSerializer, what="inference engines")
class EngineListApi(EngineRows):
    """Inference engines: versions covered, formats, backends, launch templates."""


@documented(
    "engines",
    cs.EngineSerializer,
    what="inference engine",
    detail=True,
    patch=cs.NotesPatchSerializer,
)
class EngineDetailApi(EngineRows):
    """One engine by slug. Staff may PATCH: notes."""

    detail = True


class QuantFormatRows(CatalogView):
    table = QuantFormat
    search_fields = ["name", "slug", "description"]
    ORDERING: ClassVar[dict[str, str]] = {
        "name": "name",
        "slug": "slug",
        "bits_per_weight": "bits_per_weight",
        "quality_rank": "quality_rank",
    }
    ordering: ClassVar[list[str]] = ["family", "-quality_rank", "slug"]
    patch_serializer_class = cs.NotesPatchSerializer
    serializer_class = cs.QuantFormatSerializer

    def get_queryset(self) -> QuerySet[QuantFormat]:
        rows = QuantFormat.objects.all()
        if family := self.request.query_params.get("family", "").strip():
            rows = rows.filter(family=family.lower())
        return rows


@documented(
    "quant_formats",
    cs.QuantFormatSerializer,
    what="quantization formats",
    filters=(query_parameter("family", TEXT, "gguf or hf."),),
)
class QuantFormatListApi(QuantFormatRows):
    """Quantization formats: family (gguf/hf), nominal bits per weight, quality rank.
    Filter: family."""


@documented(
    "quant_formats",
    cs.QuantFormatSerializer,
    what="quantization format",
    detail=True,
    patch=cs.NotesPatchSerializer,
)
class QuantFormatDetailApi(QuantFormatRows):
    """One quant format by slug. Staff may PATCH: notes."""

    detail = True
