"""The caches' Redis connection pool is one per process and address, whichever thread asks."""

from __future__ import annotations

import os
import threading

import pytest
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from sizing_site.core.redis_pool import SharedConnectionPool

OPTIONS = {"pool_class": "sizing_site.core.redis_pool.SharedConnectionPool"}


def _pool(location: str) -> object:
    backend = RedisCache(location, {"OPTIONS": OPTIONS})
    return backend._cache._get_connection_pool(True)  # type: ignore[attr-defined]


def test_clients_of_one_address_share_a_pool_and_another_address_gets_its_own() -> None:
    # (No connection is opened: a pool connects on its first command.)
    first, second = _pool("redis://127.0.0.1:6379/14"), _pool("redis://127.0.0.1:6379/14")
    other = _pool("redis://127.0.0.1:6379/13")
    assert first is second
    assert other is not first
    assert isinstance(first, SharedConnectionPool)


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (a real Redis)")
def test_a_request_thread_each_time_reuses_one_connection() -> None:
    # As the live server runs each request in a new thread: Django makes each thread a
    # cache backend of its own; before the shared pool, each opened a connection.
    pools: list[SharedConnectionPool] = []

    def visit() -> None:
        cache = caches["default"]
        cache.get("redis-pool-probe")
        pools.append(cache._cache._get_connection_pool(False))  # type: ignore[attr-defined]

    visit()
    before = pools[0]._created_connections
    for _ in range(5):
        thread = threading.Thread(target=visit)
        thread.start()
        thread.join()
    assert all(pool is pools[0] for pool in pools)
    # one after another: each took the connection the one before gave back
    assert pools[0]._created_connections == before
