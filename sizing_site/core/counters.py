"""Where the API's counters live: the throttles' request histories, the failed token
checks per address, the work budget's spending and its in-flight slots.

They are kept in the shared cache (Redis in production), so every worker process counts
the same requests. A Redis that cannot be reached must not cost the API its answers (a
throttle that raises turns every call into a 500): each operation then falls back to this
process's own local memory, with a warning in the log. The limits still hold per process
while Redis is down, only less tightly (each process counts its own share).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache

logger = logging.getLogger(__name__)

# A warning a minute at most while Redis is down, not one per request.
_WARN_EVERY_S = 60.0


class Counters:
    """The shared cache's counting operations (get, set, add, incr, delete), each answered
    by a process-local cache when the shared one raises."""

    def __init__(self, shared: Callable[[], BaseCache]) -> None:
        self.shared = shared
        # Per process by design (the fallback); LocMemCache locks its own dict.
        self.local = LocMemCache("sizing-site-counters-fallback", {"OPTIONS": {}})
        self._warned_at = 0.0

    def _call(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self.shared(), operation)(*args, **kwargs)
        except ValueError:
            raise  # incr of a missing key: an answer, not an outage
        except Exception:  # any backend's connection error
            now = time.monotonic()
            if now - self._warned_at >= _WARN_EVERY_S:
                self._warned_at = now
                logger.warning("counter cache unreachable: counting in local memory", exc_info=True)
            return getattr(self.local, operation)(*args, **kwargs)

    def get(self, key: str, default: Any = None) -> Any:
        return self._call("get", key, default)

    def set(self, key: str, value: Any, timeout: float) -> None:
        self._call("set", key, value, timeout)

    def add(self, key: str, value: Any, timeout: float) -> bool:
        return bool(self._call("add", key, value, timeout))

    def incr(self, key: str, delta: int = 1) -> int:
        return int(self._call("incr", key, delta))

    def delete(self, key: str) -> None:
        self._call("delete", key)

    def bump(self, key: str, delta: int, timeout: float) -> int:
        """Add `delta` to the counter at `key` (created at 0 with `timeout` when absent)
        and return its new value; a counter that expired in between starts again."""
        self.add(key, 0, timeout)
        try:
            return self.incr(key, delta)
        except ValueError:
            self.set(key, delta, timeout)
            return delta


COUNTERS = Counters(lambda: caches["default"])
