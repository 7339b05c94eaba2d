"""The refresh_prices task: its Celery options, in-process wiring, and a real worker on the
real Redis broker against the local fake provider."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from pricing.fetchers.base import TransientFetchError
from pricing.models import CloudOffer, PriceSnapshot
from pricing.tasks import refresh_due_prices, refresh_prices
from tests.celery_worker import celery_worker
from tests.pricing.fakeprovider import FakeProvider
from tests.pricing.helpers import source


def test_the_task_retries_only_transient_errors_with_backoff_and_limits() -> None:
    assert refresh_prices.acks_late is True
    task: Any = refresh_prices  # celery-types does not declare the autoretry options
    assert task.autoretry_for == (TransientFetchError,)
    assert task.retry_backoff == 60 and task.max_retries == 4
    assert (refresh_prices.soft_time_limit, refresh_prices.time_limit) == (240, 300)


def test_beat_runs_due_sources_hourly_off_minute_zero() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["refresh-due-prices"]
    assert entry["task"] == "pricing.tasks.refresh_due_prices"
    assert entry["schedule"].minute == {17}  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_in_process_the_due_task_refreshes_enabled_sources(fake: FakeProvider) -> None:
    if os.environ.get("REDIS_URL"):
        pytest.skip("eager mode is only the default without REDIS_URL")
    fake.serve("/feed.csv", "sku,on_demand_per_hour\na,1.00\n")
    due = source("feed", fake.url("/feed.csv"))
    source("feed", fake.url("/feed.csv"), enabled=False, name="off")
    assert refresh_due_prices.delay().get(timeout=10) == [due.pk]
    assert CloudOffer.all_orgs.get(sku="a").source == due
    assert refresh_due_prices.delay().get(timeout=10) == []  # not due again for 24 h


@pytest.fixture
def worker_on_test_db() -> Iterator[str]:
    """A real `celery worker` on its own queue, using the test database."""
    db = connection.settings_dict
    if not os.environ.get("REDIS_URL"):
        pytest.skip("REDIS_URL is not set: no real broker to test")
    if connection.vendor != "postgresql":
        pytest.skip("the worker process cannot see an in-memory SQLite test database")
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    # The worker is another process: it reads the allowance from its environment.
    env = {"DATABASE_URL": url, "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"}
    with celery_worker(env) as queue:
        yield queue


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_refreshes_a_source_over_redis(
    fake: FakeProvider, worker_on_test_db: str
) -> None:
    fake.serve_fixture("/azure", "azure_page1.json")
    fake.serve_fixture("/azure/page2", "azure_page2.json")
    azure = source("azure", fake.url("/azure"), config={"regions": ["eastus"]})
    summary = refresh_prices.apply_async(args=(azure.pk,), queue=worker_on_test_db).get(timeout=60)
    assert summary["status"] == "succeeded"
    assert (summary["created"], summary["snapshots"]) == (2, 2)
    # The worker committed the rows this process now reads.
    assert CloudOffer.all_orgs.filter(source=azure).count() == 2
    again = refresh_prices.apply_async(args=(azure.pk,), queue=worker_on_test_db).get(timeout=60)
    assert (again["unchanged"], again["snapshots"]) == (2, 0)
    assert PriceSnapshot.objects.count() == 2
