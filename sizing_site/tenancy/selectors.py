"""Reads for tenancy: organizations a user belongs to, an organization's members and the
invitations on either side (the org's open offers, the user's own inbox)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Invitation, InvitationStatus, Membership


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


def invitation_list(*, tenant: Tenant) -> QuerySet[Invitation]:
    """The org's open invitations, newest first (the model's ordering); expired ones too,
    so admins can see and revoke them."""
    return (
        tenant.scoped(Invitation).filter(status=InvitationStatus.PENDING).select_related("inviter")
    )


def invitation_list_for_user(*, user: AbstractBaseUser | AnonymousUser) -> list[Invitation]:
    if not user.is_authenticated:
        return []
    return list(Invitation.objects.addressed_to(user).select_related("organization", "inviter"))
