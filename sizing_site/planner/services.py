"""Writes for saved capacity plans and their share links.

A plan is saved from the planner's inputs only: the server plans them again through the
planner's own form and selectors (PlanForm, selectors.planned, output.planned_data) and
freezes the answer (planner.snapshots.PlanSnapshot), so a client never sends figures. Each
write leaves an entry in the org's activity log (reports.ActivityEntry); share links
themselves are sizing_site.sharing's."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from estimator.api import RequestError
from pricing.selectors import offer_list
from sizing_site.apikit.errors import Errors, form_errors
from sizing_site.planner import selectors
from sizing_site.planner.forms import PlanForm
from sizing_site.planner.models import PlanShareLink, SavedPlan
from sizing_site.planner.output import planned_data
from sizing_site.planner.snapshots import PlanCost, PlanSnapshot
from sizing_site.planner.whatif import what_if
from sizing_site.reports.models import Action, ActivityEntry
from sizing_site.sharing import services as sharing
from sizing_site.sharing.selectors import live_links_q, share_link_resolve
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Role


class PlanRefused(Exception):
    """The inputs cannot be planned: errors by PlanForm field ("detail" for none), and
    whether the model slug names no model (the API answers 404 for that)."""

    def __init__(self, errors: Errors, *, unknown_model: bool = False) -> None:
        super().__init__(errors)
        self.errors = errors
        self.unknown_model = unknown_model


def form_inputs(form: PlanForm) -> dict[str, str]:
    """A valid form's cleaned fields as the page's query carries them (every PlanForm
    field, so fields added to the form are kept too; blank ones left out)."""
    inputs: dict[str, str] = {}
    for name in form.fields:
        value = form.cleaned_data.get(name)
        if value is None or value == "":
            continue
        inputs[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return inputs


def plan_snapshot(
    *, tenant: Tenant, data: Mapping[str, Any]
) -> tuple[dict[str, str], PlanSnapshot]:
    """Plan `data` (PlanForm's fields, as strings or typed, absent ones at their defaults) as the
    planner page does, now: (the cleaned inputs, the snapshot). Raises PlanRefused for bad
    inputs and for a service level no candidate meets even without load."""
    # The org's own catalog models are plannable too (as on the planner page).
    form = PlanForm.from_data(data, organizations=[tenant.organization])
    if not form.is_valid():
        unknown = form.has_error("model", code="unknown")
        raise PlanRefused(form_errors(form), unknown_model=unknown)
    try:
        planned = form.plan(tenant=tenant)
    except RequestError as exc:
        name = selectors.form_field(exc.field)
        raise PlanRefused({name if name in form.fields else "detail": [exc.message]}) from None
    impossible = selectors.impossible_service(planned)
    if impossible:
        raise PlanRefused({name: [message] for name, message in impossible.items()})
    answer = planned_data(planned, model_slug=form.cleaned_data["model"], what_if=what_if(planned))
    offers = offer_list(organizations=[tenant.organization]).aggregate(at=Max("checked_at"))
    model = form.planner_model
    snapshot = PlanSnapshot(
        answer=answer,
        model_name=model.name if model is not None else answer["model"],
        computed_at=timezone.now(),
        prices_checked_at=offers["at"],
        cost=plan_cost(planned, checked_at=offers["at"]),
    )
    return form_inputs(form), snapshot


def plan_cost(planned: selectors.Planned, *, checked_at: datetime | None) -> PlanCost | None:
    """The cheapest plan's monthly cost and its basis (PlanCost): rented when its rent is
    the lower figure (capacity.Plan.monthly_usd = min(rent, owning)), else owned; None
    without a plan or a price."""
    plan = planned.result.cheapest
    if plan is None or plan.monthly_usd is None:
        return None
    source = planned.candidates.sources.get(plan.label)
    rented = plan.monthly_rent_usd is not None and plan.monthly_usd == plan.monthly_rent_usd
    horizon = planned.horizon
    return PlanCost(
        monthly_usd=plan.monthly_usd,
        basis="rented" if rented else "owned",
        label=plan.label,
        cards=plan.cards,
        provider=source.provider if source else "",
        instance=source.sku if source else "",
        region=source.region if source else "",
        usd_per_card_hour=source.rent_usd_per_card_hour if source else None,
        negotiated=bool(source and source.negotiated),
        internal_rate=bool(source and source.internal_rate),
        purchase_usd=None if rented else plan.purchase_usd,
        usd_per_card=source.purchase_usd_per_card if source else None,
        power_w_per_card=source.power_w_per_card if source else None,
        months=None if rented else horizon.months,
        utilisation=None if rented else horizon.utilisation,
        checked_at=checked_at.isoformat() if checked_at else None,
    )


def _log(*, tenant: Tenant, actor: Any, action: str, plan_name: str) -> None:
    subject = _("Capacity plan “%(name)s”") % {"name": plan_name}
    ActivityEntry.all_tenants.create(
        organization=tenant.organization, actor=actor, action=action, subject=subject[:200]
    )


@transaction.atomic
def saved_plan_create(
    *, tenant: Tenant, user: Any, name: str, notes: str, data: Mapping[str, Any]
) -> SavedPlan:
    """Plan the inputs now and freeze the answer. Raises PlanRefused."""
    inputs, snapshot = plan_snapshot(tenant=tenant, data=data)
    plan = SavedPlan.all_tenants.create(
        organization=tenant.organization,
        name=name,
        notes=notes,
        inputs=inputs,
        snapshot=snapshot.to_json(),
        created_by=user,
    )
    _log(tenant=tenant, actor=user, action=Action.SAVED, plan_name=name)
    return plan


@transaction.atomic
def saved_plan_recompute(*, tenant: Tenant, user: Any, plan: SavedPlan) -> SavedPlan:
    """Plan the saved inputs again against today's catalog and prices; the new answer
    replaces the snapshot and the old top plan is kept in `previous`. Raises PlanRefused
    (the snapshot unchanged) when today's catalog cannot plan them any more."""
    _inputs, snapshot = plan_snapshot(tenant=tenant, data=plan.inputs)
    before = plan.frozen
    plan.previous = {
        "cheapest": before.top_plan(),
        "computed_at": before.computed_at.isoformat(),
    }
    plan.snapshot = snapshot.to_json()
    plan.recomputed_at = timezone.now()
    plan.save(update_fields=["previous", "snapshot", "recomputed_at"])
    return plan


@transaction.atomic
def saved_plan_update(
    *, tenant: Tenant, user: Any, plan: SavedPlan, name: str | None = None, notes: str | None = None
) -> SavedPlan:
    old = plan.name
    fields = []
    if name is not None and name != plan.name:
        plan.name = name
        fields.append("name")
    if notes is not None and notes != plan.notes:
        plan.notes = notes
        fields.append("notes")
    if fields:
        plan.save(update_fields=fields)
    if "name" in fields:
        _log(tenant=tenant, actor=user, action=Action.RENAMED, plan_name=f"{old} → {plan.name}")
    return plan


@transaction.atomic
def saved_plan_delete(*, tenant: Tenant, user: Any, plan: SavedPlan) -> None:
    """Delete the plan and its share links (admins)."""
    if not tenant.can(Role.ADMIN):
        raise PermissionDenied
    _log(tenant=tenant, actor=user, action=Action.DELETED, plan_name=plan.name)
    plan.delete()


@transaction.atomic
def plan_share_link_create(
    *, tenant: Tenant, user: Any, plan: SavedPlan, expires_at: datetime | None
) -> PlanShareLink:
    link = sharing.share_link_create(
        PlanShareLink, tenant=tenant, user=user, subject=plan, expires_at=expires_at
    )
    _log(tenant=tenant, actor=user, action=Action.SHARED, plan_name=plan.name)
    return link


@transaction.atomic
def plan_share_link_revoke(*, tenant: Tenant, user: Any, link: PlanShareLink) -> PlanShareLink:
    """Editors revoke their own links; admins any link of the org (PermissionDenied)."""
    if sharing.share_link_revoke(tenant=tenant, user=user, link=link):
        _log(tenant=tenant, actor=user, action=Action.REVOKED, plan_name=link.plan.name)
    return link


# --- reads ---------------------------------------------------------------------------


def saved_plan_list(*, tenant: Tenant) -> QuerySet[SavedPlan]:
    """The org's saved plans, newest first: one query whatever the number (the author
    joined)."""
    return tenant.scoped(SavedPlan).select_related("created_by").order_by("-created", "-id")


def live_share_links(*, tenant: Tenant, plan: SavedPlan) -> QuerySet[PlanShareLink]:
    """The plan's links that still open: not revoked, not expired."""
    return (
        tenant.scoped(PlanShareLink).filter(live_links_q(), plan=plan).select_related("created_by")
    )


def shared_plan(*, token: str) -> SavedPlan:
    """The plan behind a live token (sharing.selectors.share_link_resolve: 404 for unknown,
    revoked or expired tokens and for every token of an org that turned public links
    off)."""
    plan: SavedPlan = share_link_resolve(PlanShareLink, token=token).plan
    return plan
