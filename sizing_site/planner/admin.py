from django.contrib import admin

from sizing_site.planner.models import PlanShareLink, SavedPlan


@admin.register(SavedPlan)
class SavedPlanAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "created_by", "created", "recomputed_at"]
    list_filter = ["organization"]
    search_fields = ["name", "notes"]
    # The snapshot is the record of what was computed: never edited by hand.
    readonly_fields = ["code", "created", "recomputed_at", "inputs", "snapshot", "previous"]


@admin.register(PlanShareLink)
class PlanShareLinkAdmin(admin.ModelAdmin):
    list_display = ["plan", "organization", "created_by", "expires_at", "revoked_at"]
    list_filter = ["organization"]
    readonly_fields = ["code", "token_hash", "created"]
