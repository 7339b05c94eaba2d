"""API tokens: the database keeps a SHA-256 of the secret, never the secret itself."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from sizing_site.tenancy.models import Organization


class ApiToken(models.Model):
    """A user's token for scripts: `rs_<prefix>_<secret>`.

    `prefix` (8 hex characters) finds the row; `key_hash` (sha256 hex of the whole token)
    checks it. A token limited to an organization reaches only that organization's routes
    (and the routes outside any organization, such as the estimate); a read-only token
    only reads (and may still POST an estimate, which writes nothing).
    """

    code = models.UUIDField(_("code"), default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        verbose_name=_("user"),
    )
    name = models.CharField(_("name"), max_length=100)
    prefix = models.CharField(_("prefix"), max_length=8, unique=True, editable=False)
    key_hash = models.CharField(_("key hash"), max_length=64, editable=False)
    created = models.DateTimeField(_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True, editable=False)
    organization = models.ForeignKey(
        Organization,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="api_tokens",
        verbose_name=_("organization"),
        help_text=_("When set, the token reaches only this organization's routes."),
    )
    read_only = models.BooleanField(
        _("read-only"),
        default=False,
        help_text=_("A read-only token can read and estimate, but not change anything."),
    )
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.name} (rs_{self.prefix}…)"

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    def is_active(self, now: datetime | None = None) -> bool:
        return self.revoked_at is None and not self.is_expired(now)

    def allows_organization(self, org_slug: str) -> bool:
        """Read by TenantApiView (sizing_site.tenancy.api): False means the route is a 404."""
        return self.organization is None or self.organization.slug == org_slug
