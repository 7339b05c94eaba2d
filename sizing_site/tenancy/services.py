"""Writes for tenancy: organizations, invitations and membership management by org admins.

Nobody is added to an organization without saying yes: admins invite, the invitee accepts
from their own account. An invitation never tells the admin whether an account exists.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from sizing_site.tenancy.access import Invitee, Tenant, get_owned_or_404
from sizing_site.tenancy.models import (
    Invitation,
    InvitationStatus,
    Membership,
    Organization,
    Role,
)

INVITATION_LIFETIME = timedelta(days=14)


class MembershipError(Exception):
    """A membership change that the rules forbid; the message is shown to the user."""


def organization_create(*, name: str, slug: str, owner: User) -> Organization:
    with transaction.atomic():
        organization = Organization.objects.create(name=name, slug=slug)
        Membership.all_tenants.create(organization=organization, user=owner, role=Role.ADMIN)
    return organization


def _ensure_not_a_member(tenant: Tenant, identifier: str) -> None:
    # Admins see every member's name and e-mail already, so this reveals nothing new.
    members = tenant.scoped(Membership).filter(
        Q(user__username__iexact=identifier) | Q(user__email__iexact=identifier)
    )
    if members.exists():
        raise MembershipError(_("%(who)s is already a member.") % {"who": identifier})


def invitation_create(*, tenant: Tenant, identifier: str, role: str) -> Invitation:
    """Record an invitation; whether an account matches `identifier` is deliberately unused."""
    identifier = identifier.strip()
    _ensure_not_a_member(tenant, identifier)
    now = timezone.now()
    try:
        with transaction.atomic():
            # An expired offer must not block a fresh one under the one-pending constraint.
            tenant.scoped(Invitation).filter(
                identifier__iexact=identifier,
                status=InvitationStatus.PENDING,
                expires_at__lte=now,
            ).update(status=InvitationStatus.EXPIRED, closed_at=now)
            return Invitation.all_tenants.create(
                organization=tenant.organization,
                identifier=identifier,
                role=Role(role),
                inviter=tenant.membership.user,
                expires_at=now + INVITATION_LIFETIME,
            )
    except IntegrityError:
        raise MembershipError(
            _("An invitation for %(who)s is already pending.") % {"who": identifier}
        ) from None


def invitation_revoke(*, tenant: Tenant, code: object) -> Invitation:
    invitation = get_owned_or_404(tenant, Invitation, code)
    # Compare-and-swap: the invitee may be accepting at this very moment.
    closed = (
        tenant.scoped(Invitation)
        .filter(pk=invitation.pk, status=InvitationStatus.PENDING)
        .update(
            status=InvitationStatus.REVOKED,
            closed_by=tenant.membership.user,
            closed_at=timezone.now(),
        )
    )
    if not closed:
        raise MembershipError(_("Only a pending invitation can be revoked."))
    invitation.refresh_from_db()
    return invitation


def _claim(invitee: Invitee) -> Invitation:
    """Lock the row and check it is still live: another tab may have answered already."""
    live = Invitation.objects.addressed_to(invitee.user).select_for_update()
    locked: Invitation | None = live.filter(pk=invitee.invitation.pk).first()
    if locked is None:
        raise MembershipError(_("This invitation is no longer open."))
    return locked


def _close(invitation: Invitation, *, status: str, user: User) -> None:
    invitation.status = status
    invitation.closed_by = user
    invitation.closed_at = timezone.now()
    invitation.save(update_fields=["status", "closed_by", "closed_at"])


def invitation_accept(*, invitee: Invitee) -> Membership:
    """Join the organization with the offered role; an existing membership keeps its role."""
    with transaction.atomic():
        invitation = _claim(invitee)
        membership, _created = Membership.all_tenants.get_or_create(
            organization=invitation.organization,
            user=invitee.user,
            defaults={"role": invitation.role},
        )
        _close(invitation, status=InvitationStatus.ACCEPTED, user=invitee.user)
    return membership


def invitation_decline(*, invitee: Invitee) -> Invitation:
    with transaction.atomic():
        invitation = _claim(invitee)
        _close(invitation, status=InvitationStatus.DECLINED, user=invitee.user)
    return invitation


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
