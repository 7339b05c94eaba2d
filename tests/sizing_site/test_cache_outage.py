"""A Redis that cannot be reached costs the sizing pages their speed, not the page: the
sizing cache computes without it and the {% cache %} fragments render without it. The API
answers too: its throttles, failed-token counts and work budget count in local memory
meanwhile (sizing_site.core.counters); they once read the cache and answered 500."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.core.cache import cache, caches
from django.test import override_settings
from django.urls import reverse
from django.utils import translation
from rest_framework.throttling import SimpleRateThrottle

from catalog.models import QuantFormat
from sizing_site.core.counters import COUNTERS
from sizing_site.tokens.services import token_create
from tests.configurator.test_views import GlmOnA100

# Nothing listens on port 1: every cache call fails with a connection error.
UNREACHABLE = "redis://127.0.0.1:1/0"
DOWN = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": UNREACHABLE},
    "fragments": {
        "BACKEND": "sizing_site.core.fragment_cache.ForgivingRedisCache",
        "LOCATION": UNREACHABLE,
    },
}


class CacheOutage(GlmOnA100):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        for name, bits, rank in (("Q8_0", 8.5, 90), ("Q4_K_M", 4.5, 70)):
            QuantFormat.objects.create(
                name=name, slug=name.lower(), family="gguf", bits_per_weight=bits, quality_rank=rank
            )

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def test_the_configurator_and_the_explore_pages_answer_without_redis(self) -> None:
        configure = reverse("configurator:configure", args=[self.model.slug, self.card.slug])
        with override_settings(CACHES=DOWN), self.assertLogs("catalog.sizing.cache", "WARNING"):
            page = self.client.get(configure, {"quant": "Q4_K_M", "ctx": "8192"})
            assert page.status_code == 200
            assert "Quantization matrix" in page.content.decode()  # the cached sections too
            part = self.client.get(configure, {"quant": "Q4_K_M"}, headers={"HX-Request": "true"})
            assert part.status_code == 200
            explore = self.client.get(reverse("explore:model-gpus", args=[self.model.slug]))
            assert explore.status_code == 200


class ApiCacheOutage(GlmOnA100):
    @pytest.fixture(autouse=True)
    def _shared_cache(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # The suite gives each test counters of its own (tests/conftest.py); here they are
        # the real default cache again, which override_settings points at a dead Redis.
        monkeypatch.setattr(COUNTERS, "shared", lambda: caches["default"])
        monkeypatch.setattr(SimpleRateThrottle, "cache", cache)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def test_the_api_answers_200_without_redis_and_still_throttles_in_local_memory(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        auth = {"Authorization": f"Bearer {plain}"}
        estimate = {"model": self.model.slug, "accelerator": self.card.slug}
        with override_settings(CACHES=DOWN), self.assertLogs("sizing_site.core.counters"):
            listed = self.client.get("/api/v1/catalog/models/", headers=auth)
            assert listed.status_code == 200, listed.content[:200]
            sized = self.client.post(
                "/api/v1/estimate/", json.dumps(estimate), "application/json", headers=auth
            )
            assert sized.status_code == 200, sized.content[:200]
            self.client.force_login(self.bob)
            assert self.client.get("/api/v1/catalog/engines/").status_code == 200
            bad = self.client.get("/api/v1/catalog/models/", headers={"Authorization": "Bearer x"})
            assert bad.status_code == 401
            # The limits hold meanwhile, counted in this process's memory.
            rates = {"user": "600/min", "token": "3/min"}
            with override_settings(
                REST_FRAMEWORK={**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
            ):
                codes = [
                    self.client.get("/api/v1/catalog/engines/", headers=auth).status_code
                    for _ in range(4)
                ]
        assert codes[-1] == 429
