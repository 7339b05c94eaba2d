"""A Redis that cannot be reached costs the sizing pages their speed, not the page: the
sizing cache computes without it and the {% cache %} fragments render without it."""

from __future__ import annotations

from django.test import override_settings
from django.urls import reverse
from django.utils import translation

from catalog.models import QuantFormat
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
