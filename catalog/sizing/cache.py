"""The shared result cache for sizing: Django's cache (Redis in production, local memory
by default), with keys that carry the catalog version.

Every catalog edit bumps the version (catalog.signals, load_catalog), so an admin's change
is visible on the next request: old entries are simply never read again and expire.
The version itself lives in the cache. When it is missing (first start, Redis restarted,
evicted) a fresh one is taken from the clock, so an old entry can never come back to life.
A cache that cannot be reached costs speed, never a page: results are then computed and
not kept.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from django.core.cache import cache

T = TypeVar("T")
logger = logging.getLogger(__name__)

VERSION_KEY = "sizing:catalog-version"
# Entries outlive no catalog edit anyway; the timeout only bounds memory for keys that
# nobody asks for again (old versions, rare filters).
TIMEOUT_S = 7 * 24 * 3600
UNREACHABLE = -1  # the version when the cache cannot be reached: nothing is kept
_MISSING = object()
# The version a request (or a warm-up) started with: set before it reads any catalog row,
# so a result computed from rows read before an edit is never stored under the version
# that edit started. It also spares a cache read per lookup.
_pinned: ContextVar[int | None] = ContextVar("sizing_catalog_version", default=None)


@contextmanager
def pinned_version() -> Iterator[int]:
    """Read the catalog version once; every lookup inside uses it."""
    version = _current()
    token = _pinned.set(version)
    try:
        yield version
    finally:
        _pinned.reset(token)


def catalog_version() -> int:
    """The pinned version inside pinned_version(), else the current one (one cache read)."""
    pinned = _pinned.get()
    return _current() if pinned is None else pinned


def _current() -> int:
    return counter_version(VERSION_KEY, "sizing cache")


def counter_version(key: str, what: str) -> int:
    """A version counter in the shared cache (one read): started from the clock when
    missing (first start, Redis restarted or evicted), so an old entry never comes back;
    UNREACHABLE when the cache cannot be reached. The catalog version and the price
    version (pricing.versions) are such counters."""
    try:
        version = cache.get(key)
        if version is None:
            cache.add(key, time.time_ns() // 1000, timeout=None)
            version = cache.get(key)
        return int(version)
    except Exception:  # any backend's connection error: the page goes on uncached
        logger.warning("%s unreachable: computing without it", what, exc_info=True)
        return UNREACHABLE


def bump_counter(key: str, what: str) -> int:
    """Start a new version of a counter_version counter."""
    try:
        return int(cache.incr(key))
    except ValueError:  # no version yet: any fresh one is new
        return counter_version(key, what)
    except Exception:
        logger.warning("%s unreachable: version not bumped", what, exc_info=True)
        return UNREACHABLE


def bump_catalog_version() -> int:
    """Start a new catalog version: every cached sizing result becomes unreachable.
    (With the cache unreachable there is nothing to invalidate; a restarted Redis starts
    a fresh version from the clock.)"""
    return bump_counter(VERSION_KEY, "sizing cache")


def key_for(namespace: str, parts: tuple[object, ...]) -> str:
    """`namespace`, the catalog version and a digest of `parts` (reprs of plain values)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()
    return f"sizing:{namespace}:v{catalog_version()}:{digest}"


def store(namespace: str, parts: tuple[object, ...], value: object) -> None:
    """Put a value where remembered() will find it (the warm-up's bulk path)."""
    if catalog_version() != UNREACHABLE:
        cache.set(key_for(namespace, parts), value, timeout=TIMEOUT_S)


def remembered(namespace: str, parts: tuple[object, ...], compute: Callable[[], T]) -> T:
    """The cached value for (catalog version, namespace, parts), computing it on a miss.

    `parts` must describe every input of `compute` that is not catalog data; the value must
    pickle (plain values, frozen dataclasses)."""
    if catalog_version() == UNREACHABLE:
        return compute()
    key = key_for(namespace, parts)
    try:
        value = cache.get(key, _MISSING)
    except Exception:
        logger.warning("sizing cache unreachable: computing without it", exc_info=True)
        return compute()
    if value is _MISSING:
        value = compute()
        try:
            cache.set(key, value, timeout=TIMEOUT_S)
        except Exception:
            logger.warning("sizing cache unreachable: result not kept", exc_info=True)
    return value


