from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.forms import MemberAddForm, RoleForm
from sizing_site.tenancy.models import Role
from sizing_site.tenancy.selectors import membership_list, membership_list_for_user


@login_required
def orgs(request: HttpRequest) -> HttpResponse:
    memberships = membership_list_for_user(user=request.user)
    if len(memberships) == 1:
        return redirect("tenancy:dashboard", org_slug=memberships[0].organization.slug)
    return render(request, "tenancy/home.html", {"memberships": memberships})


@login_required
def dashboard(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    return render(request, "tenancy/dashboard.html", {"tenant": tenant})


@login_required
def members(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    form = MemberAddForm()
    if request.method == "POST":
        tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
        form = MemberAddForm(request.POST)
        if form.is_valid():
            try:
                membership = services.membership_add(tenant=tenant, **form.cleaned_data)
            except services.MembershipError as exc:
                form.add_error("identifier", str(exc))
            else:
                messages.success(request, _("Added %(user)s.") % {"user": membership.user})
                return redirect("tenancy:members", org_slug=org_slug)
    context = {
        "tenant": tenant,
        "memberships": membership_list(tenant=tenant),
        "form": form,
        "roles": Role.choices,
    }
    return render(request, "tenancy/members.html", context, status=400 if form.errors else 200)


@login_required
def member_role(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    # Tenant first, method second: outsiders get the same 404 whatever the method.
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose a valid role."))
        return redirect("tenancy:members", org_slug=org_slug)
    try:
        services.membership_change_role(tenant=tenant, code=code, role=form.cleaned_data["role"])
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Role changed."))
    return redirect("tenancy:members", org_slug=org_slug)


@login_required
def member_remove(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    # Tenant first, method second: outsiders get the same 404 whatever the method.
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    try:
        services.membership_remove(tenant=tenant, code=code)
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Member removed."))
    return redirect("tenancy:members", org_slug=org_slug)
