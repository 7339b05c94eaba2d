from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pricing.fakeprovider import FakeProvider, fake_provider


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with fake_provider() as provider:
        yield provider
