from __future__ import annotations

from functools import partial
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models, transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from pricing import selectors, services
from pricing.forms import outbound_url_validator, spot_price_check
from pricing.models import (
    CloudOffer,
    CloudProvider,
    PriceSnapshot,
    PriceSource,
    RefreshRun,
)
from pricing.tasks import refresh_enqueue


@admin.register(CloudProvider)
class CloudProviderAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "billing_model", "website"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name"]


@admin.action(description=_("Refresh now"))
def refresh_now(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, rows: QuerySet[PriceSource]
) -> HttpResponse | None:
    runs = []
    for source in rows:
        run = services.refresh_run_queue(source=source)
        # After commit, so the worker finds the queued run row; a broker that is down
        # marks the run failed instead of failing the page.
        transaction.on_commit(partial(refresh_enqueue, source=source, run=run))
        runs.append(run)
    if len(runs) == 1:
        return HttpResponseRedirect(reverse("admin:pricing_refreshrun_progress", args=[runs[0].pk]))
    message = gettext("Refreshes queued: %(n)d") % {"n": len(runs)}
    modeladmin.message_user(request, message, messages.SUCCESS)
    return None


class RecentRuns(admin.TabularInline):
    model = RefreshRun
    extra = 0
    max_num = 0
    can_delete = False
    fields = readonly_fields = (
        "created",
        "status",
        "offers_created",
        "offers_updated",
        "offers_unchanged",
        "error",
    )
    ordering = ["-created"]
    show_change_link = True


def _https_by_default(field: models.Field[Any, Any], **kwargs: Any) -> forms.Field | None:
    if isinstance(field, models.URLField):
        kwargs["assume_scheme"] = "https"
    return field.formfield(**kwargs)


class PriceSourceForm(forms.ModelForm):
    class Meta:
        model = PriceSource
        formfield_callback = _https_by_default
        fields = [
            "provider",
            "kind",
            "name",
            "base_url",
            "config",
            "feed_content",
            "api_key_setting",
            "enabled",
            "refresh_hours",
            "organization",
        ]

    def clean_base_url(self) -> str:
        url: str = self.cleaned_data.get("base_url") or ""
        outbound_url_validator(url)
        return url


@admin.register(PriceSource)
class PriceSourceAdmin(admin.ModelAdmin):
    form = PriceSourceForm
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = [
        "__str__",
        "provider",
        "kind",
        "organization",
        "enabled",
        "refresh_hours",
        "last_run_status",
        "last_run_at",
        "last_success_at",
        "waiting_for_key",
    ]
    list_filter = ["kind", "enabled", "last_run_status", "provider"]
    list_select_related = ["provider", "organization"]
    actions = [refresh_now]
    inlines = [RecentRuns]
    readonly_fields = ["last_run_status", "last_run_at", "last_success_at"]

    @admin.display(boolean=True, description=_("waiting for API key"))
    def waiting_for_key(self, source: PriceSource) -> bool:
        return source.needs_key


class MatchedFilter(admin.SimpleListFilter):
    title = _("accelerator matched")
    parameter_name = "matched"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", _("Matched")), ("no", _("Unmatched (review)"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "no":
            return queryset.filter(accelerator__isnull=True)
        if self.value() == "yes":
            return queryset.filter(accelerator__isnull=False)
        return queryset


@admin.action(description=_("Match accelerators again"))
def rematch(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, rows: QuerySet[CloudOffer]
) -> None:
    count = services.offers_rematch(offers=rows)
    modeladmin.message_user(
        request, gettext("Offers matched: %(n)d") % {"n": count}, messages.SUCCESS
    )


class CloudOfferForm(forms.ModelForm):
    class Meta:
        model = CloudOffer
        fields = [
            "provider",
            "source",
            "organization",
            "sku",
            "region",
            "accelerator",
            "gpu_name",
            "gpu_count",
            "vram_total_gb",
            "on_demand_per_hour",
            "spot_per_hour",
            "currency",
            "billing_granularity",
            "checked_at",
            "source_note",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        try:
            spot_price_check(
                spot=cleaned.get("spot_per_hour"), on_demand=cleaned.get("on_demand_per_hour")
            )
        except forms.ValidationError as exc:
            self.add_error("spot_per_hour", exc)
        return cleaned


@admin.register(CloudOffer)
class CloudOfferAdmin(admin.ModelAdmin):
    form = CloudOfferForm
    list_display = [
        "sku",
        "provider",
        "region",
        "accelerator",
        "gpu_name",
        "gpu_count",
        "on_demand_per_hour",
        "spot_per_hour",
        "currency",
        "checked_at",
        "organization",
    ]
    list_filter = [MatchedFilter, "provider", "organization", "currency"]
    list_select_related = ["provider", "accelerator", "organization"]
    search_fields = ["sku", "gpu_name", "region"]
    autocomplete_fields = ["accelerator"]
    actions = [rematch]
    date_hierarchy = "checked_at"


@admin.register(PriceSnapshot)
class PriceSnapshotAdmin(admin.ModelAdmin):
    list_display = ["offer", "observed_at", "on_demand_per_hour", "spot_per_hour", "currency"]
    list_select_related = ["offer__provider"]
    list_filter = ["offer__provider"]


@admin.register(RefreshRun)
class RefreshRunAdmin(admin.ModelAdmin):
    list_display = [
        "source",
        "status",
        "created",
        "finished",
        "offers_created",
        "offers_updated",
        "offers_unchanged",
        "snapshots_created",
        "unmatched",
    ]
    list_filter = ["status", "source__kind"]
    list_select_related = ["source__provider"]
    readonly_fields = [f.name for f in RefreshRun._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        progress = self.admin_site.admin_view(self.progress_view)
        urls: list[URLPattern] = [
            path("<int:run_id>/progress/", progress, name="pricing_refreshrun_progress")
        ]
        return urls + super().get_urls()

    def progress_view(self, request: HttpRequest, run_id: int) -> HttpResponse:
        """The run's status and counts; the page polls itself (htmx) until the run ends."""
        try:
            run = selectors.refresh_run_detail(run_id=run_id)
        except RefreshRun.DoesNotExist:
            raise Http404 from None
        template = "admin/pricing/refresh_progress.html"
        if getattr(request, "htmx", False):
            template += "#progress"
        context = {
            **self.admin_site.each_context(request),
            "run": run,
            "opts": self.opts,
            "title": gettext("Refresh of %(source)s") % {"source": run.source},
        }
        return render(request, template, context)
