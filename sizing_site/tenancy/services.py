"""Writes for tenancy: organizations, invitations and membership management by org admins.

Nobody is added to an organization without saying yes: admins invite, the invitee accepts
from their own account. An invitation never tells the admin whether an account exists.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, OperationalError, transaction
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
    signup_token_hash,
)

INVITATION_LIFETIME = timedelta(days=14)
T = TypeVar("T")
logger = logging.getLogger(__name__)


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


def _signup_token(identifier: str) -> str:
    """A fresh sign-up token for an invitation to an e-mail address, "" for a username.
    Every address gets one, account or not, so the admin still learns nothing of accounts."""
    try:
        validate_email(identifier)
    except ValidationError:
        return ""
    return secrets.token_urlsafe(32)  # 256 random bits, as a share link's


def invitation_create(*, tenant: Tenant, identifier: str, role: str) -> Invitation:
    """Record an invitation; whether an account matches `identifier` is deliberately unused.
    One to an e-mail address carries `signup_token` (services.signup_complete)."""
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
            token = _signup_token(identifier)
            invitation: Invitation = Invitation.all_tenants.create(
                organization=tenant.organization,
                identifier=identifier,
                role=Role(role),
                inviter=tenant.membership.user,
                expires_at=now + INVITATION_LIFETIME,
                signup_token_hash=signup_token_hash(token) if token else "",
            )
            invitation.signup_token = token  # shown once, on the page that invites
            return invitation
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


class MembershipConflict(MembershipError):
    """Another change held the same rows on every try (a deadlock or serialization failure
    the database reported): nothing was changed, and the page or API answers 409."""


CONFLICT_ATTEMPTS = 3
CONFLICT_PAUSE_S = 0.05
# PostgreSQL's serialization_failure and deadlock_detected: the transaction was rolled back
# and may simply run again.
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})


def is_conflict(exc: OperationalError) -> bool:
    """Whether the database refused the transaction for another one's sake (so trying
    again may succeed), rather than for a lost connection or a bad query."""
    cause = exc.__cause__
    sqlstate = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return sqlstate in _RETRYABLE_SQLSTATES or "database is locked" in str(exc)  # SQLite


def retry_on_conflict(
    action: Callable[[], T], *, attempts: int = CONFLICT_ATTEMPTS, pause_s: float | None = None
) -> T:
    """Run `action` (a whole transaction) again when the database reports a conflict, up
    to `attempts` times with a growing pause (CONFLICT_PAUSE_S, then twice that); then
    MembershipConflict. Other errors pass through at once."""
    pause = CONFLICT_PAUSE_S if pause_s is None else pause_s
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except OperationalError as exc:
            if not is_conflict(exc):
                raise
            logger.warning("membership change conflict, attempt %d of %d", attempt, attempts)
            if attempt == attempts:
                raise MembershipConflict(
                    _(
                        "Another change to this organization's members happened at the "
                        "same time; try again."
                    )
                ) from exc
            time.sleep(pause * attempt)
    raise AssertionError("unreachable")  # the loop returns or raises


def _locked_members(tenant: Tenant, *keys: int) -> dict[int, Membership]:
    """The organization's admins and the memberships `keys`, locked in key order. Two
    admins demoting each other at once then lock the same rows in the same order: one waits
    for the other instead of each holding the row the other needs (a deadlock)."""
    rows = tenant.scoped(Membership).filter(Q(role=Role.ADMIN) | Q(pk__in=keys))
    return {m.pk: m for m in rows.select_for_update().order_by("pk")}


def _locked_target(tenant: Tenant, code: object) -> tuple[Membership, dict[int, Membership]]:
    """The membership `code` names, as locked and read now, with the locked rows. Checks
    that the acting admin still is one: another admin may have demoted them a moment ago."""
    found = get_owned_or_404(tenant, Membership, code)
    actor = tenant.membership.pk
    rows = _locked_members(tenant, found.pk, actor)
    if rows.get(actor) is None or rows[actor].role != Role.ADMIN:
        raise MembershipError(_("You are no longer an admin of this organization."))
    if found.pk not in rows:
        raise MembershipError(_("This person is no longer a member."))
    return rows[found.pk], rows


def _ensure_another_admin(rows: dict[int, Membership], membership: Membership) -> None:
    """Refuse a change that would leave the organization without an admin (`rows`: the
    locked admins, read inside the change's transaction)."""
    if membership.role != Role.ADMIN:
        return
    if not any(m.role == Role.ADMIN and m.pk != membership.pk for m in rows.values()):
        raise MembershipError(_("An organization needs at least one admin."))


def membership_change_role(*, tenant: Tenant, code: object, role: str) -> Membership:
    def change() -> Membership:
        with transaction.atomic():
            membership, rows = _locked_target(tenant, code)
            if Role(role) != Role.ADMIN:
                _ensure_another_admin(rows, membership)
            membership.role = Role(role)
            membership.save(update_fields=["role"])
        return membership

    return retry_on_conflict(change)


def membership_remove(*, tenant: Tenant, code: object) -> Membership:
    def remove() -> Membership:
        with transaction.atomic():
            membership, rows = _locked_target(tenant, code)
            _ensure_another_admin(rows, membership)
            membership.delete()
        return membership

    return retry_on_conflict(remove)


# --- sign-up by link, for invitees without an account --------------------------------


def signup_complete(*, invitation: Invitation, username: str, password: str) -> User:
    """Make the invitee's account from a sign-up link: inactive (it cannot sign in) until
    an org admin approves it (signup_approve), with the invitation's address as its e-mail.

    The invitation moves from pending to awaiting in one UPDATE (the compare-and-swap): a
    second submit of the same link, or an admin revoking meanwhile, makes nothing."""
    email = invitation.identifier
    if User.objects.filter(email__iexact=email).exists():
        # The link's holder is the address's owner: telling them is no leak to the admin.
        raise MembershipError(
            _(
                "An account with this e-mail address exists already: sign in and accept "
                "the invitation under “Your invitations”."
            )
        )
    try:
        with transaction.atomic():
            user = User.objects.create_user(username, email, password, is_active=False)
            open_now = Invitation.objects.for_organization(invitation.organization).filter(
                pk=invitation.pk, status=InvitationStatus.PENDING, expires_at__gt=timezone.now()
            )
            if not open_now.update(status=InvitationStatus.AWAITING, signup_user=user):
                raise MembershipError(_("This sign-up link has already been used."))
    except IntegrityError:  # another sign-up took the name a moment ago
        raise MembershipError(_("A user with that username already exists.")) from None
    return user


def _decide(tenant: Tenant, code: object, status: str) -> Invitation:
    """Close the org's sign-up `code` as `status` if it still awaits approval, in one
    UPDATE (two admins deciding at once: the first wins), else MembershipError."""
    invitation = get_owned_or_404(tenant, Invitation, code)
    still = tenant.scoped(Invitation).filter(pk=invitation.pk, status=InvitationStatus.AWAITING)
    closed = still.update(status=status, closed_by=tenant.membership.user, closed_at=timezone.now())
    if not closed or invitation.signup_user is None:
        raise MembershipError(_("This sign-up no longer awaits approval."))
    return invitation


def signup_approve(*, tenant: Tenant, code: object) -> Membership:
    """An org admin lets a signed-up invitee in: the account becomes active and joins the
    organization with the invitation's role."""
    with transaction.atomic():
        invitation = _decide(tenant, code, InvitationStatus.ACCEPTED)
        user = invitation.signup_user
        assert user is not None  # _decide refused a sign-up without its account
        user.is_active = True
        user.save(update_fields=["is_active"])
        membership, _created = Membership.all_tenants.get_or_create(
            organization=tenant.organization, user=user, defaults={"role": invitation.role}
        )
    return membership


def signup_reject(*, tenant: Tenant, code: object) -> None:
    """An org admin turns a sign-up away: the inactive account made through the link is
    deleted (it never signed in and belongs to nothing), so its name is free again."""
    with transaction.atomic():
        user = _decide(tenant, code, InvitationStatus.REJECTED).signup_user
        if user is not None and not user.is_active and user.last_login is None:
            user.delete()
