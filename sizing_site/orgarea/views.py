from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sizing_site.orgarea.selectors import org_overview
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Role


@login_required
def overview(request: HttpRequest, org_slug: str) -> HttpResponse:
    """What the organization has, each with its count and its pages."""
    tenant = tenant_for(request.user, org_slug)
    context = {
        "tenant": tenant,
        "is_admin": tenant.can(Role.ADMIN),
        "can_edit": tenant.can(Role.EDITOR),
        "overview": org_overview(tenant=tenant, user=request.user),
    }
    return render(request, "tenancy/dashboard.html", context)
