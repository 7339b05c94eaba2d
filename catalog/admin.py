from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import BadRequest, PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import URLPattern, path
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from import_export.admin import ImportExportModelAdmin

from catalog.admin_history import HistoryAdmin
from catalog.forms import BoundedJSONField, HubImportForm
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
from catalog.services.hub import model_import_hub
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


# Each model of the action calls the Hub (unless cached): a bounded batch keeps the
# admin's request short.
HUB_ACTION_MAX = 20


@admin.action(description=_("Import again from Hugging Face"))
def hub_reimport(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, rows: QuerySet[Any]
) -> None:
    """Read each selected public model's repository again (config and weights sizes)."""
    if rows.count() > HUB_ACTION_MAX:
        message = gettext("Select at most %(n)d models.") % {"n": HUB_ACTION_MAX}
        modeladmin.message_user(request, message, messages.ERROR)
        return
    done = 0
    for model in rows:
        if model.organization_id is not None or not model.hf_repo:
            message = gettext(
                "%(model)s: only public models with a Hugging Face repo are imported here."
            ) % {"model": model}
            modeladmin.message_user(request, message, messages.WARNING)
            continue
        try:
            model_import_hub(repo_id=model.hf_repo)
        except CatalogError as exc:
            message = f"{model}: {exc.message}"
            modeladmin.message_user(request, message, messages.ERROR)
        else:
            done += 1
    message = gettext("Models imported again: %(n)d") % {"n": done}
    modeladmin.message_user(request, message, messages.SUCCESS)


@admin.register(LLMModel)
class LLMModelAdmin(ExportAdmin, HistoryAdmin):
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
    actions = [mark_reviewed, hub_reimport]
    # Adds "Import from Hugging Face" beside the import-export buttons.
    change_list_template = "admin/catalog/llmmodel/change_list.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[LLMModel]:
        # Staff curate every row: the public catalog and the organisations' own entries.
        return LLMModel.all_orgs.all()

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.hub_import_view)
        urls: list[URLPattern] = [
            path("import-hf/", view, name="catalog_llmmodel_import_hf"),
        ]
        return urls + super().get_urls()

    def hub_import_view(self, request: HttpRequest) -> HttpResponse:
        """A public catalog model from a Hugging Face repository (manage.py import_hf)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = HubImportForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            try:
                result = model_import_hub(
                    repo_id=form.cleaned_data["repo_id"], revision=form.cleaned_data["revision"]
                )
            except CatalogError as exc:
                form.add_error("repo_id", exc.message)
            else:
                n = result.model.weights.count()
                message = ngettext(
                    "Imported “%(name)s” with %(n)d weights row.",
                    "Imported “%(name)s” with %(n)d weights rows.",
                    n,
                ) % {"name": result.model.name, "n": n}
                self.message_user(request, message, messages.SUCCESS)
                for note in result.notes:
                    self.message_user(request, note, messages.WARNING)
                return redirect("admin:catalog_llmmodel_change", result.model.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "form": form,
            "title": gettext("Import from Hugging Face"),
        }
        status = 400 if form.is_bound else 200
        return render(request, "admin/catalog/llmmodel/import_hf.html", context, status=status)

    def save_model(self, request: HttpRequest, obj: LLMModel, form: Any, change: bool) -> None:
        if obj.config:
            model_apply_config(model=obj, config=obj.config)  # counted params follow config
        super().save_model(request, obj, form, change)


@admin.register(Accelerator)
class AcceleratorAdmin(ExportAdmin, HistoryAdmin):
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
        "price_usd",
        "price_configuration",
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
class ModelWeightsAdmin(HistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    list_display = ["model", "format", "quant", "file_bytes", "computed_bytes", "needs_review"]
    list_filter = ["needs_review", "format", "quant", "origin"]
    search_fields = ["model__name", "model__slug", "quant", "repo"]
    list_select_related = ["model"]
    autocomplete_fields = ["model"]
    readonly_fields = ["computed_bytes", "updated"]
    actions = [mark_reviewed]


@admin.register(InferenceEngine)
class InferenceEngineAdmin(HistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    list_display = ["name", "versions", "docs_url", "needs_review"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    actions = [mark_reviewed]


@admin.register(EngineSupport)
class EngineSupportAdmin(HistoryAdmin):
    """The engine support matrix: which engine runs on which hardware, and the source."""

    formfield_overrides = BOUNDED_JSON
    list_display = ["engine", "backend", "vendor", "status", "package", "needs_review"]
    list_filter = ["engine", "backend", "vendor", "status", "needs_review"]
    search_fields = ["vendor", "package", "source", "architectures"]
    list_select_related = ["engine"]
    actions = [mark_reviewed]


@admin.register(QuantFormat)
class QuantFormatAdmin(HistoryAdmin):
    formfield_overrides = BOUNDED_JSON
    list_display = ["name", "family", "bits_per_weight", "quality_rank"]
    list_filter = ["family"]
    search_fields = ["name", "description"]
    prepopulated_fields = {"slug": ["family", "name"]}
    actions = [mark_reviewed]
