"""Saved configurations, their public share links and the org's activity log. Every row
belongs to one organization (TenantOwned: fail-closed manager). What share links have in
common, and the org's sharing policy, are sizing_site.sharing's."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from catalog.scoping import TenantManager
from sizing_site.reports.snapshots import ConfigurationSnapshot
from sizing_site.sharing.models import ShareLinkBase
from sizing_site.tenancy.models import TenantOwned

NAME_MAX = 120
NOTES_MAX = 5000


class SavedConfiguration(TenantOwned):
    name = models.CharField(_("name"), max_length=NAME_MAX)
    notes = models.TextField(_("notes"), max_length=NOTES_MAX, blank=True)
    tags = models.JSONField(_("tags"), default=list, blank=True)
    model_slug = models.SlugField(_("model"), max_length=120)
    accelerator_slug = models.SlugField(_("accelerator"), max_length=140)
    # The configurator's query parameters, so the configuration can be reopened there.
    query = models.JSONField(_("configurator parameters"), default=dict)
    # The exact estimator request and result, and the catalog figures they used: a report
    # must show the same numbers after the catalog changes (reports.snapshots: versioned).
    estimator_request = models.JSONField(_("estimator request"))
    snapshot = models.JSONField(_("snapshot"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("saved by"),
    )
    created = models.DateTimeField(_("saved"), auto_now_add=True)

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[TenantManager] = TenantManager()

    class Meta:
        default_manager_name = "all_tenants"
        ordering = ["-created"]
        verbose_name = _("saved configuration")
        verbose_name_plural = _("saved configurations")

    def __str__(self) -> str:
        return self.name

    @property
    def frozen(self) -> ConfigurationSnapshot:
        """The snapshot, typed and at the current version (older ones migrated on read);
        writers store `ConfigurationSnapshot.to_json()`."""
        return ConfigurationSnapshot.from_json(self.snapshot)


class ShareLink(ShareLinkBase):
    """A public link to a saved configuration (sharing.models.ShareLinkBase)."""

    subject_field = "configuration"
    shared_url_name = "reports:shared"

    configuration = models.ForeignKey(
        SavedConfiguration,
        on_delete=models.CASCADE,
        related_name="share_links",
        verbose_name=_("configuration"),
    )

    class Meta:
        default_manager_name = "all_tenants"
        ordering = ["-created"]
        verbose_name = _("share link")
        verbose_name_plural = _("share links")


class Action(models.TextChoices):
    SAVED = "saved", _("saved")
    DUPLICATED = "duplicated", _("duplicated")
    RENAMED = "renamed", _("renamed")
    DELETED = "deleted", _("deleted")
    RESTORED = "restored", _("restored")
    SHARED = "shared", _("shared")
    REVOKED = "revoked", _("revoked")
    LINKS_ON = "links_on", _("allowed public share links")
    LINKS_OFF = "links_off", _("turned public share links off")


class ActivityEntry(TenantOwned):
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("who"),
    )
    action = models.CharField(_("action"), max_length=12, choices=Action.choices)
    # A name, not a foreign key: the log outlives deleted configurations.
    subject = models.CharField(_("what"), max_length=200, blank=True)
    created = models.DateTimeField(_("when"), auto_now_add=True)

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[TenantManager] = TenantManager()

    class Meta:
        default_manager_name = "all_tenants"
        ordering = ["-created", "-id"]
        verbose_name = _("activity entry")
        verbose_name_plural = _("activity entries")
