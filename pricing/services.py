"""Writes for cloud prices: refresh a source, upsert offers and their history, seed data,
and an organisation's feed.

A refresh is idempotent by construction: offers are keyed by (organisation, provider, SKU,
region) and snapshots by (offer, observation time), both backed by unique constraints.
A compare-and-swap claim on the source keeps two runs from doing the same work.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy

from catalog.scoping import Owner
from pricing.fetchers import FETCHERS
from pricing.fetchers.base import (
    FetchedOffer,
    FetchError,
    SourceConfig,
    TransientFetchError,
    offer_check,
    positive_number,
)
from pricing.fetchers.feed import parse as feed_parse
from pricing.matching import AcceleratorMatcher
from pricing.models import (
    CloudOffer,
    CloudProvider,
    PriceSnapshot,
    PriceSource,
    RefreshRun,
    RunStatus,
    SourceKind,
)
from pricing.versions import price_changes, prices_changed

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"
# The refresh_prices task's limits (pricing.tasks); the soft one leaves time to record.
REFRESH_SOFT_LIMIT_S = 240
REFRESH_HARD_LIMIT_S = 300
# A claim outlives the task's hard time limit, so a crashed worker frees the source later.
CLAIM_LEASE = timedelta(minutes=15)
# A run still Running after the hard limit has no live worker: the limit kills the task.
RUN_ABANDONED_AFTER = timedelta(seconds=REFRESH_HARD_LIMIT_S + 60)
# Retries back off 60 s doubling to 30 min, 4 at most: all are over well within a day.
QUEUED_ABANDONED_AFTER = timedelta(days=1)
UNEXPECTED_ERROR = gettext_lazy("the refresh failed unexpectedly; the server log has details")
ABANDONED_ERROR = gettext_lazy("the worker stopped before the run finished")
CENT_FRACTION = Decimal("0.0001")
OFFER_FIELDS = [
    "accelerator_id",
    "gpu_name",
    "gpu_count",
    "vram_total_gb",
    "on_demand_per_hour",
    "spot_per_hour",
    "currency",
    "billing_granularity",
    "source_note",
]


@dataclass
class UpsertCounts:
    seen: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    snapshots: int = 0
    unmatched: int = 0


def _q4(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(CENT_FRACTION)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


# -- claims -------------------------------------------------------------------------------


def price_source_claim(*, source_id: int, now: datetime | None = None) -> bool:
    """Take the source if nobody holds it (or the holder's lease ran out). One UPDATE with
    the condition in its WHERE clause, so of two workers racing exactly one sees a row."""
    now = now or timezone.now()
    claimed = (
        PriceSource.all_orgs.filter(pk=source_id)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + CLAIM_LEASE)
    )
    return claimed == 1


def price_source_release(*, source_id: int) -> None:
    PriceSource.all_orgs.filter(pk=source_id).update(claimed_until=None)


# -- refresh ------------------------------------------------------------------------------


def refresh_run_queue(*, source: PriceSource) -> RefreshRun:
    """A queued run the admin page can show before the worker picks it up."""
    return RefreshRun.objects.create(source=source, status=RunStatus.QUEUED)


def price_source_refresh(*, source_id: int, run_id: int | None = None) -> RefreshRun:
    """Fetch one source and upsert its offers; record the outcome on a RefreshRun.

    A failing source keeps its last good offers (nothing is deleted) and records the error.
    TransientFetchError is re-raised after recording so the Celery task can retry it; any
    other error is recorded and the run returned, so a caller looping over sources goes on.
    """
    source = PriceSource.all_orgs.select_related("provider", "organization").get(pk=source_id)
    run = _run_for(source, run_id)
    now = timezone.now()
    if not price_source_claim(source_id=source.pk, now=now):
        return _finish(run, RunStatus.SKIPPED, error="another run holds this source")
    try:
        run.status, run.started = RunStatus.RUNNING, now
        run.save(update_fields=["status", "started"])
        return _refresh(source, run, now)
    except TransientFetchError as exc:
        _finish(run, RunStatus.FAILED, error=str(exc))
        raise
    except FetchError as exc:
        return _finish(run, RunStatus.FAILED, error=str(exc))
    except Exception:  # a bug or a database error: logged in full, shown in words
        logger.exception("price refresh of source %s failed", source.pk)
        return _finish(run, RunStatus.FAILED, error=str(UNEXPECTED_ERROR))
    except BaseException:  # time limits, shutdown: record them, then let them surface
        logger.exception("price refresh of source %s stopped", source.pk)
        _finish(run, RunStatus.FAILED, error=str(UNEXPECTED_ERROR))
        raise
    finally:
        price_source_release(source_id=source.pk)


def _refresh(source: PriceSource, run: RefreshRun, now: datetime) -> RefreshRun:
    if source.needs_key:
        raise FetchError(f"the {source.api_key_setting} setting is not set")
    result = FETCHERS[source.kind](_config(source, now))
    offers, refused = offers_checked(result.offers, now=now)
    run.skipped = (result.skipped + refused)[:500]
    counts = offers_upsert(fetched=offers, source=source, organization=source.organization, run=run)
    _apply_counts(run, counts)
    PriceSource.all_orgs.filter(pk=source.pk).update(last_success_at=now)
    return _finish(run, RunStatus.SUCCEEDED)


def offers_checked(
    offers: list[FetchedOffer], *, now: datetime
) -> tuple[list[FetchedOffer], list[str]]:
    """Split off offers with values out of range, whichever fetcher produced them."""
    kept, refused = [], []
    for offer in offers:
        try:
            offer_check(offer, now=now)
        except ValueError as exc:
            refused.append(f"{offer.sku[:60]}: {exc}")
        else:
            kept.append(offer)
    return kept, refused


def refresh_runs_reclaim(*, now: datetime | None = None) -> int:
    """Mark failed the runs a dead worker left behind (it lost its database, or was
    killed): Running past the task's hard time limit, or Queued for longer than any
    retry schedule. Returns how many."""
    now = now or timezone.now()
    stale = RefreshRun.objects.filter(
        Q(status=RunStatus.RUNNING, started__lt=now - RUN_ABANDONED_AFTER)
        | Q(status=RunStatus.QUEUED, created__lt=now - QUEUED_ABANDONED_AFTER)
    )
    sources = set(stale.values_list("source_id", flat=True))
    count = stale.update(status=RunStatus.FAILED, finished=now, error=str(ABANDONED_ERROR))
    PriceSource.all_orgs.filter(pk__in=sources, last_run_status=RunStatus.RUNNING).update(
        last_run_status=RunStatus.FAILED
    )
    return count


def refresh_run_fail(*, run: RefreshRun, error: str) -> RefreshRun:
    """Record a run that never started (its task could not be queued). The source's
    last_run_at stays as it was, so the schedule still sees it as due."""
    run.status, run.finished, run.error = RunStatus.FAILED, timezone.now(), error[:2000]
    run.save(update_fields=["status", "finished", "error"])
    return run


def _run_for(source: PriceSource, run_id: int | None) -> RefreshRun:
    if run_id is not None:
        run = RefreshRun.objects.filter(pk=run_id, source=source, status=RunStatus.QUEUED).first()
        if run is not None:
            return run
    return refresh_run_queue(source=source)


def _config(source: PriceSource, now: datetime) -> SourceConfig:
    config = source.config if isinstance(source.config, dict) else {}
    # Only staff sources may set their own limits; an organisation's feed has the defaults.
    limits = config if source.organization_id is None else {}
    max_bytes = positive_number(limits.get("max_bytes"))
    return SourceConfig(
        base_url=source.base_url,
        api_key=source.api_key,
        config=config,
        feed_content=source.feed_content,
        timeout_s=positive_number(limits.get("deadline_s")),
        max_bytes=int(max_bytes) if max_bytes else None,
        now=now,
    )


def _apply_counts(run: RefreshRun, counts: UpsertCounts) -> None:
    run.offers_seen, run.offers_created = counts.seen, counts.created
    run.offers_updated, run.offers_unchanged = counts.updated, counts.unchanged
    run.snapshots_created, run.unmatched = counts.snapshots, counts.unmatched


def _finish(run: RefreshRun, status: str, *, error: str = "") -> RefreshRun:
    now = timezone.now()
    run.status, run.finished, run.error = status, now, error[:2000]
    run.save()
    if status != RunStatus.SKIPPED:
        PriceSource.all_orgs.filter(pk=run.source_id).update(
            last_run_status=status, last_run_at=now
        )
    return run


# -- upsert -------------------------------------------------------------------------------


@transaction.atomic
def offers_upsert(
    *,
    fetched: list[FetchedOffer],
    source: PriceSource | None,
    organization: Any = None,
    run: RefreshRun | None = None,
    providers: dict[str, CloudProvider] | None = None,
) -> UpsertCounts:
    """Create or update offers and add one snapshot per (offer, observation).

    Rows naming a provider are honoured only with `providers` (the trusted seed file);
    a source's rows always belong to its own provider. Later observations win.
    """
    counts = UpsertCounts(seen=len(fetched))
    matcher = AcceleratorMatcher()
    now = timezone.now()
    existing = {
        (o.provider_id, o.sku, o.region): o
        for o in CloudOffer.all_orgs.filter(organization=organization).filter(
            provider__in=_provider_ids(source, providers)
        )
    }
    before = {key: _values_of(offer) for key, offer in existing.items()}
    touched: dict[tuple[int, str, str], CloudOffer] = {}
    observations: list[tuple[CloudOffer, FetchedOffer]] = []
    for item in sorted(fetched, key=lambda f: _utc(f.observed_at)):
        provider = _provider_for(item, source, providers)
        key = (provider.pk, item.sku, item.region)
        offer = existing.setdefault(
            key,
            CloudOffer(
                provider=provider, sku=item.sku, region=item.region, organization=organization
            ),
        )
        for name, value in _offer_values(item, matcher).items():
            setattr(offer, name, value)
        offer.source = source
        offer.checked_at = item.checked_at or now
        touched[key] = offer
        observations.append((offer, item))
    with price_changes():  # one price version bump for the whole upsert
        _offers_save(touched, before, counts)
    counts.snapshots = _snapshots_add(observations, run)
    return counts


def _offers_save(
    touched: dict[tuple[int, str, str], CloudOffer],
    before: dict[tuple[int, str, str], dict[str, Any]],
    counts: UpsertCounts,
) -> None:
    """Save the touched offers, counting the new, changed and unchanged ones."""
    for key, offer in touched.items():
        offer.save()
        if key not in before:
            counts.created += 1
        elif _values_of(offer) != before[key]:
            counts.updated += 1
        else:
            counts.unchanged += 1
        counts.unmatched += offer.accelerator_id is None


def _provider_ids(
    source: PriceSource | None, providers: dict[str, CloudProvider] | None
) -> list[int]:
    ids = [p.pk for p in (providers or {}).values()]
    return ids + ([source.provider_id] if source else [])


def _provider_for(
    item: FetchedOffer, source: PriceSource | None, providers: dict[str, CloudProvider] | None
) -> CloudProvider:
    if providers is not None and item.provider:
        try:
            return providers[item.provider.lower()]
        except KeyError:
            raise FetchError(f"unknown provider {item.provider!r} in seed offers") from None
    if source is None:
        raise FetchError(f"offer {item.sku!r} names no provider")
    return source.provider


def _values_of(offer: CloudOffer) -> dict[str, Any]:
    return {name: getattr(offer, name) for name in OFFER_FIELDS}


def _offer_values(item: FetchedOffer, matcher: AcceleratorMatcher) -> dict[str, Any]:
    return {
        "accelerator_id": matcher.match(item.gpu_name),
        "gpu_name": item.gpu_name,
        "gpu_count": item.gpu_count,
        "vram_total_gb": item.vram_total_gb,
        "on_demand_per_hour": _q4(item.on_demand_per_hour),
        "spot_per_hour": _q4(item.spot_per_hour),
        "currency": item.currency,
        "billing_granularity": item.billing_granularity,
        "source_note": item.source_note,
    }


def _snapshots_add(
    observations: list[tuple[CloudOffer, FetchedOffer]], run: RefreshRun | None
) -> int:
    """One snapshot per (offer, observed_at); a repeated observation updates its prices."""
    wanted: dict[tuple[int, datetime], FetchedOffer] = {}
    for offer, item in observations:
        wanted[(offer.pk, _utc(item.observed_at))] = item
    if not wanted:
        return 0
    existing = {
        (s.offer_id, _utc(s.observed_at)): s
        for s in PriceSnapshot.objects.filter(
            offer_id__in={pk for pk, _ in wanted}, observed_at__in={at for _, at in wanted}
        )
    }
    new, changed = [], []
    for (offer_id, observed_at), item in wanted.items():
        prices = (_q4(item.on_demand_per_hour), _q4(item.spot_per_hour), item.currency)
        snapshot = existing.get((offer_id, observed_at))
        if snapshot is None:
            new.append(
                PriceSnapshot(
                    offer_id=offer_id,
                    observed_at=observed_at,
                    on_demand_per_hour=prices[0],
                    spot_per_hour=prices[1],
                    currency=prices[2],
                    run=run,
                )
            )
        elif (snapshot.on_demand_per_hour, snapshot.spot_per_hour, snapshot.currency) != prices:
            snapshot.on_demand_per_hour, snapshot.spot_per_hour, snapshot.currency = prices
            changed.append(snapshot)
    # ignore_conflicts: a concurrent writer (e.g. load_catalog during a refresh) may have
    # added the same observation; the unique constraint keeps one.
    PriceSnapshot.objects.bulk_create(new, ignore_conflicts=True)
    PriceSnapshot.objects.bulk_update(changed, ["on_demand_per_hour", "spot_per_hour", "currency"])
    return len(new)


# -- seed ---------------------------------------------------------------------------------


@dataclass
class SeedResult:
    providers_created: int = 0
    sources_created: int = 0
    offers: UpsertCounts = field(default_factory=UpsertCounts)
    skipped: list[str] = field(default_factory=list)


def pricing_seed_load(*, data_dir: Path = DATA_DIR) -> SeedResult:
    """Providers, one PriceSource per kind, and the transcribed offers in pricing/data/."""
    result = SeedResult()
    providers = _seed_providers(data_dir / "providers.csv", result)
    _seed_sources(data_dir / "sources.csv", providers, result)
    text = (data_dir / "offers.csv").read_text(encoding="utf-8")
    # The feed parser applies offer_check to each row itself, naming the row it skips.
    parsed = feed_parse(text, now=timezone.now())
    result.skipped = parsed.skipped
    result.offers = offers_upsert(fetched=parsed.offers, source=None, providers=providers)
    return result


def _seed_providers(path: Path, result: SeedResult) -> dict[str, CloudProvider]:
    providers: dict[str, CloudProvider] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            provider, created = CloudProvider.objects.update_or_create(
                slug=row["slug"],
                defaults={
                    "name": row["name"],
                    "billing_model": row["billing_model"],
                    "website": row["website"],
                },
            )
            result.providers_created += created
            providers[provider.name.lower()] = providers[provider.slug] = provider
    return providers


def _seed_sources(path: Path, providers: dict[str, CloudProvider], result: SeedResult) -> None:
    """Create missing sources; keep what an admin changed, except that a source waiting for
    its key is enabled once the key is set (and it has never run)."""
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            source, created = PriceSource.all_orgs.get_or_create(
                provider=providers[row["provider"]],
                kind=SourceKind(row["kind"]),
                organization=None,
                defaults={
                    "name": row["name"],
                    "base_url": row["base_url"],
                    "api_key_setting": row["api_key_setting"],
                    "refresh_hours": int(row["refresh_hours"]),
                    "enabled": row["enabled"] == "True",
                },
            )
            result.sources_created += created
            waiting_for_key = created or source.last_run_at is None
            if waiting_for_key and source.api_key_setting:
                enabled = (row["enabled"] == "True" if created else True) and not source.needs_key
                if enabled != source.enabled:
                    source.enabled = enabled
                    source.save(update_fields=["enabled"])


# -- organisation feeds ---------------------------------------------------------------------


def org_feed_save(
    *, organization: Owner, provider: CloudProvider, url: str = "", content: str = ""
) -> PriceSource:
    """Create or update the organisation's feed for a provider (admins only: the view
    resolves the tenant with min_role=admin and passes its organisation)."""
    source, _created = PriceSource.all_orgs.update_or_create(
        organization=organization,
        provider=provider,
        kind=SourceKind.FEED,
        defaults={
            "name": f"{organization.name}: {provider.name}",
            "base_url": url,
            "feed_content": "" if url else content,
            "enabled": True,
        },
    )
    return source


def offers_rematch(*, offers: Any) -> int:
    """Match offers to accelerators again (after an admin added an alias); returns how
    many now have one."""
    matcher = AcceleratorMatcher()
    changed = []
    for offer in offers:
        accelerator_id = matcher.match(offer.gpu_name)
        if accelerator_id != offer.accelerator_id:
            offer.accelerator_id = accelerator_id
            changed.append(offer)
    CloudOffer.all_orgs.bulk_update(changed, ["accelerator"])
    if changed:  # bulk_update sends no signal
        prices_changed()
    return sum(1 for o in changed if o.accelerator_id is not None)
