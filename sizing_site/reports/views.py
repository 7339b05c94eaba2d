from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _

from catalog.exports import safe_row
from sizing_site.configurator.state import StateError, configuration_size_by_slugs
from sizing_site.reports import selectors, services
from sizing_site.reports.forms import NameForm, SaveForm
from sizing_site.reports.models import SavedConfiguration, ShareLink
from sizing_site.sharing.forms import PolicyForm, ShareForm, share_form
from sizing_site.sharing.selectors import public_links_allowed
from sizing_site.sharing.views import share_address, shared_page
from sizing_site.tenancy.access import Tenant, get_owned_or_404, tenant_for
from sizing_site.tenancy.http import post_only, post_tenant
from sizing_site.tenancy.models import Role

LIST = "reports/list.html"
REPORT = "reports/report.html"
# The last deleted configuration, kept in the deleting user's session for the undo.
UNDO_KEY = "reports_undo"
UNDO_FOR = timedelta(hours=1)


@login_required
def configuration_list(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    mine = request.GET.get("view") == "mine"
    search, sort = request.GET.get("q", "").strip()[:100], request.GET.get("sort", "new")
    rows = selectors.saved_configuration_list(
        tenant=tenant, mine_of=request.user if mine else None, search=search, sort=sort
    )
    context = {
        "tenant": tenant,
        "rows": rows,
        "mine": mine,
        "search": search,
        "sort": sort,
        "can_edit": tenant.can(Role.EDITOR),
        "public_links": public_links_allowed(tenant=tenant),
        "policy_form": PolicyForm(),
        "undo": _undo(request, tenant) if tenant.can(Role.EDITOR) else None,
    }
    template = LIST + "#rows" if getattr(request, "htmx", False) else LIST
    return render(request, template, context)


@post_only
def configuration_save(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    form = SaveForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        query = dict(parse_qsl(data["query"]))
        try:
            state = configuration_size_by_slugs(
                model_slug=data["model"],
                accelerator_slug=data["accelerator"],
                data=query,
                organizations=[tenant.organization],  # the org's own rows too
            )
            saved = services.saved_configuration_create(
                tenant=tenant,
                user=request.user,
                name=data["name"],
                notes=data["notes"],
                tags=data["tags"],
                state=state,
                data=query,  # the rent-or-buy figures the answer panel's cost used
            )
        except StateError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Saved “%(name)s”.") % {"name": saved.name})
            return redirect("reports:report", org_slug=org_slug, code=saved.code)
    # The form comes back with everything the user typed and the errors beside it.
    context = {"tenant": tenant, "form": form}
    return render(request, "reports/save.html", context, status=400)


def _figures(configuration: SavedConfiguration) -> dict[str, Any]:
    """What reports/_figures.html shows (the report and the shared page): the frozen
    snapshot, typed."""
    snap = configuration.frozen
    return {"c": configuration, "snap": snap, "result": snap.result}


def _report_context(tenant: Tenant, configuration: SavedConfiguration) -> dict[str, Any]:
    return {
        "tenant": tenant,
        **_figures(configuration),
        "can_edit": tenant.can(Role.EDITOR),
        "share_form": ShareForm(),
        "rename_form": NameForm(initial={"name": configuration.name}),
    }


@login_required
def report(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    configuration = get_owned_or_404(tenant, SavedConfiguration, code)
    return render(request, REPORT, _report_context(tenant, configuration))


@login_required
def recompute(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    configuration = get_owned_or_404(tenant, SavedConfiguration, code)
    try:
        state = configuration_size_by_slugs(
            model_slug=configuration.model_slug,
            accelerator_slug=configuration.accelerator_slug,
            data=configuration.query,
            organizations=[tenant.organization],  # the org's own rows too
        )
    except StateError:
        state = None
    today, changes = selectors.configuration_changes(configuration=configuration, state=state)
    context = {
        **_report_context(tenant, configuration),
        "recompute": True,
        "today": today,
        "changes": changes,
        "catalog_changes": today
        and selectors.catalog_changes(saved=configuration.frozen, today=today),
    }
    return render(request, REPORT, context)


@login_required
def export_json(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    c = get_owned_or_404(tenant, SavedConfiguration, code)
    payload = selectors.configuration_export(configuration=c)
    response = JsonResponse(payload, json_dumps_params={"indent": 2})
    response["Content-Disposition"] = f'attachment; filename="{c.code}.json"'
    return response


@login_required
def export_csv(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    c = get_owned_or_404(tenant, SavedConfiguration, code)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{c.code}.csv"'
    writer = csv.writer(response)
    # Every row through safe_row: the saved query is user input, and a cell a spreadsheet
    # would run as a formula is written quoted (catalog.exports).
    writer.writerow(safe_row(["figure", "value"]))
    for key, value in c.query.items():
        writer.writerow(safe_row([f"input.{key}", value]))
    result = c.frozen.result
    for path in selectors.FIGURES:
        # Machine-readable: plain numbers, not localised.
        value = json.dumps(selectors.figure(result, path))
        writer.writerow(safe_row([path, value]))
    writer.writerow(safe_row(["fit.verdict", result["fit"]["verdict"]]))
    return response


@post_only
def configuration_rename(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    configuration = get_owned_or_404(tenant, SavedConfiguration, code)
    form = NameForm(request.POST)
    if not form.is_valid():
        context = {**_report_context(tenant, configuration), "rename_form": form}
        return render(request, REPORT, context, status=400)
    services.saved_configuration_rename(
        tenant=tenant,
        user=request.user,
        configuration=configuration,
        name=form.cleaned_data["name"],
    )
    return redirect("reports:report", org_slug=org_slug, code=code)


@post_only
def configuration_duplicate(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    configuration = get_owned_or_404(tenant, SavedConfiguration, code)
    copy = services.saved_configuration_duplicate(
        tenant=tenant, user=request.user, configuration=configuration
    )
    return redirect("reports:report", org_slug=org_slug, code=copy.code)


@login_required
def configuration_delete(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    """GET asks first (a page with the consequences and a Delete button), POST deletes and
    offers an undo on the list for an hour."""
    tenant = tenant_for(request.user, org_slug, min_role=Role.EDITOR)
    configuration = get_owned_or_404(tenant, SavedConfiguration, code)
    if request.method == "POST":
        trash = services.saved_configuration_delete(
            tenant=tenant, user=request.user, configuration=configuration
        )
        request.session[UNDO_KEY] = trash
        return redirect("reports:list", org_slug=org_slug)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "POST"])
    context = {
        "tenant": tenant,
        "c": configuration,
        "links": selectors.share_link_list(tenant=tenant)
        .filter(configuration=configuration)
        .count(),
    }
    return render(request, "reports/delete.html", context)


def _undo(request: HttpRequest, tenant: Tenant) -> dict[str, Any] | None:
    """The configuration this user deleted in this organization within the last hour."""
    trash = request.session.get(UNDO_KEY)
    if not isinstance(trash, dict) or trash.get("organization") != tenant.organization.pk:
        return None
    try:
        deleted_at = datetime.fromisoformat(trash["deleted_at"])
    except (KeyError, TypeError, ValueError):
        return None
    if timezone.now() - deleted_at > UNDO_FOR:
        return None
    return trash


@post_only
def configuration_restore(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    trash = _undo(request, tenant)
    if trash is None:
        messages.error(request, _("There is nothing to undo any more."))
        return redirect("reports:list", org_slug=org_slug)
    del request.session[UNDO_KEY]
    restored = services.saved_configuration_restore(tenant=tenant, user=request.user, trash=trash)
    messages.success(request, _("Restored “%(name)s”.") % {"name": restored.name})
    return redirect("reports:report", org_slug=org_slug, code=restored.code)


@login_required
def compare(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug)
    codes = request.GET.getlist("c")
    # Too few or too many: the page says so (with a way back) rather than guessing.
    rows: list[SavedConfiguration] = []
    if 2 <= len(set(codes)) <= 4:
        rows = selectors.saved_configurations_by_codes(tenant=tenant, codes=codes)
    figures = selectors.saved_compare_rows(configurations=rows)
    context = {"tenant": tenant, "configurations": rows, "rows": figures}
    return render(request, "reports/compare.html", context)


@post_only
def share_create(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    configuration = get_owned_or_404(tenant, SavedConfiguration, code)
    form = share_form(request.POST, tenant=tenant)
    if not form.is_valid():
        context = {**_report_context(tenant, configuration), "share_form": form}
        return render(request, REPORT, context, status=400)
    link = services.share_link_create(
        tenant=tenant,
        user=request.user,
        configuration=configuration,
        expires_at=form.cleaned_data["expires_at"],
    )
    # The page that shows the new link's address, once: the database keeps only its
    # token's hash, so no redirect could show it again. (A reload asks to post again.)
    return _links_page(request, tenant, new_link=link, status=201)


@login_required
def links(request: HttpRequest, org_slug: str) -> HttpResponse:
    return _links_page(request, tenant_for(request.user, org_slug))


def _links_page(
    request: HttpRequest, tenant: Tenant, *, new_link: ShareLink | None = None, status: int = 200
) -> HttpResponse:
    context = {
        "tenant": tenant,
        "links": selectors.share_link_list(tenant=tenant),
        "is_admin": tenant.can(Role.ADMIN),
        "can_edit": tenant.can(Role.EDITOR),
        "public_links": public_links_allowed(tenant=tenant),
        "new_link": new_link,
        "new_link_url": share_address(request, new_link) if new_link is not None else "",
    }
    return render(request, "reports/links.html", context, status=status)


@post_only
def share_revoke(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    tenant = post_tenant(request, org_slug)
    link = get_owned_or_404(tenant, ShareLink, code)
    services.share_link_revoke(tenant=tenant, user=request.user, link=link)
    messages.success(request, _("Share link revoked."))
    return redirect("reports:links", org_slug=org_slug)


@post_only
def share_policy(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = post_tenant(request, org_slug, role=Role.ADMIN)
    form = PolicyForm(request.POST)
    form.is_valid()  # a checkbox: absent means off
    services.share_policy_update(
        tenant=tenant, user=request.user, public_links=form.cleaned_data.get("public_links", False)
    )
    messages.success(request, _("Sharing policy saved."))
    return redirect("reports:links", org_slug=org_slug)


@login_required
def activity(request: HttpRequest, org_slug: str) -> HttpResponse:
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    context = {"tenant": tenant, "entries": selectors.activity_list(tenant=tenant)}
    return render(request, "reports/activity.html", context)


def shared(request: HttpRequest, token: str) -> HttpResponse:
    configuration = selectors.shared_configuration(token=token)
    return shared_page(request, "reports/shared.html", _figures(configuration))
