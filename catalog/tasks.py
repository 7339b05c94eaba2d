"""Celery interface for the sizing cache: warm the sweeps pages read after a catalog
change, so no visitor waits for a cold sweep (catalog.sizing.warm does the work)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.core.cache import cache
from kombu.exceptions import OperationalError

from catalog.sizing import warm

logger = logging.getLogger(__name__)

PENDING_KEY = "sizing:warm-pending"


# Idempotent (it only fills cache entries), so acks_late is safe. A full warm-up computes
# every sizable model on every card once; the limits leave room for a catalog ten times
# today's size on one core.
@shared_task(acks_late=True, soft_time_limit=20 * 60, time_limit=25 * 60)
def warm_sizing_cache() -> dict[str, int]:
    cache.delete(PENDING_KEY)  # an edit from now on queues the next warm-up
    return warm.warm_pages().as_dict()


def schedule_warm_up(*, countdown: int = 0) -> bool:
    """Queue one warm-up unless one is already waiting (edits in a burst share it).
    False when the broker cannot take it: pages then fill the cache on first visit."""
    if not cache.add(PENDING_KEY, 1, timeout=15 * 60):
        return True
    try:
        warm_sizing_cache.apply_async(countdown=countdown)
    except OperationalError:
        cache.delete(PENDING_KEY)
        logger.warning("sizing cache warm-up not queued: the broker is unreachable")
        return False
    return True
