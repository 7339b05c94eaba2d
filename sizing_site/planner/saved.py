"""Saved capacity plans' pages: the list, Save (from the planner page's inputs), the
report of one plan (its frozen figures), recompute, rename, delete, share links and the
public page behind a share link.

Roles as for saved configurations: viewers read, editors save, rename, recompute and
share, admins delete. The tenant is resolved first, so a non-member gets the same 404
whatever the method."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from sizing_site.planner import services
from sizing_site.planner.forms import FIELDS, PlanForm
from sizing_site.planner.models import NAME_MAX, NOTES_MAX, PlanShareLink, SavedPlan
from sizing_site.planner.snapshots import PlanSnapshot
from sizing_site.sharing.forms import ShareForm, share_form
from sizing_site.sharing.selectors import public_links_allowed
from sizing_site.sharing.views import share_address, shared_page
from sizing_site.tenancy.access import Tenant, get_owned_or_404, tenant_for
from sizing_site.tenancy.http import post_only, post_tenant
from sizing_site.tenancy.models import Role

REPORT = "planner/saved_report.html"


class SavePlanForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Name"), max_length=NAME_MAX, strip=True)
    notes = forms.CharField(
        label=gettext_lazy("Notes"), max_length=NOTES_MAX, required=False, widget=forms.Textarea
    )


class RenamePlanForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Name"), max_length=NAME_MAX, strip=True)


# --- what the report shows -----------------------------------------------------------


def _typed(value: str) -> Any:
    """A saved input as a number where it is one (so the page localises it)."""
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def input_rows(plan: SavedPlan, *, model_name: str) -> list[dict[str, Any]]:
    """The saved inputs under the form's labels (in the page's language), in the form's
    order; inputs the form no longer has keep their names; the model by `model_name`."""
    fields = PlanForm.base_fields
    order = [name for name in fields if name in plan.inputs]
    order += [name for name in plan.inputs if name not in fields]
    rows = []
    for name in order:
        raw = str(plan.inputs[name])
        field = fields.get(name)
        row: dict[str, Any] = {"name": name, "label": field.label if field else name}
        if name == "model":
            row["value"] = model_name or raw
        elif isinstance(field, forms.BooleanField) or raw in ("true", "false"):
            row["value"] = _("yes") if raw.lower() in ("true", "on", "1") else _("no")
        else:
            typed = _typed(raw)
            row["value"], row["number"] = typed, isinstance(typed, int | float)
            # As many decimals as the input has ("1.5" stays 1.5, not 1.500), grouped.
            decimals = raw.partition(".")[2].rstrip("0") if "e" not in raw.lower() else ""
            row["format"] = f"{min(len(decimals), 6)}g"
        rows.append(row)
    return rows


def localised_answer(snapshot: PlanSnapshot) -> dict[str, Any]:
    """The frozen answer with each fix named by its form field's label in the page's
    language (as the planner page names them)."""
    answer: dict[str, Any] = copy.deepcopy(snapshot.answer)
    misses = [answer.get("nearest_miss")]
    if answer.get("inventory"):
        misses.append(answer["inventory"].get("nearest_miss"))
    for miss in misses:
        for fix in miss["fixes"] if miss else []:
            field = PlanForm.base_fields.get(fix["field"])
            fix["label"] = str(field.label) if field is not None else fix["field"]
    return answer


def _when(value: Any) -> Any:
    return parse_datetime(value) if isinstance(value, str) else None


def report_context(plan: SavedPlan) -> dict[str, Any]:
    """What the report and the shared page both show: the plan's frozen figures."""
    snapshot = plan.frozen
    previous = plan.previous or None
    if previous is not None:
        previous = {**previous, "computed_at": _when(previous.get("computed_at"))}
    return {
        "plan": plan,
        "answer": localised_answer(snapshot),
        "inputs": input_rows(plan, model_name=snapshot.model_name),
        "computed_at": snapshot.computed_at,
        "prices_checked_at": snapshot.prices_checked_at,
        "cost": snapshot.cost,  # the cheapest plan's cost basis (None: not recorded)
        "previous": previous,
        "now_top": snapshot.top_plan(),
    }


def _context(tenant: Tenant, plan: SavedPlan, **extra: Any) -> dict[str, Any]:
    can_edit = tenant.can(Role.EDITOR)
    return {
        **report_context(plan),
        "tenant": tenant,
        "can_edit": can_edit,
        "is_admin": tenant.can(Role.ADMIN),
        "public_links": public_links_allowed(tenant=tenant),
        "links": list(services.live_share_links(tenant=tenant, plan=plan)) if can_edit else [],
        "share_form": ShareForm(),
        "rename_form": RenamePlanForm(initial={"name": plan.name}),
        "planner_query": urlencode(plan.inputs),
        **extra,
    }


