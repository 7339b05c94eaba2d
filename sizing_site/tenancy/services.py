"""Writes for tenancy: organizations and membership management by org admins."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.translation import gettext as _

from sizing_site.tenancy.access import Tenant, get_owned_or_404
from sizing_site.tenancy.models import Membership, Organization, Role


class MembershipError(Exception):
    """A membership change that the rules forbid; the message is shown to the user."""


def organization_create(*, name: str, slug: str, owner: User) -> Organization:
    with transaction.atomic():
        organization = Organization.objects.create(name=name, slug=slug)
        Membership.all_tenants.create(organization=organization, user=owner, role=Role.ADMIN)
    return organization


def _find_user(identifier: str) -> User:
    identifier = identifier.strip()
    users = User.objects.filter(
        Q(username__iexact=identifier) | Q(email__iexact=identifier), is_active=True
    )
    found = list(users[:2])
    if len(found) != 1:
        # One message for "none" and "ambiguous": do not reveal which e-mails exist twice.
        raise MembershipError(_("No single active user matches “%(who)s”.") % {"who": identifier})
    return found[0]


def membership_add(*, tenant: Tenant, identifier: str, role: str) -> Membership:
    user = _find_user(identifier)
    try:
        with transaction.atomic():
            return Membership.all_tenants.create(
                organization=tenant.organization, user=user, role=Role(role)
            )
    except IntegrityError:
        raise MembershipError(
            _("%(user)s is already a member.") % {"user": user.get_username()}
        ) from None


def _ensure_another_admin(tenant: Tenant, membership: Membership) -> None:
    """Refuse a change that would leave the organization without an admin."""
    if membership.role != Role.ADMIN:
        return
    others = tenant.scoped(Membership).filter(role=Role.ADMIN).exclude(pk=membership.pk)
    if not others.select_for_update().exists():
        raise MembershipError(_("An organization needs at least one admin."))


def membership_change_role(*, tenant: Tenant, code: object, role: str) -> Membership:
    with transaction.atomic():
        membership = get_owned_or_404(tenant, Membership, code)
        if Role(role) != Role.ADMIN:
            _ensure_another_admin(tenant, membership)
        membership.role = Role(role)
        membership.save(update_fields=["role"])
    return membership


def membership_remove(*, tenant: Tenant, code: object) -> Membership:
    with transaction.atomic():
        membership = get_owned_or_404(tenant, Membership, code)
        _ensure_another_admin(tenant, membership)
        membership.delete()
    return membership
