"""Saved capacity plans and their public share links.

A saved plan keeps the planner's inputs (PlanForm's fields as strings, so a recompute goes
through the same form) and a frozen snapshot of the answer the page and the API showed, so
its report shows the same figures after the catalog or the prices change, until an editor
recomputes it (its format: planner.snapshots.PlanSnapshot). Every row belongs to one
organization (TenantOwned: fail-closed manager); share links are sizing_site.sharing's, under
the org's one sharing policy (sharing.SharePolicy)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from catalog.scoping import TenantManager
from sizing_site.planner.snapshots import PlanSnapshot
from sizing_site.sharing.models import ShareLinkBase
from sizing_site.tenancy.models import TenantOwned

NAME_MAX = 120
NOTES_MAX = 5000


class SavedPlan(TenantOwned):
    name = models.CharField(_("name"), max_length=NAME_MAX)
    notes = models.TextField(_("notes"), max_length=NOTES_MAX, blank=True)
    # PlanForm's cleaned fields as strings (the page's query), so the plan can be reopened
    # in the planner and recomputed through the same form.
    inputs = models.JSONField(_("planner inputs"), default=dict)
    # The figures the report shows until a recompute: planner.snapshots.PlanSnapshot's JSON
    # (versioned; `frozen` reads it).
    snapshot = models.JSONField(_("snapshot"))
    # The top plan before the last recompute ({"cheapest": ..., "computed_at": ...}).
    previous = models.JSONField(_("before the last recompute"), null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("saved by"),
    )
    created = models.DateTimeField(_("saved"), auto_now_add=True)
    recomputed_at = models.DateTimeField(_("recomputed"), null=True, blank=True)

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[TenantManager] = TenantManager()

    class Meta:
        default_manager_name = "all_tenants"
        ordering = ["-created", "-id"]
        verbose_name = _("saved capacity plan")
        verbose_name_plural = _("saved capacity plans")

    def __str__(self) -> str:
        return self.name

    @property
    def frozen(self) -> PlanSnapshot:
        """The snapshot, typed and at the current version (older ones migrated on read);
        writers store `PlanSnapshot.to_json()`."""
        return PlanSnapshot.from_json(self.snapshot)


class PlanShareLink(ShareLinkBase):
    """A public link to a saved plan (sharing.models.ShareLinkBase, as a saved
    configuration's reports.ShareLink)."""

    subject_field = "plan"
    shared_url_name = "planner:shared"

    plan = models.ForeignKey(
        SavedPlan, on_delete=models.CASCADE, related_name="share_links", verbose_name=_("plan")
    )

    class Meta:
        default_manager_name = "all_tenants"
        ordering = ["-created", "-id"]
        verbose_name = _("plan share link")
        verbose_name_plural = _("plan share links")
