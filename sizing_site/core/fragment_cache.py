"""The cache behind the pages' {% cache %} fragments: Redis, but a Redis that cannot be
reached costs the page its speed, never the page. Django's fragment tag lets a backend's
connection error through (a 500); here a failed read is a miss and a failed write is
skipped, with a warning in the log. Only the fragments use it: elsewhere (the sizing
cache handles its own errors, django-axes, Celery) an error must still surface."""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)


class ForgivingRedisCache(RedisCache):
    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        try:
            return super().get(key, default, version)
        except Exception:  # any connection error of the Redis client
            logger.warning("fragment cache unreachable: rendering without it", exc_info=True)
            return default

    def set(self, key: Any, value: Any, timeout: Any = None, version: int | None = None) -> None:
        try:
            super().set(key, value, timeout, version)
        except Exception:
            logger.warning("fragment cache unreachable: fragment not kept", exc_info=True)
