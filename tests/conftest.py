"""Suite-wide fixtures."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.core.cache.backends.locmem import LocMemCache
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
