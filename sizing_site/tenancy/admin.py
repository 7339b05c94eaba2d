from django.contrib import admin

from sizing_site.tenancy.models import Invitation, Membership, Organization


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    readonly_fields = ["code", "created"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "organization", "role", "created"]
    list_filter = ["role", "organization"]
    search_fields = ["user__username", "user__email", "organization__name"]
    autocomplete_fields = ["user", "organization"]
    readonly_fields = ["code", "created"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["identifier", "organization", "role", "status", "created", "expires_at"]
    list_filter = ["status", "role", "organization"]
    search_fields = ["identifier", "organization__name"]
    readonly_fields = ["code", "created", "inviter", "closed_by", "closed_at"]
