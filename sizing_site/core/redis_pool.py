"""One Redis connection pool per process for the caches.

Django keeps a cache backend per thread, and each backend's client opens a pool of its own:
a server that runs a request in a thread of its own (runserver, the test suite's live
server) opened a new Redis connection, with its handshake, for every request; gunicorn's
threads live longer but still held one pool each. Django's RedisCache takes a `pool_class`
option; this one hands every client of the same address and options the same pool (redis-py's
pools are thread-safe, and a forked child starts its own connections: ConnectionPool checks
its process id)."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import redis


class SharedConnectionPool(redis.ConnectionPool):
    _shared: ClassVar[dict[tuple[str, str], SharedConnectionPool]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> SharedConnectionPool:
        """The process's pool for `url` and these options, made on first use."""
        key = (url, repr(sorted(kwargs.items())))
        with cls._shared_lock:
            pool = cls._shared.get(key)
            if pool is None:
                pool = cls._shared[key] = super().from_url(url, **kwargs)
        return pool
