"""The shared sizing cache: results keyed by the catalog version, which every catalog edit
bumps, so an admin's edit shows on the next request."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from catalog.models import Accelerator
from catalog.signals import catalog_changed
from catalog.sizing.cache import (
    VERSION_KEY,
    bump_catalog_version,
    catalog_version,
    key_for,
    remembered,
)
from catalog.tasks import PENDING_KEY, schedule_warm_up


def _counting() -> tuple[list[int], object]:
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 42

    return calls, compute


def test_remembered_computes_once_per_version() -> None:
    calls, compute = _counting()
    assert remembered("test", ("a", 1), compute) == 42  # type: ignore[arg-type]
    assert remembered("test", ("a", 1), compute) == 42  # type: ignore[arg-type]
    assert len(calls) == 1
    remembered("test", ("a", 2), compute)  # type: ignore[arg-type]  # other parts: other key
    assert len(calls) == 2
    bump_catalog_version()
    remembered("test", ("a", 1), compute)  # type: ignore[arg-type]
    assert len(calls) == 3


def test_the_key_carries_the_version_and_a_digest_of_the_parts() -> None:
    version = catalog_version()
    key = key_for("sweep", (1, "Q4_K_M", 8192))
    assert key.startswith(f"sizing:sweep:v{version}:")
    assert key == key_for("sweep", (1, "Q4_K_M", 8192))
    assert key != key_for("sweep", (1, "Q4_K_M", 8193))
    assert bump_catalog_version() == version + 1


def test_a_lost_version_restarts_from_the_clock_never_from_an_old_number() -> None:
    old = catalog_version()
    cache.delete(VERSION_KEY)  # Redis restarted or evicted the key
    assert catalog_version() > old  # microseconds since 1970 exceed any bump count


@pytest.mark.django_db
def test_every_catalog_save_and_delete_bumps_the_version() -> None:
    before = catalog_version()
    card = Accelerator.objects.create(
        vendor="NVIDIA", name="Cache Card", slug="cache-card", memory_gb=24
    )
    after_save = catalog_version()
    assert after_save > before
    card.delete()
    assert catalog_version() > after_save


@pytest.mark.django_db
def test_an_edit_is_visible_on_the_next_request() -> None:
    card = Accelerator.objects.create(
        vendor="NVIDIA", name="Cache Card", slug="cache-card", memory_gb=24
    )

    def memory() -> float | None:
        return Accelerator.objects.get(pk=card.pk).memory_gb

    assert remembered("memory", (card.pk,), memory) == 24
    card.memory_gb = 48
    card.save()
    assert remembered("memory", (card.pk,), memory) == 48


@pytest.mark.django_db(transaction=True)
def test_the_version_moves_again_when_the_edit_commits(settings: object) -> None:
    from django.db import transaction

    with transaction.atomic():
        catalog_changed()
        inside = catalog_version()
    assert catalog_version() == inside + 1  # on_commit: what was cached mid-transaction is gone


def test_warm_ups_in_a_burst_share_one_task() -> None:
    cache.set(PENDING_KEY, 1)  # one is already queued
    try:
        assert schedule_warm_up() is True  # nothing new is queued
    finally:
        cache.delete(PENDING_KEY)
