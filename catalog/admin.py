from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import BadRequest
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from import_export.admin import ImportExportModelAdmin
from simple_history.admin import SimpleHistoryAdmin

from catalog.forms import BoundedJSONField
from catalog.models import (
    Accelerator,
    EngineSupport,
    InferenceEngine,
    LLMModel,
    ModelWeights,
    QuantFormat,
)
from catalog.resources import AcceleratorResource, LLMModelResource
from catalog.services import CatalogError
from catalog.services.configs import model_apply_config, model_config_require_size
from catalog.services.review import catalog_mark_reviewed


@admin.action(description=_("Mark as reviewed"))
def mark_reviewed(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, rows: QuerySet[Any]
) -> None:
    count = catalog_mark_reviewed(rows=rows)
    message = gettext("Rows marked reviewed: %(n)d") % {"n": count}
    modeladmin.message_user(request, message, messages.SUCCESS)


class MemoryFilter(admin.SimpleListFilter):
    title = _("memory")
    parameter_name = "memory"
    BUCKETS = {"lt16": (0, 16), "16-32": (16, 32), "32-80": (32, 80), "80plus": (80, None)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("lt16", _("under 16 GB")),
            ("16-32", _("16 to 32 GB")),
            ("32-80", _("32 to 80 GB")),
            ("80plus", _("80 GB and more")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() not in self.BUCKETS:
            return queryset
        low, high = self.BUCKETS[str(self.value())]
        queryset = queryset.filter(memory_gb__gte=low)
        return queryset if high is None else queryset.filter(memory_gb__lt=high)


class ExportAdmin(ImportExportModelAdmin):
    """The export page filters like the change list; a filter parameter that names no
    field is a 400 there too (django-import-export lets IncorrectLookupParameters out)."""

    def get_export_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        try:
            queryset: QuerySet[Any] = super().get_export_queryset(request)
        except IncorrectLookupParameters as exc:
            raise BadRequest(str(exc)) from None
        return queryset


# Every JSON field the catalog admin edits, with the size and nesting caps.
BOUNDED_JSON: dict[Any, dict[str, Any]] = {models.JSONField: {"form_class": BoundedJSONField}}


class LLMModelForm(forms.ModelForm):
    # No Meta: admin builds the form for LLMModel with its own field list.

    def clean_config(self) -> Any:
        config = self.cleaned_data["config"]
        if config:
            try:
                model_config_require_size(config=config)
            except CatalogError as exc:
                raise forms.ValidationError(exc.message) from None
        return config


class ModelWeightsInline(admin.TabularInline):
    model = ModelWeights
    formfield_overrides = BOUNDED_JSON
    extra = 0
    fields = [
        "format",
        "quant",
        "file_bytes",
        "computed_bytes",
        "file_bytes_source",
        "repo",
        "quality_note",
        "needs_review",
    ]
    readonly_fields = ["computed_bytes"]


@admin.register(LLMModel)
class LLMModelAdmin(ExportAdmin, SimpleHistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    form = LLMModelForm
    resource_classes = [LLMModelResource]
    list_display = [
        "name",
        "family",
        "publisher",
        "params_total",
        "params_active",
        "architecture",
        "confidence",
        "needs_review",
        "updated",
    ]
    list_filter = [
        "organization",
        "needs_review",
        "family",
        "architecture",
        "weights_availability",
        "confidence",
        "origin",
    ]
    search_fields = ["name", "slug", "hf_repo", "family", "publisher"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = [
        "params_total",
        "params_active",
        "architecture",
        "attention",
        "model_type",
        "updated",
    ]
    inlines = [ModelWeightsInline]
    actions = [mark_reviewed]

    def get_queryset(self, request: HttpRequest) -> QuerySet[LLMModel]:
        # Staff curate every row: the public catalog and the organisations' own entries.
        return LLMModel.all_orgs.all()

    def save_model(self, request: HttpRequest, obj: LLMModel, form: Any, change: bool) -> None:
        if obj.config:
            model_apply_config(model=obj, config=obj.config)  # counted params follow config
        super().save_model(request, obj, form, change)


@admin.register(Accelerator)
class AcceleratorAdmin(ExportAdmin, SimpleHistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    resource_classes = [AcceleratorResource]
    list_display = [
        "name",
        "vendor",
        "memory_gb",
        "memory_gib",
        "memory_reported_gib",
        "memory_type",
        "architecture",
        "chips_per_board",
        "bandwidth_gbps",
        "fp16_tflops",
        "segment",
        "curated",
        "confidence",
        "needs_review",
    ]
    list_filter = [
        "organization",
        "needs_review",
        "curated",
        "vendor",
        "segment",
        MemoryFilter,
        "memory_kind",
        "memory_type",
        "architecture",
        "confidence",
        "origin",
    ]
    search_fields = ["name", "vendor", "slug", "aliases", "architecture"]
    prepopulated_fields = {"slug": ["vendor", "name"]}
    readonly_fields = ["updated"]
    actions = [mark_reviewed]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Accelerator]:
        # Staff curate every row: the public catalog and the organisations' own entries.
        return Accelerator.all_orgs.all()

    list_per_page = 100


@admin.register(ModelWeights)
class ModelWeightsAdmin(SimpleHistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    list_display = ["model", "format", "quant", "file_bytes", "computed_bytes", "needs_review"]
    list_filter = ["needs_review", "format", "quant", "origin"]
    search_fields = ["model__name", "model__slug", "quant", "repo"]
    list_select_related = ["model"]
    autocomplete_fields = ["model"]
    readonly_fields = ["computed_bytes", "updated"]
    actions = [mark_reviewed]


@admin.register(InferenceEngine)
class InferenceEngineAdmin(SimpleHistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    list_display = ["name", "versions", "docs_url", "needs_review"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    actions = [mark_reviewed]


@admin.register(EngineSupport)
class EngineSupportAdmin(SimpleHistoryAdmin):
    """The engine support matrix: which engine runs on which hardware, and the source."""

    formfield_overrides = BOUNDED_JSON
    list_display = ["engine", "backend", "vendor", "status", "package", "needs_review"]
    list_filter = ["engine", "backend", "vendor", "status", "needs_review"]
    search_fields = ["vendor", "package", "source", "architectures"]
    list_select_related = ["engine"]
    actions = [mark_reviewed]


@admin.register(QuantFormat)
class QuantFormatAdmin(SimpleHistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    list_display = ["name", "family", "bits_per_weight", "quality_rank"]
    list_filter = ["family"]
    search_fields = ["name", "description"]
    prepopulated_fields = {"slug": ["family", "name"]}
    actions = [mark_reviewed]
