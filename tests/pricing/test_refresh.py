"""refresh: idempotent, claimed, failure-isolated, and marks stale prices."""

from __future__ import annotations

import io
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from pricing import services
from pricing.fetchers.base import TransientFetchError
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
