"""Suite-wide fixtures."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.core.cache.backends.locmem import LocMemCache
from pytest_django.fixtures import Settings
from rest_framework.throttling import SimpleRateThrottle

from catalog.sizing.cache import bump_catalog_version


@pytest.fixture(autouse=True)
def _fresh_sizing_cache(settings: Settings) -> Iterator[None]:
    """Each test starts on a new catalog version (rows another test created under the same
    primary keys are gone, but the shared cache is not rolled back), and catalog edits queue
    no warm-up task (tests that want one call it)."""
    settings.SIZING_WARM_AFTER_EDIT = False
    bump_catalog_version()
    yield


@pytest.fixture(autouse=True)
def _fresh_throttle_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API throttles count requests per user and per token in the cache, which no test
    rolls back while user and token keys are reused: each test counts in a cache of its
    own, so one test's requests never throttle the next."""
    fresh = LocMemCache(f"throttle-{uuid.uuid4()}", {})  # LocMemCache shares by name
    monkeypatch.setattr(SimpleRateThrottle, "cache", fresh)
