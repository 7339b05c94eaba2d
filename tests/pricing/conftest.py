from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from tests.pricing.fakeprovider import FakeProvider, fake_provider


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    """A local provider on 127.0.0.1, which the outbound policy refuses unless allowed:
    these tests are about the fetchers, so the fixture allows it (the policy's own tests
    in test_outbound.py use `fake_provider()` without this allowance)."""
    with fake_provider() as provider, override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"]):
        yield provider
