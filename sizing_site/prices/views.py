"""The price pages: every offer the viewer may see, and an organisation's own feed.

Web layer: tenancy resolves who the viewer is and which organisations they belong to;
`pricing` gets those organisations and knows nothing of requests or memberships.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from pricing import selectors, services
from pricing.models import PriceSource, RunStatus
from pricing.tasks import refresh_enqueue
from sizing_site.prices.forms import FeedUploadForm, OfferFilterForm
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Role
from sizing_site.tenancy.selectors import membership_list_for_user


@login_required
def prices(request: HttpRequest) -> HttpResponse:
    form = OfferFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    # Negotiated feed prices only of the viewer's own organisations.
    organizations = [m.organization for m in membership_list_for_user(user=request.user)]
    offers = selectors.offer_list(organizations=organizations, **filters)
    context = {
        "form": form,
        "groups": selectors.offers_by_accelerator(offers),
        "stale_after_hours": settings.PRICES_STALE_AFTER_HOURS,
    }
    template = "pricing/prices.html"
    if getattr(request, "htmx", False):
        template += "#results"
    return render(request, template, context)


@login_required
def org_feed(request: HttpRequest, org_slug: str) -> HttpResponse:
    # Members see the feed; only admins post to it (one membership lookup either way).
    posting = request.method == "POST"
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN if posting else Role.VIEWER)
    form = FeedUploadForm()
    if posting:
        form = FeedUploadForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            source = services.org_feed_save(
                organization=tenant.organization,
                provider=data["provider"],
                url=data["url"] or "",
                content=data.get("content", ""),
            )
            _feed_refresh(request, source)
            return redirect("pricing:org-feed", org_slug=org_slug)
    context = {
        "tenant": tenant,
        "form": form,
        "sources": selectors.org_feed_sources(organization=tenant.organization),
        "offers": selectors.org_feed_offers(organization=tenant.organization),
        "runs": selectors.org_feed_runs(organization=tenant.organization),
    }
    return render(request, "pricing/org_feed.html", context, status=400 if form.errors else 200)


def _feed_refresh(request: HttpRequest, source: PriceSource) -> None:
    """Load an uploaded feed now, queue a URL for the worker; say what happened.

    The save above is committed (no ATOMIC_REQUESTS), so the worker finds the row.
    """
    if source.base_url:
        if refresh_enqueue(source=source):
            messages.success(request, _("Feed saved; it will be fetched shortly."))
        else:
            messages.warning(
                request,
                _(
                    "Feed saved, but its refresh could not be queued; it will be fetched at "
                    "the next scheduled refresh."
                ),
            )
        return
    run = services.price_source_refresh(source_id=source.pk)
    if run.status == RunStatus.SUCCEEDED:
        messages.success(
            request,
            _("Feed loaded: %(n)d offers, %(s)d rows skipped.")
            % {"n": run.offers_seen, "s": len(run.skipped)},
        )
    elif run.status == RunStatus.SKIPPED:
        messages.warning(
            request, _("Feed saved; another refresh of it is running, so it loads next time.")
        )
    else:
        messages.error(request, _("The feed could not be loaded: %(error)s") % {"error": run.error})
