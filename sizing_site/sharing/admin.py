from django.contrib import admin

from sizing_site.sharing.models import SharePolicy


@admin.register(SharePolicy)
class SharePolicyAdmin(admin.ModelAdmin):
    list_display = ["organization", "public_links"]
