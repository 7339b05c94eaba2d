"""Reads for prices: the prices page, an organisation's feed page, the configurator's offers,
and the sources a scheduled refresh should run. Organisation feed offers are reached only
through the fail-closed manager with the caller's organisations; the web layer resolves
which organisations those are (tenancy) and passes them in."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db.models import ExpressionWrapper, F, FloatField, Prefetch, Q, QuerySet
from django.utils import timezone

from catalog.models import Accelerator
from catalog.scoping import Owner
from pricing.models import CloudOffer, CloudProvider, PriceSnapshot, PriceSource, RefreshRun

SPARKLINE_POINTS = 12


def _offers(organizations: Sequence[Owner]) -> QuerySet[CloudOffer]:
    return CloudOffer.objects.visible_to(organizations).select_related(
        "provider", "accelerator", "organization"
    )


def offer_list(
    *,
    organizations: Sequence[Owner],
    accelerator: Accelerator | None = None,
    provider: CloudProvider | None = None,
    max_price_per_gpu_hour: Decimal | None = None,
) -> QuerySet[CloudOffer]:
    """Offers with a price, public plus those of `organizations` (the viewer's own), grouped
    by accelerator (unmatched last) and cheapest per GPU-hour first."""
    offers = _offers(organizations).filter(
        Q(on_demand_per_hour__isnull=False) | Q(spot_per_hour__isnull=False)
    )
    if accelerator is not None:
        offers = offers.filter(accelerator=accelerator)
    if provider is not None:
        offers = offers.filter(provider=provider)
    per_gpu = F("on_demand_per_hour") / F("gpu_count")
    offers = offers.annotate(per_gpu_hour=per_gpu)
    if max_price_per_gpu_hour is not None:
        offers = offers.filter(per_gpu_hour__lte=max_price_per_gpu_hour)
    history = PriceSnapshot.objects.order_by("-observed_at").only(
        "offer_id", "observed_at", "on_demand_per_hour"
    )
    return offers.prefetch_related(Prefetch("snapshots", queryset=history)).order_by(
        F("accelerator__name").asc(nulls_last=True), "per_gpu_hour", "provider__name"
    )


def offer_accelerators() -> QuerySet[Accelerator]:
    """Accelerators that have at least one public offer (the filter's choices)."""
    # cloud_offers__isnull=False makes the join inner: without it every accelerator
    # (no offer, so a NULL organization) would match.
    return Accelerator.objects.filter(
        cloud_offers__isnull=False, cloud_offers__organization__isnull=True
    ).distinct()


def offer_providers() -> QuerySet[CloudProvider]:
    return CloudProvider.objects.filter(offers__isnull=False).distinct()


def offers_for(
    *, accelerator: Accelerator, gpu_count: int, organization: Owner | None = None
) -> QuerySet[CloudOffer]:
    """Offers of `accelerator` with at least `gpu_count` GPUs in one instance, cheapest
    GPU-hour first (a setup pays its GPUs' share of the instance: costs.offer_costs).
    Public offers plus, when given, the organisation's negotiated ones; the caller must
    have resolved `organization` through the tenancy helpers. Offers without an on-demand
    price are left out."""
    organizations = [organization] if organization is not None else []
    return (
        _offers(organizations)
        .filter(accelerator=accelerator, gpu_count__gte=gpu_count, on_demand_per_hour__isnull=False)
        .annotate(
            per_gpu_hour=ExpressionWrapper(
                F("on_demand_per_hour") / F("gpu_count"), output_field=FloatField()
            )
        )
        .order_by("per_gpu_hour", "gpu_count", "provider__name")
    )


def sparkline(offer: CloudOffer, *, width: int = 80, height: int = 20) -> dict[str, Any]:
    """SVG polyline points of the offer's last snapshots (oldest left), from the prefetched
    history; flat when the price never moved. Numbers only: the template draws them."""
    history = [s for s in offer.snapshots.all() if s.on_demand_per_hour is not None]
    history = list(reversed(history[:SPARKLINE_POINTS]))
    if len(history) < 2:
        return {"points": "", "count": len(history)}
    prices = [float(s.on_demand_per_hour or 0) for s in history]
    low, high = min(prices), max(prices)
    span = (high - low) or 1.0
    step = width / (len(prices) - 1)
    points = " ".join(
        f"{i * step:.1f},{height - (p - low) / span * height:.1f}" for i, p in enumerate(prices)
    )
    return {
        "points": points,
        "count": len(history),
        "first": history[0].on_demand_per_hour,
        "last": history[-1].on_demand_per_hour,
        "since": history[0].observed_at,
    }


def offers_by_accelerator(offers: QuerySet[CloudOffer]) -> list[dict[str, Any]]:
    """Group an ordered offer list for the page: [{accelerator, offers: [...]}]."""
    groups: dict[Any, list[CloudOffer]] = defaultdict(list)
    order: list[Any] = []
    for offer in offers:
        if offer.accelerator_id not in groups:
            order.append(offer.accelerator)
        offer.history = sparkline(offer)  # type: ignore[attr-defined]
        groups[offer.accelerator_id].append(offer)
    return [{"accelerator": a, "offers": groups[a.pk if a else None]} for a in order]


def org_feed_sources(*, organization: Owner) -> QuerySet[PriceSource]:
    return (
        PriceSource.objects.for_organization(organization)
        .select_related("provider")
        .order_by("provider__name")
    )


def org_feed_offers(*, organization: Owner) -> QuerySet[CloudOffer]:
    return (
        CloudOffer.objects.for_organization(organization)
        .select_related("provider", "accelerator")
        .order_by("provider__name", "sku")
    )


def org_feed_runs(*, organization: Owner, limit: int = 10) -> list[RefreshRun]:
    sources = PriceSource.objects.for_organization(organization)
    return list(
        RefreshRun.objects.filter(source__in=sources).select_related("source__provider")[:limit]
    )


def public_refresh_runs() -> QuerySet[RefreshRun]:
    """Refresh runs of the public sources (organisations' feeds left out), newest first:
    what the admin's source pages list, for the API's readers."""
    sources = PriceSource.objects.public()
    return (
        RefreshRun.objects.filter(source__in=sources)
        .select_related("source__provider")
        .order_by("-created", "-pk")
    )


def price_sources_due(*, kind: str = "") -> QuerySet[PriceSource]:
    """Enabled sources whose cadence has elapsed (or that never ran). Sources waiting for
    an API key are left out."""
    now = timezone.now()
    sources = PriceSource.all_orgs.filter(enabled=True).select_related("provider")
    if kind:
        sources = sources.filter(kind=kind)
    due = [
        s.pk
        for s in sources
        if not s.needs_key
        and (s.last_run_at is None or s.last_run_at + timedelta(hours=s.refresh_hours) <= now)
    ]
    return sources.filter(pk__in=due)


def price_sources_enabled(*, kind: str = "") -> QuerySet[PriceSource]:
    sources = PriceSource.all_orgs.filter(enabled=True).select_related("provider")
    return sources.filter(kind=kind) if kind else sources


def refresh_run_detail(*, run_id: int) -> RefreshRun:
    return RefreshRun.objects.select_related("source__provider").get(pk=run_id)
