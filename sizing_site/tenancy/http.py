"""POST-only views of tenant pages: the tenant is resolved first, the method second, so a
non-member gets the same 404 whatever the method and a member gets 405 for a GET."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed

from sizing_site.tenancy.access import Tenant, tenant_for
from sizing_site.tenancy.models import Role


class NotAllowed(Exception):
    """Raised by `post_tenant` for a method other than POST; `post_only` answers 405."""


def post_tenant(request: HttpRequest, org_slug: str, role: str = Role.EDITOR) -> Tenant:
    # Tenant first, method second: outsiders get the same 404 whatever the method.
    tenant = tenant_for(request.user, org_slug, min_role=role)
    if request.method != "POST":
        raise NotAllowed
    return tenant


def post_only(view: Any) -> Any:
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            response: HttpResponse = view(request, *args, **kwargs)
        except NotAllowed:
            return HttpResponseNotAllowed(["POST"])
        return response

    return login_required(wrapped)
