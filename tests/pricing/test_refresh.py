"""refresh: idempotent, claimed, failure-isolated, and marks stale prices."""

from __future__ import annotations

import io
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.utils import timezone

from pricing import services
from pricing.fetchers.base import FetchedOffer, TransientFetchError, positive_number
from pricing.fetchers.feed import parse as feed_parse
from pricing.models import CloudOffer, PriceSnapshot, PriceSource, RefreshRun, RunStatus
from tests.pricing.fakeprovider import FakeProvider
from tests.pricing.helpers import accelerators, source

pytestmark = pytest.mark.django_db


def azure_source(fake: FakeProvider) -> PriceSource:
    fake.serve_fixture("/azure", "azure_page1.json")
    fake.serve_fixture("/azure/page2", "azure_page2.json")
    return source("azure", fake.url("/azure"), config={"regions": ["eastus"]})


def test_a_refresh_creates_offers_matched_to_accelerators_and_one_snapshot_each(
    fake: FakeProvider,
) -> None:
    accelerators()
    run = services.price_source_refresh(source_id=azure_source(fake).pk)
    assert run.summary() | {"run_id": 0, "source_id": 0} == {
        "run_id": 0,
        "source_id": 0,
        "status": "succeeded",
        "seen": 2,
        "created": 2,
        "updated": 0,
        "unchanged": 0,
        "snapshots": 2,
        "unmatched": 0,
        "skipped": 0,
        "error": "",
    }
    nd = CloudOffer.all_orgs.get(sku="Standard_ND96isr_H100_v5")
    assert nd.accelerator is not None and nd.accelerator.slug == "nvidia-h100-sxm5-80gb"
    # 98.32 per hour for 8 GPUs is 12.29 per GPU-hour.
    assert nd.on_demand_per_gpu_hour == Decimal("12.29")
    assert (
        CloudOffer.all_orgs.get(sku="Standard_NC40ads_H100_v5").accelerator.slug
        == "nvidia-h100-nvl-94gb"
    )


def test_a_second_run_of_the_same_observation_adds_no_snapshots(fake: FakeProvider) -> None:
    s = azure_source(fake)
    services.price_source_refresh(source_id=s.pk)
    second = services.price_source_refresh(source_id=s.pk)
    assert (second.offers_created, second.offers_updated, second.offers_unchanged) == (0, 0, 2)
    assert second.snapshots_created == 0
    assert PriceSnapshot.objects.count() == 2 and CloudOffer.all_orgs.count() == 2


def test_a_new_price_updates_the_offer_and_adds_history(fake: FakeProvider) -> None:
    s = azure_source(fake)
    services.price_source_refresh(source_id=s.pk)
    page = fake.routes["/azure/page2"].body.replace('"retailPrice": 6.98', '"retailPrice": 7.10')
    page = page.replace("2026-03-01T00:00:00Z", "2026-11-01T00:00:00Z")
    fake.serve("/azure/page2", page)
    run = services.price_source_refresh(source_id=s.pk)
    assert (run.offers_updated, run.offers_unchanged, run.snapshots_created) == (1, 1, 1)
    offer = CloudOffer.all_orgs.get(sku="Standard_NC40ads_H100_v5")
    assert offer.on_demand_per_hour == Decimal("7.1")
    history = list(offer.snapshots.values_list("on_demand_per_hour", flat=True))
    assert history == [Decimal("6.98"), Decimal("7.1")]


def test_a_held_claim_makes_a_second_run_skip_without_work(fake: FakeProvider) -> None:
    s = azure_source(fake)
    assert services.price_source_claim(source_id=s.pk)
    run = services.price_source_refresh(source_id=s.pk)
    assert run.status == RunStatus.SKIPPED and not fake.requests
    services.price_source_release(source_id=s.pk)
    assert services.price_source_refresh(source_id=s.pk).status == RunStatus.SUCCEEDED


