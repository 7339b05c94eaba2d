"""Writes for tenancy: organizations, invitations and membership management by org admins.

Nobody is added to an organization without saying yes: admins invite, the invitee accepts
from their own account. An invitation never tells the admin whether an account exists.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
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


def _close(rows: QuerySet[Invitation], *, status: str, by: User | None) -> int:
    """Close whichever of `rows` are still pending, in one UPDATE, and count them.

    The UPDATE is the compare-and-swap: when the admin revokes while the invitee answers
    (or two tabs answer), the first to write wins and the other closes nothing.
    """
    return rows.filter(status=InvitationStatus.PENDING).update(
        status=status, closed_by=by, closed_at=timezone.now()
    )


def invitation_create(*, tenant: Tenant, identifier: str, role: str) -> Invitation:
    """Record an invitation; whether an account matches `identifier` is deliberately unused."""
    identifier = identifier.strip()
    _ensure_not_a_member(tenant, identifier)
    now = timezone.now()
    try:
        with transaction.atomic():
            # An expired offer must not block a fresh one under the one-pending constraint.
            expired = tenant.scoped(Invitation).filter(
                identifier__iexact=identifier, expires_at__lte=now
            )
            _close(expired, status=InvitationStatus.EXPIRED, by=None)
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


def invitation_revoke(*, tenant: Tenant, code: object) -> None:
    invitation = get_owned_or_404(tenant, Invitation, code)
    this_one = tenant.scoped(Invitation).filter(pk=invitation.pk)
    if not _close(this_one, status=InvitationStatus.REVOKED, by=tenant.membership.user):
        raise MembershipError(_("Only a pending invitation can be revoked."))


def _answer(invitee: Invitee, status: str) -> None:
    # Among the invitee's live invitations only: an expired one can no longer be answered.
    live = Invitation.objects.addressed_to(invitee.user).filter(pk=invitee.invitation.pk)
    if not _close(live, status=status, by=invitee.user):
        raise MembershipError(_("This invitation is no longer open."))


def invitation_accept(*, invitee: Invitee) -> Membership:
    """Join the organization with the offered role; an existing membership keeps its role."""
    invitation = invitee.invitation
    with transaction.atomic():
        _answer(invitee, InvitationStatus.ACCEPTED)
        membership, _created = Membership.all_tenants.get_or_create(
            organization=invitation.organization,
            user=invitee.user,
            defaults={"role": invitation.role},
        )
    return membership


def invitation_decline(*, invitee: Invitee) -> None:
    _answer(invitee, InvitationStatus.DECLINED)


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
