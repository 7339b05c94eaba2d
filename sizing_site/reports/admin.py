from django.contrib import admin

from sizing_site.reports.models import ActivityEntry, SavedConfiguration, ShareLink


@admin.register(SavedConfiguration)
class SavedConfigurationAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "model_slug", "accelerator_slug", "created_by"]
    list_filter = ["organization"]
    search_fields = ["name", "notes"]
    # The snapshot is the record of what was computed: never edited by hand.
    readonly_fields = ["code", "created", "estimator_request", "snapshot", "query"]


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ["configuration", "organization", "created_by", "expires_at", "revoked_at"]
    list_filter = ["organization"]
    readonly_fields = ["code", "token_hash", "created"]


@admin.register(ActivityEntry)
class ActivityEntryAdmin(admin.ModelAdmin):
    list_display = ["created", "organization", "actor", "action", "subject"]
    list_filter = ["organization", "action"]
    readonly_fields = ["code", "created", "organization", "actor", "action", "subject"]