def remembered_many(
    namespace: str,
    parts_list: Sequence[tuple[object, ...]],
    compute: Callable[[tuple[object, ...]], T],
) -> list[T]:
    """remembered() for many entries of one namespace, in order, in two round trips: one
    read of every key (get_many) and one write of the misses (set_many). A page that needs
    a couple of hundred entries (the planner's replica curves) otherwise pays a Redis
    round trip and a client object for each. Parts that repeat are computed once."""
    if catalog_version() == UNREACHABLE:
        return [compute(parts) for parts in parts_list]
    keys = [key_for(namespace, parts) for parts in parts_list]
    try:
        found = cache.get_many(keys)
    except Exception:
        logger.warning("sizing cache unreachable: computing without it", exc_info=True)
        return [compute(parts) for parts in parts_list]
    computed: dict[str, T] = {}
    values: list[T] = []
    for key, parts in zip(keys, parts_list, strict=True):
        if key in found:
            values.append(found[key])
            continue
        if key not in computed:
            computed[key] = compute(parts)
        values.append(computed[key])
    if computed:
        try:
            cache.set_many(computed, timeout=TIMEOUT_S)
        except Exception:
            logger.warning("sizing cache unreachable: results not kept", exc_info=True)
    return values


# --- this process's own copies -------------------------------------------------------
# What every setup of a model (or every setup on the same cards) shares and is cheap to
# keep but dear to fetch and unpickle for each request: the estimator Devices of the
# curated cards grouped by engine, a model's parsed facts. Kept in this process's memory
# under the catalog version, so an edit starts afresh here too; nothing is kept while the
# cache (and so the version) cannot be reached.

LOCAL_ENTRIES = 512  # a few hundred models and card lists; the oldest go first
_local: OrderedDict[tuple[object, ...], object] = OrderedDict()
_local_lock = threading.Lock()


def remembered_here(namespace: str, parts: tuple[object, ...], compute: Callable[[], T]) -> T:
    """The value for (catalog version, namespace, parts) kept in this process, computing
    it on a miss. `parts` must be hashable and describe every input of `compute` that is
    not catalog data, as for remembered(); the value is shared, so it must not be changed."""
    version = catalog_version()
    if version == UNREACHABLE:
        return compute()
    key = (namespace, version, parts)
    with _local_lock:
        value = _local.get(key, _MISSING)
        if value is not _MISSING:
            _local.move_to_end(key)
            return value  # type: ignore[return-value]
    value = compute()
    with _local_lock:
        _local[key] = value
        while len(_local) > LOCAL_ENTRIES:
            _local.popitem(last=False)
    return value


def forget_here() -> None:
    """Drop this process's copies (tests; a catalog version change needs no call)."""
    with _local_lock:
        _local.clear()


# --- content-keyed entries: one model on one card -------------------------------------
# A page's entries above go stale with every catalog edit. Beneath them, one model's fit
# on one card is kept under a digest of exactly what it is computed from: the model's
# config and measured file sizes, the card's estimator Device and engine, the ladder and
# context, and the code that computes it (CODE_DIGEST). An edit then recomputes only the
# pairs whose inputs changed, and a page rebuilt after an edit reads the rest in one
# round trip.

_CODE_ROOTS = ("estimator", "catalog/sizing", "catalog/hardware.py")
_CODE_SUFFIXES = (".py", ".json", ".csv")


@functools.cache
def code_digest() -> str:
    """A digest of the estimator's and the sizing service's source and data files, so a
    deploy that changes how a figure is computed never reads an entry of the old code."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.blake2b(digest_size=16)
    for name in _CODE_ROOTS:
        path = root / name
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in files:
            if file.suffix in _CODE_SUFFIXES and "__pycache__" not in file.parts:
                digest.update(str(file.relative_to(root)).encode())
                digest.update(file.read_bytes())
    return digest.hexdigest()


def _content_key(namespace: str, parts: tuple[object, ...]) -> str:
    digest = hashlib.blake2b(repr((code_digest(), parts)).encode(), digest_size=16)
    return f"sizing:{namespace}:c:{digest.hexdigest()}"


def remembered_content(namespace: str, parts: tuple[object, ...], compute: Callable[[], T]) -> T:
    """The content-keyed entry for `parts` (which must be everything `compute` reads, as
    reprs of plain values and frozen dataclasses: an estimator request, say), computing
    and keeping it on a miss. No catalog version in the key: an edit that changes an
    input changes the key, and one that does not leaves the entry good."""
    found = lookup_many(namespace, [parts])
    if 0 in found:
        return found[0]  # type: ignore[return-value]
    value = compute()
    store_many(namespace, [(parts, value)])
    return value


def lookup_many(namespace: str, parts: list[tuple[object, ...]]) -> dict[int, object]:
    """The content-keyed entries found, by position in `parts` (one cache round trip)."""
    keys = [_content_key(namespace, p) for p in parts]
    try:
        found = cache.get_many(keys)
    except Exception:
        logger.warning("sizing cache unreachable: computing without it", exc_info=True)
        return {}
    return {i: found[key] for i, key in enumerate(keys) if key in found}


def store_many(namespace: str, entries: list[tuple[tuple[object, ...], object]]) -> None:
    """Keep content-keyed entries ((parts, value) pairs)."""
    if not entries:
        return
    try:
        cache.set_many({_content_key(namespace, p): v for p, v in entries}, timeout=TIMEOUT_S)
    except Exception:
        logger.warning("sizing cache unreachable: results not kept", exc_info=True)
