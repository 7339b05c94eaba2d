"""Suite-wide fixtures."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.utils import translation
from huggingface_hub import constants as hf_constants
from pytest_django.fixtures import Settings
from rest_framework.throttling import SimpleRateThrottle

from catalog.sizing.cache import bump_catalog_version
from sizing_site.core.counters import COUNTERS
from tests.fakehub import FakeHub, running

# Tests hash passwords with MD5: the production PBKDF2 hasher costs ~0.23 s a hash on the
# 2-core CI machine, and every test class creates its users afresh. Tests of the real
# hasher (tests/sizing_site/test_login_throttle.py, test_shell.py) check passwords, not
# the algorithm; production settings keep Django's default hashers.
TEST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_configure(config: pytest.Config) -> None:
    """Suite-wide settings that hold before any test database or fixture exists."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = TEST_PASSWORD_HASHERS


# --- Parallel runs (pytest-xdist: `make pytest` runs `-n auto --dist loadfile`) ----------
# Each worker is a process with its own test database (pytest-django names it
# test_<name>_gw0, test_<name>_gw1, ...) and its own Redis database: the cache's
# `clear()` is a FLUSHDB and every test bumps the sizing cache's catalog version, so on a
# shared one a worker would wipe another's warmed entries and catalog version, and the
# task a test queued for the Celery worker process it is still starting (which then never
# receives it).
REDIS_DATABASES = 16  # Redis's default `databases`


def worker_redis_url(url: str, index: int) -> str:
    """REDIS_URL for xdist worker number `index` (gw0 is 0): the database after the
    caller's, one per worker, so a parallel run leaves the caller's own database alone.
    redis://127.0.0.1:6379/0 gives gw0 .../1 and gw1 .../2."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    number = base + 1 + index
    if number >= REDIS_DATABASES:
        raise pytest.UsageError(
            f"REDIS_URL {url}: worker gw{index} would need Redis database {number}, past the "
            f"{REDIS_DATABASES} a Redis server has; run fewer workers (-n)"
        )
    return urlunsplit(parts._replace(path=f"/{number}"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: Sequence[Any]) -> None:
    """Give each worker its own REDIS_URL before it starts (execnet sets a spec's `env` in
    the new process before pytest, and so Django's settings, load there): its cache,
    its Celery broker and the Celery worker processes its tests start all use it."""
    url = os.environ.get("REDIS_URL")
    if url:
        for index, spec in enumerate(specs):
            spec.env["REDIS_URL"] = worker_redis_url(url, index)


# The browser tests' node ids start with this: their package-scoped server (with its
# freshly prepared database), browser and saved reports are built once, on one worker.
BROWSER_TESTS = "tests/browser/"
# Work units holding a test with one of these marks go out first: the longest ones
# (browser ~4 min, the schema fuzz, the hostile walks, the calibration refits, about a
# minute or two each), so no worker is left alone with one of them at the end.
SLOW_MARKS = ("browser", "fuzz", "slow")


def work_unit(nodeid: str) -> str:
    """The unit a worker takes whole: the test module, or the whole browser package."""
    module = nodeid.split("::", 1)[0]
    return BROWSER_TESTS if module.startswith(BROWSER_TESTS) else module


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` (what `make pytest` runs), with the browser tests as one unit:
    each worker takes whole test modules (a class's setUpTestData, a module's fixtures and
    the order of its tests stay as in a serial run). xdist's own `loadgroup` cannot group
    them on pytest 9.2: it renames an item through `_nodeid`, which pytest 9 no longer
    reads. The units go out in the order the workers collected them (slowest first, see
    pytest_collection_modifyitems), not xdist's largest-count first. tryfirst: the first
    scheduler a hook returns is the one used."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModuleScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return ModuleScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell the workers of a `--dist loadfile` run to collect the slowest units first."""
    if node.config.getvalue("dist") == "loadfile":
        node.workerinput["slowest_units_first"] = True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker of a parallel run, the collection is reordered unit by unit (the tests
    of a unit keep their order): units with a SLOW_MARKS test first, then the larger ones
    first (xdist's own order). trylast: after pytest-django and the browser package's
    conftest (which marks its tests `browser`) have ordered and marked them."""
    if not getattr(config, "workerinput", {}).get("slowest_units_first"):
        return
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)

    def slowest_first(unit: list[pytest.Item]) -> tuple[bool, int]:
        slow = any(item.get_closest_marker(mark) for item in unit for mark in SLOW_MARKS)
        return (not slow, -len(unit))

    items[:] = [item for unit in sorted(units.values(), key=slowest_first) for item in unit]


@pytest.fixture(autouse=True)
def _fresh_sizing_cache(settings: Settings) -> Iterator[None]:
    """Each test starts on a new catalog version (rows another test created under the same
    primary keys are gone, but the shared cache is not rolled back), and catalog edits queue
    no warm-up task (tests that want one call it)."""
    settings.SIZING_WARM_AFTER_EDIT = False
    # Performance is not asserted in tests: a cold sweep on a busy test machine may take
    # longer than production's time limit (tests of the limit set their own).
    settings.API_WORK_DEADLINE_S = 600
    bump_catalog_version()
    yield


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts, and leaves, in the default language: a request to a page in
    another language leaves that language active in the thread (LocaleMiddleware
    activates it), and a later test's English messages would come out in it."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_throttle_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API throttles, the failed-token counts and the work budget count per user,
    token and address in the cache (sizing_site.core.counters), which no test rolls back
    while user and token keys are reused: each test counts in a cache of its own, so one
    test's requests never throttle the next."""
    fresh = LocMemCache(f"throttle-{uuid.uuid4()}", {})  # LocMemCache shares by name
    monkeypatch.setattr(SimpleRateThrottle, "cache", fresh)
    monkeypatch.setattr(COUNTERS, "shared", lambda: fresh)
    monkeypatch.setattr(COUNTERS, "local", LocMemCache(f"fallback-{uuid.uuid4()}", {}))


@pytest.fixture(autouse=True)
def _no_real_hub(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches huggingface.co: the Hub is a closed local port (an import fails at
    once, "could not reach") unless the test starts the fake Hub, and no developer's
    token is sent anywhere."""
    settings.HF_ENDPOINT = "http://127.0.0.1:9"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)


@pytest.fixture
def fake_hub(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake Hugging Face Hub on 127.0.0.1 (tests/fakehub.py) that catalog.hub reads;
    the test adds its repositories to `.repos`. HF_HUB_OFFLINE in the caller's environment
    would refuse every call, even to this one."""
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    with running(FakeHub()) as hub:
        settings.HF_ENDPOINT = hub.endpoint
        yield hub
