"""Reads for tenancy: organizations a user belongs to and an organization's members."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Membership


def membership_list_for_user(*, user: AbstractBaseUser | AnonymousUser) -> list[Membership]:
    if not user.is_authenticated:
        return []
    return list(
        Membership.objects.for_user(user)
        .select_related("organization")
        .order_by("organization__name")
    )


def membership_list(*, tenant: Tenant) -> QuerySet[Membership]:
    return tenant.scoped(Membership).select_related("user").order_by("user__username")
