"""The price pages: every offer the viewer may see, and an organisation's own feed.

Web layer: tenancy resolves who the viewer is and which organisations they belong to;
`pricing` gets those organisations and knows nothing of requests or memberships.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from catalog.models import Accelerator
from catalog.scoping import Owner
from pricing import selectors, services
from pricing.models import CloudOffer, PriceSource, RunStatus
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
        "unpriced": unpriced_cards(organizations),
    }
    template = "pricing/prices.html"
    if getattr(request, "htmx", False):
        template += "#results"
    return render(request, template, context)


def unpriced_cards(organizations: Sequence[Owner]) -> dict[str, Any]:
    """How many catalog cards have no cloud price the viewer may see (public offers and
    their organisations' negotiated ones, with an on-demand or spot price), of all cards
    and of the hand-checked ones, and the hand-checked ones by name: two queries."""
    priced = (
        CloudOffer.objects.visible_to(organizations)
        .filter(Q(on_demand_per_hour__isnull=False) | Q(spot_per_hour__isnull=False))
        .exclude(accelerator__isnull=True)
        .values("accelerator_id")
    )
    unpriced = Accelerator.objects.exclude(pk__in=priced)
    counts = Accelerator.objects.aggregate(
        cards=Count("pk"),
        hand_checked=Count("pk", filter=Q(curated=True)),
        unpriced=Count("pk", filter=~Q(pk__in=priced)),
        unpriced_hand_checked=Count("pk", filter=Q(curated=True) & ~Q(pk__in=priced)),
    )
    curated = (
        unpriced.filter(curated=True)
        .only("slug", "vendor", "name", "price_usd", "sources")
        .order_by("vendor", "name")
    )
    return {**counts, "curated_cards": list(curated)}


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
            messages.add_message(request, *feed_refresh(source))
            return redirect("pricing:org-feed", org_slug=org_slug)
    context = {
        "tenant": tenant,
        "form": form,
        "sources": selectors.org_feed_sources(organization=tenant.organization),
        "offers": selectors.org_feed_offers(organization=tenant.organization),
        "runs": selectors.org_feed_runs(organization=tenant.organization),
    }
    return render(request, "pricing/org_feed.html", context, status=400 if form.errors else 200)


def feed_refresh(source: PriceSource) -> tuple[int, str]:
    """Load an uploaded feed now, queue a URL for the worker; say what happened, as a
    messages level and text (the page shows it, the API returns it).

    The save before is committed (no ATOMIC_REQUESTS), so the worker finds the row.
    """
    if source.base_url:
        if refresh_enqueue(source=source):
            return messages.SUCCESS, _("Feed saved; it will be fetched shortly.")
        return messages.WARNING, _(
            "Feed saved, but its refresh could not be queued; it will be fetched at "
            "the next scheduled refresh."
        )
    run = services.price_source_refresh(source_id=source.pk)
    if run.status == RunStatus.SUCCEEDED:
        seen, skipped = run.offers_seen, len(run.skipped)
        offers = ngettext("%(n)d offer", "%(n)d offers", seen) % {"n": seen}
        rows = ngettext("%(n)d row skipped", "%(n)d rows skipped", skipped) % {"n": skipped}
        return messages.SUCCESS, _("Feed loaded: %(offers)s, %(rows)s.") % {
            "offers": offers,
            "rows": rows,
        }
    if run.status == RunStatus.SKIPPED:
        return messages.WARNING, _(
            "Feed saved; another refresh of it is running, so it loads next time."
        )
    return messages.ERROR, _("The feed could not be loaded: %(error)s") % {"error": run.error}
