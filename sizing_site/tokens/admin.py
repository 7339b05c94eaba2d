from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from sizing_site.tokens.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff list and revoke tokens; the secret exists nowhere to show (only its hash, which
    is not shown either). Tokens are created by their owners on the account page."""

    list_display = [
        "name",
        "user",
        "prefix",
        "organization",
        "read_only",
        "created",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["read_only", "organization"]
    search_fields = ["name", "prefix", "user__username"]
    exclude = ["key_hash"]
    readonly_fields = [
        "code",
        "user",
        "name",
        "prefix",
        "organization",
        "read_only",
        "created",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=_("Revoke selected tokens"))
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = queryset.filter(revoked_at=None).update(revoked_at=timezone.now())
        message = ngettext("%(count)d token revoked.", "%(count)d tokens revoked.", count)
        self.message_user(request, message % {"count": count}, messages.SUCCESS)
