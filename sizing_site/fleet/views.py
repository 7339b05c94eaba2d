"""The fleet pages: what the organization's machines can run, and the inventory's new,
edit, delete and history pages. Viewers read; editors add and edit; admins delete. The
tenant is resolved before the method is read, so an outsider gets the same 404 whatever
the method."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from catalog.sizing import candidates
from sizing_site.explore.queries import CardModelsQuery
from sizing_site.fleet import selectors, services
from sizing_site.fleet.forms import FleetForm, MachineForm
from sizing_site.fleet.models import InventoryMachine
from sizing_site.tenancy.access import Tenant, tenant_for
from sizing_site.tenancy.models import Role

# Each machine sizes every explore model (cached per card, count and filters): a page of
# machines stays a bounded amount of work on a cold cache.
FORM = "fleet/machine_form.html"


@login_required
def fleet(request: HttpRequest, org_slug: str) -> HttpResponse:
    """Each machine and the models it runs, at the filters' context and quality floor."""
    tenant = tenant_for(request.user, org_slug)
    form = FleetForm(request.GET, ladder=candidates.quant_ladder())
    page = Paginator(selectors.machine_list(tenant=tenant), selectors.MACHINES_PER_PAGE).get_page(
        request.GET.get("page")
    )
    tables: list[selectors.MachineTable] = []
    ctx = None
    if form.is_valid():
        query = CardModelsQuery.from_form(form)
        quants, ctx = list(query.quants), query.ctx
        tables = selectors.fleet_tables(
            machines=list(page.object_list),
            quants=quants,
            context_tokens=ctx,
            q=query.q,
            organizations=[tenant.organization],
        )
    context = {
        "tenant": tenant,
        "form": form,
        "page": page,
        "tables": tables,
        "ctx": ctx,
        "can_edit": tenant.can(Role.EDITOR),
        "can_delete": tenant.can(Role.ADMIN),
    }
    return render(request, "fleet/fleet.html", context, status=400 if form.errors else 200)


def _form_page(
    request: HttpRequest,
    tenant: Tenant,
    form: MachineForm,
    machine: InventoryMachine | None,
    status: int = 200,
) -> HttpResponse:
    context = {"tenant": tenant, "form": form, "machine": machine}
    return render(request, FORM, context, status=status)


@login_required
def machine_new(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    if request.method == "GET":
        return _form_page(request, tenant, MachineForm(organization=tenant.organization), None)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    form = MachineForm(request.POST, organization=tenant.organization)
    if not form.is_valid():
        # Everything the user typed comes back, the errors beside it.
        return _form_page(request, tenant, form, None, status=400)
    machine = services.machine_create(tenant=tenant, user=request.user, values=form.cleaned_data)
    messages.success(request, _("Added “%(name)s”.") % {"name": machine.name})
    return redirect("fleet:fleet", org_slug=org_slug)


@login_required
def machine_edit(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    machine = selectors.machine_get(tenant=tenant, code=code)
    if request.method == "GET":
        form = MachineForm(instance=machine, organization=tenant.organization)
        return _form_page(request, tenant, form, machine)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    form = MachineForm(request.POST, instance=machine, organization=tenant.organization)
    if not form.is_valid():
        return _form_page(request, tenant, form, machine, status=400)
    services.machine_update(
        tenant=tenant, user=request.user, machine=machine, values=form.cleaned_data
    )
    messages.success(request, _("Saved “%(name)s”.") % {"name": machine.name})
    return redirect("fleet:fleet", org_slug=org_slug)


@login_required
def machine_delete(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    """GET: the confirm page; POST: delete (admins)."""
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    machine = selectors.machine_get(tenant=tenant, code=code)
    if request.method == "GET":
        context: dict[str, Any] = {"tenant": tenant, "machine": machine}
        return render(request, "fleet/machine_delete.html", context)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    services.machine_delete(tenant=tenant, user=request.user, machine=machine)
    messages.success(request, _("Deleted “%(name)s”.") % {"name": machine.name})
    return redirect("fleet:fleet", org_slug=org_slug)


@login_required
def machine_history(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    machine = selectors.machine_get(tenant=tenant, code=code)
    context = {
        "tenant": tenant,
        "machine": machine,
        "entries": selectors.machine_history(machine=machine),
    }
    return render(request, "fleet/machine_history.html", context)
