"""Search: partial and misspelt names, "MODEL on GPU" questions that open the configurator,
suggestions that overlay the page, and a query count that does not grow with the catalog."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator, LLMModel
from catalog.sizing.cache import bump_catalog_version
from sizing_site.explore.search import search_catalog, tokens, word_score
from tests.explore.seeded import SeededCase


def test_words_match_whole_in_parts_by_prefix_run_together_or_misspelt() -> None:
    name = tokens("Qwen3-Coder 30B-A3B Instruct")
    assert name == ("qwen3", "coder", "30b", "a3b", "instruct")
    assert word_score("coder", name) == 1.0  # a whole word
    assert word_score("qwen", name) == 0.95  # "qwen3" split at the digit
    assert word_score("instr", name) == 0.9  # a prefix
    assert word_score("qwen3coder", name) == 0.75  # words run together
    # "codr": difflib ratio with "coder" = 2 x 4 / 9 = 0.889 >= 0.8 -> 0.7 x 0.889.
    assert word_score("codr", name) == pytest.approx(0.7 * 8 / 9)
    # Numbers never match approximately: a 4080 is not a 4090.
    assert word_score("4080", tokens("GeForce RTX 4090")) == 0.0
    assert tokens("GLM-4.5-Air") == ("glm", "4.5", "air")  # dotted numbers stay whole


class Search(SeededCase):
    def suggest(self, q: str) -> str:
        response = self.client.get(
            reverse("explore:search"), {"q": q}, headers={"HX-Request": "true"}
        )
        assert response.status_code == 200
        text = response.content.decode().strip()
        # An overlay under the search box, not a block that pushes the page down.
        assert text.startswith('<div id="suggestions" class="suggestions-pop"')
        return text

    def test_glm_air_finds_glm_4_5_air_first(self) -> None:
        results = search_catalog("glm air")
        assert [m.slug for m in results.models][:1] == ["glm-4-5-air"]
        assert 'href="/en/models/glm-4-5-air/gpus/">GLM-4.5-Air</a>' in self.suggest("glm air")

    def test_codestral_is_found_although_it_has_no_config_yet(self) -> None:
        assert LLMModel.objects.get(slug="codestral-22b-v0-1").config == {}
        for q in ("codestral", "codstral", "Codestral 22B"):
            text = self.suggest(q)
            assert "Nothing matches" not in text, q
            # No config.json: it cannot be sized, so the link goes to its catalog page.
            assert 'href="/en/models/codestral-22b-v0-1/">Codestral 22B v0.1</a>' in text, q

    def test_model_on_gpu_opens_the_configurator(self) -> None:
        cases = {
            "llama 70b 4090": ("llama-3-1-70b", "nvidia-geforce-rtx-4090", ""),
            "llama 70b on 4090": ("llama-3-1-70b", "nvidia-geforce-rtx-4090", ""),
            "qwen3 32b on 5090": ("qwen3-32b", "nvidia-geforce-rtx-5090", ""),
            "qwen3 32b 5090": ("qwen3-32b", "nvidia-geforce-rtx-5090", ""),
            "gpt-oss-120b on 2x h100": ("gpt-oss-120b", "nvidia-h100-sxm5-80gb", "?gpus=2"),
            # the word for "on" in the portal's other languages
            "qwen3 32b auf 5090": ("qwen3-32b", "nvidia-geforce-rtx-5090", ""),
            "qwen3 32b su 5090": ("qwen3-32b", "nvidia-geforce-rtx-5090", ""),
            "qwen3 32b 在 5090": ("qwen3-32b", "nvidia-geforce-rtx-5090", ""),
        }
        for q, (model, card, query) in cases.items():
            response = self.client.get(reverse("explore:search"), {"q": q})
            assert response.status_code == 302, q
            expected = reverse("configurator:configure", args=[model, card]) + query
            assert response["Location"] == expected, q

    def test_the_suggestions_offer_the_pair_and_its_alternatives(self) -> None:
        text = self.suggest("llama 70b 4090")
        configure = reverse(
            "configurator:configure", args=["llama-3-1-70b", "nvidia-geforce-rtx-4090"]
        )
        assert f'href="{configure}?gpus=1">Llama 3.1 70B on GeForce RTX 4090</a>' in text
        other = reverse(
            "configurator:configure", args=["llama-3-3-70b-instruct", "nvidia-geforce-rtx-4090"]
        )
        assert other in text  # the other 70B Llamas are offered too
        # And the model and the card alone.
        assert 'href="/en/models/llama-3-1-70b/gpus/"' in text
        assert 'href="/en/gpus/nvidia-geforce-rtx-4090/"' in text

    def test_a_single_name_is_not_read_as_a_pair(self) -> None:
        # "nvidia 4090" names one card; NVIDIA's NVFP4 models must not make it a pair.
        response = self.client.get(reverse("explore:search"), {"q": "nvidia 4090"})
        assert response.status_code == 200
        results = search_catalog("nvidia 4090")
        assert results.pairs == [] and results.cards[0].slug == "nvidia-geforce-rtx-4090"
        assert search_catalog("4090").cards[0].slug == "nvidia-geforce-rtx-4090"

    def test_nothing_matches_says_so_and_the_page_links_onward(self) -> None:
        assert "Nothing matches" in self.suggest("zzzz qqqq")
        page = self.client.get(reverse("explore:search"), {"q": "glm air"}).content.decode()
        assert reverse("explore:compare") in page
        assert "explore/search.js" in page  # keyboard support for the overlay
        assert reverse("catalog:model-list") in page

    def test_the_home_page_search_box_has_the_overlay(self) -> None:
        page = self.client.get(reverse("home")).content.decode()
        assert '<div id="suggestions" class="suggestions-pop" hidden></div>' in page
        assert 'aria-controls="suggestions"' in page
        assert "explore/search.js" in page


@pytest.mark.django_db
def test_search_reads_as_few_queries_for_1000_cards_as_for_10(
    client: Client, django_user_model: Any, django_assert_max_num_queries: Any
) -> None:
    translation.activate("en")
    client.force_login(django_user_model.objects.create_user("viewer", password="x"))

    def add(n: int) -> None:
        start = Accelerator.objects.count()
        Accelerator.objects.bulk_create(
            Accelerator(
                vendor="NVIDIA",
                name=f"Card {i}",
                slug=f"card-{i}",
                aliases=[f"C{i}"],
                memory_gb=24,
                bandwidth_gbps=900,
            )
            for i in range(start, start + n)
        )
        LLMModel.objects.bulk_create(
            # Odd models have a config (sizeable: a pair), even ones none.
            LLMModel(name=f"Model {i}", slug=f"model-{i}", config={"n": i} if i % 2 else {})
            for i in range(start, start + n)
        )
        bump_catalog_version()

    url = reverse("explore:search") + "?q=model+7+on+card+3"
    add(10)
    # Session, user, memberships, then the index: models, cards (cold).
    with django_assert_max_num_queries(5):
        assert client.get(url, headers={"HX-Request": "true"}).status_code == 200
    add(990)
    with django_assert_max_num_queries(5):
        text = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert reverse("configurator:configure", args=["model-7", "card-3"]) in text
    # Model 8 has no config: no pair, but each half is still found.
    text = client.get(url.replace("7", "8"), headers={"HX-Request": "true"}).content.decode()
    assert 'href="/en/models/model-8/">Model 8</a>' in text
    assert 'href="/en/gpus/card-3/">NVIDIA Card 3</a>' in text
    # Warm: the index comes from the cache; only the session, user and memberships.
    with django_assert_max_num_queries(3):
        assert client.get(url, headers={"HX-Request": "true"}).status_code == 200
