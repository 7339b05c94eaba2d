"""Reads for tenancy: organizations a user belongs to, an organization's members and the
invitations on either side (the org's open offers, the user's own inbox)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import DatabaseError
from django.db.models import QuerySet
from django.http import HttpRequest

from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Invitation, InvitationStatus, Membership, Organization


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


def viewer_organizations(request: HttpRequest) -> list[Organization]:
    """The organisations whose own catalog entries (models, accelerators) and negotiated
    prices this request may see: the user's memberships, read once per request. An API
    token limited to one organisation sees only that one."""
    cached: list[Organization] | None = getattr(request, "_viewer_organizations", None)
    if cached is None:
        cached = [m.organization for m in membership_list_for_user(user=request.user)]
        limit = _token_limit(request)
        if limit is not None:
            cached = [o for o in cached if o.pk == limit]
        request._viewer_organizations = cached  # type: ignore[attr-defined]
    return cached


def _token_limit(request: HttpRequest) -> object:
    """The one organisation an API token is limited to (its key), or None."""
    return getattr(getattr(request, "auth", None), "organization_id", None)


def viewer_organization_keys(request: HttpRequest) -> QuerySet[Any, dict[str, Any]] | None:
    """viewer_organizations as a subquery of the organisations' keys, for a read that takes
    the memberships inside its own query (no query of their own); None for an anonymous
    caller (the public catalog only)."""
    if not request.user.is_authenticated:
        return None
    keys = Membership.objects.for_user(request.user)
    limit = _token_limit(request)
    if limit is not None:
        keys = keys.filter(organization_id=limit)
    return keys.values("organization_id")


# seed_demo's login (sizing_site/fleet/management/commands/seed_demo.py): org and user "demo".
DEMO_USERNAME = "demo"


def demo_login_seeded() -> bool:
    """Whether seed_demo's demo/demo login exists (a development or demo instance): the
    landing and login pages then show it to a visitor. Two queries. The hint is optional:
    a database without its tables yet (before migrate) shows none rather than failing the
    login page."""
    try:
        demo = get_user_model()._default_manager.filter(username=DEMO_USERNAME).first()
        if demo is None:
            return False
        memberships = Membership.objects.for_user(demo)
        return memberships.filter(organization__slug=DEMO_USERNAME).exists()
    except DatabaseError:
        return False


def signup_list(*, tenant: Tenant) -> QuerySet[Invitation]:
    """Accounts made through the org's sign-up links that await an admin's approval,
    oldest first (first come, first served), their account joined: one query."""
    return (
        tenant.scoped(Invitation)
        .filter(status=InvitationStatus.AWAITING)
        .select_related("signup_user", "inviter")
        .order_by("created", "id")
    )
