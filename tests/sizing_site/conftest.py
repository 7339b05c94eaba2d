from __future__ import annotations

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    # The cache may be a shared Redis; start every test from a clean slate.
    cache.clear()
