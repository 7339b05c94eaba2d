"""The only way views and APIs reach tenant rows.

Helpers look *inside* the organization's scope: a user who is not a member gets the same
404 as for a missing organization, so slugs of other tenants cannot be probed. A member
whose role is too low gets 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import Http404
from django.utils.translation import gettext as _

from sizing_site.tenancy.models import (
    Invitation,
    InvitationStatus,
    Membership,
    Organization,
    Role,
    TenantOwned,
)

M = TypeVar("M", bound=TenantOwned)


@dataclass(frozen=True)
class Tenant:
    organization: Organization
    membership: Membership

    @property
    def role(self) -> str:
        return self.membership.role

    def can(self, role: str) -> bool:
        return self.membership.has_role(role)

    def scoped(self, model: type[M]) -> models.QuerySet[M]:
        manager: Any = model.objects
        queryset: models.QuerySet[M] = manager.for_organization(self.organization)
        return queryset


def tenant_for(
    user: AbstractBaseUser | AnonymousUser, org_slug: str, *, min_role: str = Role.VIEWER
) -> Tenant:
    """Resolve the URL's organization for this user, or raise 404 / 403."""
    if not user.is_authenticated:
        raise Http404
    membership = (
        Membership.objects.for_user(user)
        .select_related("organization")
        .filter(organization__slug=org_slug)
        .first()
    )
    if membership is None:
        raise Http404
    if not membership.has_role(min_role):
        raise PermissionDenied
    return Tenant(organization=membership.organization, membership=membership)


def get_owned_or_404(tenant: Tenant, model: type[M], code: object) -> M:
    """Fetch a row by its public code, looking only inside the tenant's rows."""
    try:
        return tenant.scoped(model).get(code=code)
    except (model.DoesNotExist, ValidationError, ValueError, TypeError) as exc:
        raise Http404 from exc


@dataclass(frozen=True)
class Invitee:
    invitation: Invitation
    user: User


def invitation_for_invitee(
    user: AbstractBaseUser | AnonymousUser, org_slug: str, code: object
) -> Invitee:
    """The invitee's way in: a live invitation addressed to this user, or 404.

    The invitee is not a member yet, so `tenant_for` cannot apply; the lookup looks only
    inside the invitations addressed to this user, so anyone else (members of the org
    included) gets the same 404 as for a missing code.
    """
    if not isinstance(user, User):
        raise Http404
    try:
        invitation = (
            Invitation.objects.addressed_to(user)
            .select_related("organization")
            .get(organization__slug=org_slug, code=code)
        )
    except (Invitation.DoesNotExist, ValidationError, ValueError, TypeError) as exc:
        raise Http404 from exc
    return Invitee(invitation=invitation, user=user)


class SignupRefused(Exception):
    """A sign-up link that does not open: the message says why (shown to the holder).
    `status` is the page's answer: 404 for a token nobody issued, 410 for one that no
    longer opens."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


def invitation_for_signup(token: str) -> Invitation:
    """The invitation behind a sign-up link's token, while it may still be used.

    The token is the credential (as a share link's): the lookup is by its SHA-256 across
    organizations, never by an org the caller names. A used, revoked or expired link says
    so, which tells its holder only about their own invitation."""
    invitation: Invitation | None = (
        Invitation.objects.for_signup_token(token).select_related("organization").first()
        if token
        else None
    )
    if invitation is None:
        raise SignupRefused(_("This sign-up link is not valid."), status=404)
    if invitation.status == InvitationStatus.REVOKED:
        raise SignupRefused(_("This invitation was withdrawn by the organization."), status=410)
    if invitation.status != InvitationStatus.PENDING:
        raise SignupRefused(_("This sign-up link has already been used."), status=410)
    if not invitation.is_live:
        raise SignupRefused(
            _("This invitation has expired; ask the organization for a new one."), status=410
        )
    return invitation