# --- pages ---------------------------------------------------------------------------


@login_required
def saved_list(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    context = {"tenant": tenant, "rows": services.saved_plan_list(tenant=tenant)}
    return render(request, "planner/saved_list.html", context)


@post_only
def save(request: HttpRequest, org_slug: str) -> HttpResponse:
    """Save the planner page's inputs (posted as the page's query has them): planned again
    here, never from posted figures. Refusals go back to the planner with the inputs."""
    tenant = post_tenant(request, org_slug)
    data = {name: str(request.POST[name]) for name in request.POST if name in FIELDS}
    back = reverse("planner:plan", args=[org_slug]) + "?" + urlencode(data)
    form = SavePlanForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            label = form.fields[field].label if field in form.fields else ""
            problems = " ".join(str(e) for e in errors)
            messages.error(request, f"{label}: {problems}" if label else problems)
        return redirect(back)
    try:
        plan = services.saved_plan_create(
            tenant=tenant,
            user=request.user,
            name=form.cleaned_data["name"],
            notes=form.cleaned_data["notes"],
            data=data,
        )
    except services.PlanRefused as exc:
        problems = " ".join(m for ms in exc.errors.values() for m in ms)
        messages.error(request, _("This plan cannot be saved: %(why)s") % {"why": problems})
        return redirect(back)
    messages.success(request, _("Saved “%(name)s”.") % {"name": plan.name})
    return redirect("planner:saved-report", org_slug=org_slug, code=plan.code)


@login_required
def report(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    plan = get_owned_or_404(tenant, SavedPlan, code)
    return render(request, REPORT, _context(tenant, plan))


@post_only
def recompute(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    plan = get_owned_or_404(tenant, SavedPlan, code)
    try:
        services.saved_plan_recompute(tenant=tenant, user=request.user, plan=plan)
    except services.PlanRefused as exc:
        problems = " ".join(m for ms in exc.errors.values() for m in ms)
        messages.error(
            request,
            _("Today's catalog cannot plan these inputs: %(why)s") % {"why": problems},
        )
    else:
        messages.success(request, _("Recomputed with today's catalog and prices."))
    return redirect("planner:saved-report", org_slug=org_slug, code=code)


@post_only
def rename(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    plan = get_owned_or_404(tenant, SavedPlan, code)
    form = RenamePlanForm(request.POST)
    if not form.is_valid():
        return render(request, REPORT, _context(tenant, plan, rename_form=form), status=400)
    services.saved_plan_update(
        tenant=tenant, user=request.user, plan=plan, name=form.cleaned_data["name"]
    )
    return redirect("planner:saved-report", org_slug=org_slug, code=code)


@post_only
def delete(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug, role=Role.ADMIN)
    plan = get_owned_or_404(tenant, SavedPlan, code)
    name = plan.name
    services.saved_plan_delete(tenant=tenant, user=request.user, plan=plan)
    messages.success(request, _("Deleted “%(name)s”.") % {"name": name})
    return redirect("planner:saved", org_slug=org_slug)


@post_only
def share(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    plan = get_owned_or_404(tenant, SavedPlan, code)
    form = share_form(request.POST, tenant=tenant)
    if not form.is_valid():
        return render(request, REPORT, _context(tenant, plan, share_form=form), status=400)
    link = services.plan_share_link_create(
        tenant=tenant, user=request.user, plan=plan, expires_at=form.cleaned_data["expires_at"]
    )
    # The report with the new link's address, shown once: the database keeps only its
    # token's hash, so no redirect could show it again. (A reload asks to post again.)
    context = _context(tenant, plan, new_link=link, new_link_url=share_address(request, link))
    return render(request, REPORT, context, status=201)


@post_only
def revoke(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    """Revoke a plan's share link (`code`: the link's); back to its plan's report."""
    tenant = post_tenant(request, org_slug)
    link = get_owned_or_404(tenant, PlanShareLink, code)
    # Editors revoke their own links, admins any: PermissionDenied (403) otherwise.
    services.plan_share_link_revoke(tenant=tenant, user=request.user, link=link)
    messages.success(request, _("Share link revoked."))
    return redirect("planner:saved-report", org_slug=org_slug, code=link.plan.code)


def shared(request: HttpRequest, token: str) -> HttpResponse:
    plan = services.shared_plan(token=token)
    return shared_page(request, "planner/saved_shared.html", report_context(plan))
