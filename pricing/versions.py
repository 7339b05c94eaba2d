"""The price version: a counter in the shared cache that every change of a cloud offer, a
provider or a price source bumps, so that a cached value built from prices (the
configurator's offer rows and its price sections) is keyed by it and never read after
the change commits. The catalog version (catalog.sizing.cache) does the same for the
catalog; a key that holds both goes stale with either.

Row saves and deletes arrive as signals (pricing.signals); the bulk writes of a refresh
(offers_upsert, offers_rematch) run inside `price_changes()`, which defers the signals'
bumps to one at its end. Like the catalog version, a missing counter (first start, Redis
restarted or evicted) starts again from the clock, so an old entry never comes back, and a
cache that cannot be reached gives UNREACHABLE: nothing is kept under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import transaction

from catalog.sizing.cache import bump_counter, counter_version

VERSION_KEY = "pricing:price-version"
# Inside price_changes(): whether a change was seen (bumped once at its end).
_deferred: ContextVar[list[bool] | None] = ContextVar("price_changes", default=None)


def price_version() -> int:
    """The current price version (one cache read); UNREACHABLE without a cache."""
    return counter_version(VERSION_KEY, "price version")


def bump_price_version() -> int:
    """Start a new price version: every value keyed by an older one is never read again."""
    return bump_counter(VERSION_KEY, "price version")


def prices_changed() -> None:
    """A new price version now and again after the current transaction commits (a request
    that read the offers before the commit may have cached under the first one). Inside
    price_changes() only noted, for one bump at its end."""
    seen = _deferred.get()
    if seen is not None:
        seen[:] = [True]
        return
    bump_price_version()
    transaction.on_commit(bump_price_version)


@contextmanager
def price_changes() -> Iterator[None]:
    """Many offer writes (a refresh's upsert), one price version bump at the end."""
    seen: list[bool] = []
    token = _deferred.set(seen)
    try:
        yield
    finally:
        _deferred.reset(token)
        if seen:
            prices_changed()
