"""Celery interfaces for price refreshes: take ids, call one service, return a summary."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from pricing import selectors, services
from pricing.fetchers.base import TransientFetchError


# acks_late is safe because a refresh is idempotent (unique offers and snapshots, and a
# claim on the source), so a redelivery after a worker crash repeats no work twice.
# Only transient network failures retry: a malformed answer will not fix itself.
@shared_task(
    acks_late=True,
    autoretry_for=(TransientFetchError,),
    retry_backoff=60,
    retry_backoff_max=30 * 60,
    retry_jitter=True,
    max_retries=4,
    soft_time_limit=240,
    time_limit=300,
)
def refresh_prices(source_id: int, run_id: int | None = None) -> dict[str, Any]:
    run = services.price_source_refresh(source_id=source_id, run_id=run_id)
    return run.summary()


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90)
def refresh_due_prices() -> list[int]:
    """Beat entry point: one refresh_prices task per enabled source that is due."""
    ids = list(selectors.price_sources_due().values_list("pk", flat=True))
    for source_id in ids:
        refresh_prices.delay(source_id)
    return ids
