"""What every public share link has, and the organization's sharing policy.

A share link is a public, read-only address of one saved thing: a saved configuration's
(reports.ShareLink) or a saved capacity plan's (planner.PlanShareLink). Both tables are
concrete models of ShareLinkBase: the same columns, one foreign key to their subject each
(`subject_field`). The tables stay apart (their rows, codes and foreign keys as they were);
everything that handles a link, whichever its table, is this app's (services, selectors,
forms, api, views)."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from catalog.scoping import TenantManager
from sizing_site.tenancy.models import TenantOwned


def share_token_hash(token: str) -> str:
    """What the database keeps of a share link's token: its SHA-256 (hex). The token has
    256 random bits, so no salt or slow hash is needed against guessing."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class ShareLinkBase(TenantOwned):
    """A public link to one saved row, its `subject_field`. The database keeps the token's
    SHA-256 only (a copy of the table or a backup opens nothing); the token itself is shown
    once, on the instance that sharing.services.share_link_create returns."""

    # The concrete model's foreign key to what the link shows, and the public page's URL
    # name (it takes the token).
    subject_field: ClassVar[str]
    shared_url_name: ClassVar[str]

    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    # Not a field: the token itself, set on a new link only (services.share_link_create);
    # "" on every link read from the database.
    token: str = ""
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[TenantManager] = TenantManager()

    class Meta:
        abstract = True
        default_manager_name = "all_tenants"


class SharePolicy(TenantOwned):
    """One row per organization; no row means public links are allowed. It governs every
    share link of the organization, whatever it shows."""

    public_links = models.BooleanField(_("public share links allowed"), default=True)

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[TenantManager] = TenantManager()

    class Meta:
        default_manager_name = "all_tenants"
        constraints = [
            models.UniqueConstraint(fields=["organization"], name="one_share_policy_per_org")
        ]
        verbose_name = _("share policy")
        verbose_name_plural = _("share policies")
