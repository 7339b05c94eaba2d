"""Saved capacity plans and their public share links.

A saved plan keeps the planner's inputs (PlanForm's fields as strings, so a recompute goes
through the same form) and a frozen snapshot of the answer the page and the API showed, so
its report shows the same figures after the catalog or the prices change, until an editor
recomputes it. Every row belongs to one organization (TenantOwned: fail-closed manager);
the org's sharing policy is the saved configurations' one (reports.SharePolicy)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from catalog.scoping import TenantManager
from sizing_site.tenancy.models import TenantOwned

NAME_MAX = 120
NOTES_MAX = 5000


class SavedPlan(TenantOwned):
    name = models.CharField(_("name"), max_length=NAME_MAX)
    notes = models.TextField(_("notes"), max_length=NOTES_MAX, blank=True)
    # PlanForm's cleaned fields as strings (the page's query), so the plan can be reopened
    # in the planner and recomputed through the same form.
    inputs = models.JSONField(_("planner inputs"), default=dict)
    # {"answer": the planner's answer (output.planned_data), "model_name", "computed_at",
    # "prices_checked_at"}: the figures the report shows until a recompute.
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


class PlanShareLink(TenantOwned):
    """A public link to a saved plan. As for a saved configuration's (reports.ShareLink),
    the database keeps the token's SHA-256 only (reports.models.share_token_hash): a copy
    of the table or a backup opens no plan. The token itself is shown once, on the instance
    that plan_share_link_create returns."""

    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    # Not a field: the token itself, set on a new link only (reports.services.new_share_link);
    # "" on every link read from the database.
    token: str = ""
    plan = models.ForeignKey(
        SavedPlan, on_delete=models.CASCADE, related_name="share_links", verbose_name=_("plan")
    )
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
        default_manager_name = "all_tenants"
        ordering = ["-created", "-id"]
        verbose_name = _("plan share link")
        verbose_name_plural = _("plan share links")