def test_an_expired_claim_is_taken_over(fake: FakeProvider) -> None:
    s = azure_source(fake)
    PriceSource.all_orgs.filter(pk=s.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert services.price_source_refresh(source_id=s.pk).status == RunStatus.SUCCEEDED


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_only_one_does_the_work(fake: FakeProvider) -> None:
    s = azure_source(fake)
    fake.serve_fixture("/azure", "azure_page1.json", delay_s=1.0)  # the first run is busy
    results: list[RefreshRun] = []

    def first() -> None:
        try:
            results.append(services.price_source_refresh(source_id=s.pk))
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    while not PriceSource.all_orgs.filter(pk=s.pk, claimed_until__isnull=False).exists():
        pass  # wait until the first run holds the claim
    second = services.price_source_refresh(source_id=s.pk)
    thread.join(timeout=20)
    assert second.status == RunStatus.SKIPPED
    assert results[0].status == RunStatus.SUCCEEDED
    assert len([r for r in fake.requests if r[1].startswith("/azure?")]) == 1
    assert PriceSnapshot.objects.count() == 2


def test_a_failing_source_keeps_its_last_good_prices_and_records_the_error(
    fake: FakeProvider,
) -> None:
    s = azure_source(fake)
    services.price_source_refresh(source_id=s.pk)
    other = source("feed", "", feed_content="sku,on_demand_per_hour\nx1,1.50\n")
    fake.serve("/azure", "not json")
    failed = services.price_source_refresh(source_id=s.pk)
    assert failed.status == RunStatus.FAILED and "malformed JSON" in failed.error
    assert CloudOffer.all_orgs.filter(source=s).count() == 2  # nothing deleted
    s.refresh_from_db()
    assert s.last_run_status == RunStatus.FAILED and s.last_success_at is not None
    # Another source is unaffected.
    assert services.price_source_refresh(source_id=other.pk).status == RunStatus.SUCCEEDED


def test_a_transient_failure_is_recorded_then_raised_for_retry(fake: FakeProvider) -> None:
    s = azure_source(fake)
    fake.serve("/azure", "", status=503)
    with pytest.raises(TransientFetchError):
        services.price_source_refresh(source_id=s.pk)
    run = RefreshRun.objects.get(source=s)
    assert run.status == RunStatus.FAILED and "HTTP 503" in run.error
    assert PriceSource.all_orgs.get(pk=s.pk).claimed_until is None  # released


def test_prices_are_stale_after_the_configured_age(fake: FakeProvider, settings: object) -> None:
    s = azure_source(fake)
    services.price_source_refresh(source_id=s.pk)
    offer = CloudOffer.all_orgs.get(sku="Standard_ND96isr_H100_v5")
    assert not offer.is_stale
    settings.PRICES_STALE_AFTER_HOURS = 2  # type: ignore[attr-defined]
    offer.checked_at = timezone.now() - timedelta(hours=3)
    assert offer.is_stale
    offer.checked_at = timezone.now() - timedelta(hours=1)
    assert not offer.is_stale


def test_a_source_without_its_key_fails_with_the_setting_named(fake: FakeProvider) -> None:
    s = source("runpod", fake.url("/graphql"), api_key_setting="RUNPOD_API_KEY")
    run = services.price_source_refresh(source_id=s.pk)
    assert run.status == RunStatus.FAILED and "RUNPOD_API_KEY" in run.error
    assert not fake.requests


def test_bad_feed_rows_are_skipped_with_reasons_on_the_run(fake: FakeProvider) -> None:
    accelerators()
    fake.serve_fixture("/feed.csv", "feed.csv")
    run = services.price_source_refresh(source_id=source("feed", fake.url("/feed.csv")).pk)
    assert run.status == RunStatus.SUCCEEDED and run.offers_created == 2
    assert run.skipped == [
        "row 3: negative price",
        "row 4: unknown currency 'XYZ'",
        "row 5: missing sku",
    ]


def test_the_seed_has_40_offers_from_6_providers_with_dates_and_sources() -> None:
    out = io.StringIO()
    call_command("load_prices", stdout=out, stderr=io.StringIO())
    offers = CloudOffer.all_orgs.all()
    assert offers.count() >= 40
    assert offers.values("provider").distinct().count() >= 6
    assert not offers.filter(source_note="").exists()
    assert {s.kind for s in PriceSource.all_orgs.all()} == {
        "azure",
        "aws",
        "vastai",
        "runpod",
        "lambda",
        "feed",
    }
    # Sources that need a key stay disabled until it is set.
    assert not PriceSource.all_orgs.get(kind="runpod").enabled
    assert PriceSource.all_orgs.get(kind="azure").enabled
    # RunPod's H100 SXM secure price was seen three times: one offer, three snapshots.
    h100 = offers.get(sku="H100 SXM (Secure Cloud pod)")
    assert h100.on_demand_per_hour == Decimal("3.99")
    assert h100.snapshots.count() == 3
    out2 = io.StringIO()
    call_command("load_prices", stdout=out2, stderr=io.StringIO())
    assert "offers created 0, updated 0" in out2.getvalue()


def test_a_key_set_later_enables_its_source_on_the_next_load(settings: object) -> None:
    call_command("load_prices", stdout=io.StringIO())
    settings.RUNPOD_API_KEY = "rp"  # type: ignore[attr-defined]
    call_command("load_prices", stdout=io.StringIO())
    assert PriceSource.all_orgs.get(kind="runpod").enabled


def test_the_command_prints_each_runs_counts_and_status(fake: FakeProvider) -> None:
    azure_source(fake)
    out = io.StringIO()
    call_command("refresh_prices", "--kind", "azure", stdout=out)
    assert "succeeded; seen 2, created 2, updated 0, unchanged 0, snapshots 2" in out.getvalue()


def test_an_admin_alias_and_rematch_fixes_an_unmatched_offer(fake: FakeProvider) -> None:
    fake.serve("/feed.csv", "sku,accelerator,on_demand_per_hour\nx,Hopper Special,2\n")
    services.price_source_refresh(source_id=source("feed", fake.url("/feed.csv")).pk)
    offer = CloudOffer.all_orgs.get(sku="x")
    assert offer.accelerator is None
    accelerators()
    from catalog.models import Accelerator

    Accelerator.objects.filter(slug="nvidia-h100-sxm5-80gb").update(aliases=["Hopper Special"])
    assert services.offers_rematch(offers=CloudOffer.all_orgs.all()) == 1


# -- robustness -------------------------------------------------------------------


def test_a_nested_json_source_does_not_stop_the_next_source(fake: FakeProvider) -> None:
    # 100,000 levels: json.loads would raise RecursionError, which used to end the command.
    fake.serve("/azure", "[" * 100_000 + "]" * 100_000)
    nested = source("azure", fake.url("/azure"), config={"regions": ["eastus"]})
    fake.serve("/feed.csv", "sku,on_demand_per_hour\nnext-1,1.25\n")
    after = source("feed", fake.url("/feed.csv"))
    out = io.StringIO()
    call_command("refresh_prices", stdout=out)
    failed = nested.runs.get()
    assert failed.status == RunStatus.FAILED
    assert failed.error == "malformed JSON: nested deeper than 64 levels"
    assert after.runs.get().status == RunStatus.SUCCEEDED
    assert CloudOffer.all_orgs.get(sku="next-1").on_demand_per_hour == Decimal("1.25")


def test_a_crashing_fetcher_is_recorded_in_words_and_the_next_source_runs(
    fake: FakeProvider,
) -> None:
    def crash(config: object) -> None:
        raise RuntimeError("connection to server at 10.9.8.7 port 5432 failed")

    broken = source("lambda", fake.url("/x"))
    fake.serve("/feed.csv", "sku,on_demand_per_hour\nnext-1,1.25\n")
    after = source("feed", fake.url("/feed.csv"))
    with mock.patch.dict("pricing.fetchers.FETCHERS", {"lambda": crash}):
        call_command("refresh_prices", stdout=io.StringIO())
    run = broken.runs.get()
    assert run.status == RunStatus.FAILED and "10.9.8.7" not in run.error
    assert run.error == "the refresh failed unexpectedly; the server log has details"
    assert after.runs.get().status == RunStatus.SUCCEEDED


def test_a_run_left_running_by_a_dead_worker_is_marked_failed(fake: FakeProvider) -> None:
    fake.serve("/feed.csv", "sku,on_demand_per_hour\nx,1\n")
    s = source("feed", fake.url("/feed.csv"))
    # The worker loses its database while recording the result: the run stays Running.
    lost = OperationalError("server closed the connection unexpectedly")
    with mock.patch.object(services, "_finish", side_effect=lost), pytest.raises(OperationalError):
        services.price_source_refresh(source_id=s.pk)
    run = RefreshRun.objects.get(source=s)
    assert run.status == RunStatus.RUNNING and run.started is not None
    started = run.started
    # Within the task's hard limit (300 s) it may still be alive: left alone.
    assert services.refresh_runs_reclaim(now=started + timedelta(seconds=300)) == 0
    # Past the hard limit plus a minute's margin no worker can still hold it.
    assert services.refresh_runs_reclaim(now=started + timedelta(seconds=361)) == 1
    run.refresh_from_db()
    assert (run.status, run.error) == (
        RunStatus.FAILED,
        "the worker stopped before the run finished",
    )
    assert run.finished == started + timedelta(seconds=361)


def test_the_hourly_task_and_the_command_reclaim_abandoned_runs(fake: FakeProvider) -> None:
    s = source("feed", "", feed_content="sku,on_demand_per_hour\nx,1\n", enabled=False)
    old = timezone.now() - timedelta(hours=2)
    running = RefreshRun.objects.create(source=s, status=RunStatus.RUNNING, started=old)
    queued = RefreshRun.objects.create(source=s, status=RunStatus.QUEUED)
    RefreshRun.objects.filter(pk=queued.pk).update(created=timezone.now() - timedelta(days=2))
    fresh = RefreshRun.objects.create(source=s, status=RunStatus.QUEUED)
    from pricing.tasks import refresh_due_prices

    refresh_due_prices.apply()
    statuses = dict(RefreshRun.objects.values_list("pk", "status"))
    assert statuses == {
        running.pk: RunStatus.FAILED,
        queued.pk: RunStatus.FAILED,
        fresh.pk: RunStatus.QUEUED,
    }


def test_out_of_range_offers_from_any_fetcher_are_skipped_with_the_field() -> None:
    now = timezone.now()
    good = FetchedOffer(
        sku="ok",
        region="",
        gpu_name="H100",
        gpu_count=8,
        on_demand_per_hour=Decimal("98.32"),
        observed_at=now,
    )
    huge = replace(good, sku="huge", gpu_count=2**63)
    future = replace(good, sku="future", observed_at=now + timedelta(days=1))
    kept, refused = services.offers_checked([good, huge, future], now=now)
    assert kept == [good]
    assert refused == [
        "huge: gpu_count must be a whole number from 1 to 4096",
        "future: observed_at is in the future",
    ]


def test_a_date_only_checked_at_may_lead_utc_by_a_time_zone() -> None:
    now = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
    # In UTC+14 it is already 2026-11-30 06:00: that date is today there, and kept as now.
    parsed = feed_parse("sku,on_demand_per_hour,checked_at\nx,1,2026-11-30\n", now=now)
    assert parsed.offers[0].checked_at == now and parsed.skipped == []
    parsed = feed_parse("sku,on_demand_per_hour,checked_at\nx,1,2026-12-01\n", now=now)
    assert parsed.skipped == ["row 1: checked_at is in the future"]


def test_only_a_staff_source_sets_its_own_fetch_limits() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    limits = {"max_bytes": 1_048_576, "deadline_s": 5, "region_deadline_s": "soon"}
    staff = PriceSource(kind="aws", config=limits)
    config = services._config(staff, now)
    assert (config.max_bytes, config.timeout_s) == (1_048_576, 5.0)
    # An organisation's feed keeps the defaults (None: OUTBOUND_MAX_BYTES, _DEADLINE_S).
    org_feed = PriceSource(kind="feed", config=limits, organization_id=1)
    config = services._config(org_feed, now)
    assert (config.max_bytes, config.timeout_s) == (None, None)
    # Text, zero, negatives and booleans in the admin-edited JSON mean "the default".
    assert [positive_number(v) for v in ("soon", 0, -3, True, 2.5)] == [None] * 4 + [2.5]
