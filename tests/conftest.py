"""Suite-wide fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_django.fixtures import Settings

from catalog.sizing.cache import bump_catalog_version


@pytest.fixture(autouse=True)
def _fresh_sizing_cache(settings: Settings) -> Iterator[None]:
    """Each test starts on a new catalog version (rows another test created under the same
    primary keys are gone, but the shared cache is not rolled back), and catalog edits queue
    no warm-up task (tests that want one call it)."""
    settings.SIZING_WARM_AFTER_EDIT = False
    bump_catalog_version()
    yield
