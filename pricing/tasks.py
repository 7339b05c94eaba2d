"""Celery interfaces for price refreshes: take ids, call one service, return a summary."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils.translation import gettext as _

from pricing import selectors, services
from pricing.fetchers.base import TransientFetchError
from pricing.models import PriceSource, RefreshRun

logger = logging.getLogger(__name__)


# acks_late is safe because a refresh is idempotent (unique offers and snapshots, and a
# claim on the source), so a redelivery after a worker crash repeats no work twice.
# Only transient network failures retry: a malformed answer will not fix itself, and a
# URL the outbound policy refuses (pricing.outbound.NotAllowed) is not transient.
@shared_task(
    acks_late=True,
    autoretry_for=(TransientFetchError,),
    retry_backoff=60,
    retry_backoff_max=30 * 60,
    retry_jitter=True,
    max_retries=4,
    soft_time_limit=services.REFRESH_SOFT_LIMIT_S,
    time_limit=services.REFRESH_HARD_LIMIT_S,
)
def refresh_prices(source_id: int, run_id: int | None = None) -> dict[str, Any]:
    run = services.price_source_refresh(source_id=source_id, run_id=run_id)
    return run.summary()


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90)
def refresh_due_prices() -> list[int]:
    """Beat entry point: close runs a dead worker left open, then one refresh_prices task
    per enabled source that is due."""
    services.refresh_runs_reclaim()
    ids = list(selectors.price_sources_due().values_list("pk", flat=True))
    for source_id in ids:
        refresh_prices.delay(source_id)
    return ids


def refresh_enqueue(*, source: PriceSource, run: RefreshRun | None = None) -> bool:
    """Queue a refresh of a saved source; call it after the save is committed.

    False when the broker cannot take the task (Redis down): the run is recorded as failed
    and the hourly schedule picks the source up later, so the caller's save still stands.
    """
    run = run or services.refresh_run_queue(source=source)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        # No broker (make run): one attempt in this request, not eager retries that would
        # hold the page for minutes; the run records a failure, the schedule tries again.
        with contextlib.suppress(TransientFetchError):
            services.price_source_refresh(source_id=source.pk, run_id=run.pk)
        return True
    try:
        refresh_prices.delay(source.pk, run.pk)
    except Exception:  # kombu's OperationalError and friends, whatever the transport
        logger.warning("could not queue the price refresh of source %s", source.pk, exc_info=True)
        services.refresh_run_fail(run=run, error=_("the refresh could not be queued"))
        return False
    return True
