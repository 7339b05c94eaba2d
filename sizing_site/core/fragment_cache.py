"""The cache behind the pages' {% cache %} fragments.

Forgiving: Redis, but a Redis that cannot be reached costs the page its speed, never the
page. Django's fragment tag lets a backend's connection error through (a 500); here a
failed read is a miss and a failed write is skipped, with a warning in the log. Only the
fragments use it: elsewhere (the sizing cache handles its own errors, django-axes,
Celery) an error must still surface.

Batched: a page with several fragments would read each with its own round trip, and on a
setup nobody asked before write each with another. A view that knows its fragments wraps
its render in `batched(...)`: the fragments it names are read with one `get_many` before
the render, and what the render writes goes out with one `set_many` per timeout after it.
A fragment the view did not name is read and written as before, so a list that falls
behind the template costs round trips, never a wrong page."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.core.cache.utils import make_template_fragment_key

logger = logging.getLogger(__name__)

ALIAS = "fragments"  # settings.CACHES


@dataclass
class _Batch:
    """One render's fragments: what the read found (its keys are the fragment keys read),
    and what the render wrote, by timeout."""

    read: frozenset[str]
    found: dict[str, Any]
    written: dict[Any, dict[str, Any]] = field(default_factory=dict)


_batch: ContextVar[_Batch | None] = ContextVar("fragment_batch", default=None)


class BatchingMixin:
    """get/set of a fragment named by the active batch go to the batch; any other key, or
    none active, to the cache itself (the default version only: fragments use no other)."""

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        batch = _batch.get()
        if batch is not None and version is None and key in batch.read:
            return batch.found.get(key, default)
        return super().get(key, default, version)  # type: ignore[misc]

    def set(self, key: Any, value: Any, timeout: Any = None, version: int | None = None) -> None:
        batch = _batch.get()
        if batch is not None and version is None and key in batch.read:
            batch.found[key] = value
            batch.written.setdefault(timeout, {})[key] = value
            return
        super().set(key, value, timeout, version)  # type: ignore[misc]


def fragment_key(name: str, vary_on: Sequence[object]) -> str:
    """The key {% cache timeout name *vary_on %} reads; `name` as the template writes it
    (a quoted name keeps its quotes)."""
    return make_template_fragment_key(name, vary_on)


@contextmanager
def batched(fragments: Iterable[tuple[str, Sequence[object]]]) -> Iterator[None]:
    """Inside, the fragments named (name, vary_on) as fragment_key takes them are read
    with one get_many on entry; what the render writes to them goes out on a clean exit,
    one set_many per timeout (an exception leaves them unwritten, as a failed render of
    the tag itself would)."""
    cache = caches[ALIAS]
    keys = [fragment_key(name, vary_on) for name, vary_on in fragments]
    batch = _Batch(read=frozenset(keys), found=cache.get_many(keys))
    token = _batch.set(batch)
    try:
        yield
    finally:
        _batch.reset(token)
    for timeout, values in batch.written.items():
        cache.set_many(values, timeout)


class BatchingLocMemCache(BatchingMixin, LocMemCache):
    """The fragments' cache without Redis (`make run`, the tests): local memory, batched."""


class ForgivingRedisCache(BatchingMixin, RedisCache):
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

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        try:
            return super().get_many(keys, version)
        except Exception:
            logger.warning("fragment cache unreachable: rendering without it", exc_info=True)
            return {}

    def set_many(self, data: Any, timeout: Any = None, version: int | None = None) -> list[Any]:
        try:
            return super().set_many(data, timeout, version)
        except Exception:
            logger.warning("fragment cache unreachable: fragments not kept", exc_info=True)
            return []
