"""Organizations are the tenants; memberships give users a role inside one.

Rows an organization owns are read through the fail-closed managers of `catalog.scoping`.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import TYPE_CHECKING, Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from catalog.scoping import TenantManager, TenantRequired

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


class Role(models.TextChoices):
    VIEWER = "viewer", _("Viewer")
    EDITOR = "editor", _("Editor")
    ADMIN = "admin", _("Admin")


ROLE_RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.ADMIN: 3}


class Organization(models.Model):
    name = models.CharField(_("name"), max_length=120)
    slug = models.SlugField(_("slug"), max_length=60, unique=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("organization")
        verbose_name_plural = _("organizations")

    def __str__(self) -> str:
        return self.name


class TenantOwned(models.Model):
    """Base for every row that belongs to one organization."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, verbose_name=_("organization")
    )
    code = models.UUIDField(_("code"), default=uuid.uuid4, unique=True, editable=False)

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[TenantManager] = TenantManager()

    class Meta:
        abstract = True
        default_manager_name = "all_tenants"


class MembershipManager(TenantManager):
    scopes = ("for_organization", "for_user")

    def for_user(self, user: AbstractBaseUser) -> models.QuerySet[Any]:
        """A user's own memberships across organizations (for the org switcher)."""
        if user.pk is None:
            raise TenantRequired("Membership: no user given")
        return self._unscoped().filter(user=user)


class Membership(TenantOwned):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("user"),
    )
    role = models.CharField(_("role"), max_length=10, choices=Role.choices, default=Role.VIEWER)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[MembershipManager] = MembershipManager()

    class Meta:
        default_manager_name = "all_tenants"
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(
                fields=["user", "organization"], name="unique_membership_per_user_and_org"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization} ({self.role})"

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]


class InvitationStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    ACCEPTED = "accepted", _("accepted")
    DECLINED = "declined", _("declined")
    REVOKED = "revoked", _("revoked")
    EXPIRED = "expired", _("expired")
    # Sign-up by link: the invitee made an account, which waits for an org admin.
    AWAITING = "awaiting", _("awaiting approval")
    REJECTED = "rejected", _("rejected")


def signup_token_hash(token: str) -> str:
    """What the database keeps of a sign-up link's token: its SHA-256 (hex), as for share
    links (256 random bits need no salt or slow hash)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class InvitationManager(TenantManager):
    scopes = ("for_organization", "addressed_to", "for_signup_token")

    def for_signup_token(self, token: str) -> models.QuerySet[Any]:
        """The invitation a sign-up link's token opens, whatever its state (the page says
        why a used, revoked or expired one no longer opens). The token is the credential,
        as a share link's is: the lookup is by its hash across organizations."""
        if not token:
            raise TenantRequired("Invitation: no sign-up token given")
        return self._unscoped().filter(signup_token_hash=signup_token_hash(token))

    def addressed_to(self, user: AbstractBaseUser) -> models.QuerySet[Any]:
        """Live invitations for this user across organizations (the invitee's own page).

        Matched by username or by the account e-mail. Staff set e-mail addresses in the
        admin and users cannot change their own, so the address is as trusted as the name.
        """
        if user.pk is None:
            raise TenantRequired("Invitation: no user given")
        names = models.Q(identifier__iexact=user.get_username())
        email = getattr(user, "email", "")
        if email:
            names |= models.Q(identifier__iexact=email)
        live = self._unscoped().filter(
            status=InvitationStatus.PENDING, expires_at__gt=timezone.now()
        )
        return live.filter(names)


class Invitation(TenantOwned):
    """An org admin's offer of a role; it becomes a Membership only when the invitee accepts."""

    # As the admin typed it: an account may not exist (and the admin is not told).
    identifier = models.CharField(_("username or e-mail"), max_length=254)
    role = models.CharField(_("role"), max_length=10, choices=Role.choices, default=Role.VIEWER)
    status = models.CharField(
        _("status"),
        max_length=10,
        choices=InvitationStatus.choices,
        default=InvitationStatus.PENDING,
    )
    inviter = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("invited by"),
    )
    # The invitee who accepted or declined, or the admin who revoked.
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("closed by"),
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires"))
    closed_at = models.DateTimeField(_("closed"), null=True, blank=True)
    # An invitation to an e-mail address carries a sign-up link for someone without an
    # account: the database keeps the token's SHA-256 ("" for none), the admin sees the
    # link once (`signup_token`, set on a new invitation only).
    signup_token_hash = models.CharField(
        _("sign-up token hash"), max_length=64, blank=True, default="", editable=False
    )
    signup_token: str = ""
    # The account made through the link: inactive until an org admin approves it.
    signup_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("signed up as"),
    )

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[InvitationManager] = InvitationManager()

    class Meta:
        default_manager_name = "all_tenants"
        ordering = ["-created", "-id"]
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        constraints = [
            # One open invitation per person and org, whatever the capitalisation.
            models.UniqueConstraint(
                Lower("identifier"),
                "organization",
                condition=models.Q(status="pending"),
                name="unique_pending_invitation_per_identifier_and_org",
            ),
            models.UniqueConstraint(
                fields=["signup_token_hash"],
                condition=~models.Q(signup_token_hash=""),
                name="unique_invitation_signup_token_hash",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.identifier} → {self.organization} ({self.role}, {self.status})"

    @property
    def is_live(self) -> bool:
        return self.status == InvitationStatus.PENDING and self.expires_at > timezone.now()
