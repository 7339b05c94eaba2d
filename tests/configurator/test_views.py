"""The configurator page: login, HTMX partials, the estimator's numbers, bad parameters,
flat query counts, four languages."""

from __future__ import annotations

import re
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator, LLMModel, ModelWeights, Segment
from catalog.signals import catalog_changed
from estimator.api import estimate, result_to_dict
from estimator.units import GIB
from estimator.validate import rebuilt_config
from tests.cast import CastTestCase

GLM_AIR = rebuilt_config("GLM-4.5-Air")


def a100() -> dict[str, Any]:
    # The A100 80GB PCIe of catalog/data/accelerators.json: 80 GiB of HBM2e (no driver
    # total published, so 80 x 2^30 bytes), 1,935 GB/s, 312 FP16 TFLOPS, Ampere: llama.cpp
    # runs on it through CUDA (engine_support.json).
    return {
        "vendor": "NVIDIA",
        "name": "A100 80GB PCIe",
        "slug": "nvidia-a100-80gb-pcie",
        "memory_gb": 80,
        "memory_gib": 80,
        "memory_type": "HBM2e",
        "architecture": "Ampere",
        "bandwidth_gbps": 1935,
        "fp16_tflops": 312,
        "segment": Segment.DATACENTER,
        "curated": True,
    }


def add_cards(n: int, start: int = 0) -> None:
    Accelerator.objects.bulk_create(
        Accelerator(
            vendor="NVIDIA" if i % 2 else "Apple",
            architecture="Ampere" if i % 2 else "Apple M2",
            name=f"Card {i}",
            slug=f"card-{i}",
            memory_gb=16 + i,
            bandwidth_gbps=500 + i,
            memory_kind="unified" if i % 2 == 0 else "discrete",
            curated=i % 3 == 0,
            price_usd=1000 + i,
        )
        for i in range(start, start + n)
    )
    catalog_changed()  # what the catalog's bulk writers call: a new catalog version


class GlmOnA100(CastTestCase):
    """The cast, GLM-4.5-Air (its real config) and an A100 80GB PCIe: the configurator's
    test pair."""

    model: LLMModel
    card: Accelerator

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.model = LLMModel.objects.create(
            name="GLM-4.5-Air", slug="glm-4-5-air", hf_repo="zai-org/GLM-4.5-Air", config=GLM_AIR
        )
        cls.card = Accelerator.objects.create(**a100())


class ConfiguratorPage(GlmOnA100):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def url(
        self, lang: str = "en", model: str = "glm-4-5-air", card: str = "nvidia-a100-80gb-pcie"
    ) -> str:
        with translation.override(lang):
            return reverse("configurator:configure", args=[model, card])

    def expected(
        self,
        ctx: int,
        quant: str = "Q4_K_M",
        device: dict[str, Any] | None = None,
        workload: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The page's request built by hand; `device`/`workload` add fields."""
        return estimate(
            {
                "model": {"hf_config": GLM_AIR},
                "weights": {"format": "gguf", "quant": quant},
                "device": {
                    # 80 GiB as built, in the estimator's decimal GB: 85.899 GB.
                    "memory_gb": 80 * 2**30 / 1e9,
                    "bandwidth_gbps": 1935,
                    "fp16_tflops": 312,
                    "vendor": "nvidia",
                    "name": "A100 80GB PCIe",
                    "device_class": "datacenter",
                    "memory_kind": "discrete",
                    **(device or {}),
                },
                "engine": {"name": "llama.cpp"},
                "workload": {"context_tokens": ctx, **(workload or {})},
            }
        )

    def test_it_requires_login(self) -> None:
        self.client.logout()
        response = self.client.get(self.url())
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]

    def test_the_url_lives_under_the_language_prefix(self) -> None:
        assert self.url("it") == "/it/models/glm-4-5-air/on/nvidia-a100-80gb-pcie/"

    def test_the_full_page_is_a_document_and_htmx_gets_only_the_results(self) -> None:
        full = self.client.get(self.url(), {"quant": "Q4_K_M"})
        assert full.status_code == 200
        assert b"<html" in full.content and b'id="analysis"' in full.content
        partial = self.client.get(self.url(), {"quant": "Q4_K_M"}, HTTP_HX_REQUEST="true")
        body = partial.content.decode()
        assert partial.status_code == 200
        assert "<html" not in body and body.lstrip().startswith('<div id="results"')
        # the slower sections load after, from their own partial with a real link beside
        assert 'hx-get="/en/models/glm-4-5-air/on/nvidia-a100-80gb-pcie/?' in body
        assert "part=analysis" in body
        analysis = self.client.get(
            self.url(), {"quant": "Q4_K_M", "part": "analysis"}, HTTP_HX_REQUEST="true"
        ).content.decode()
        assert analysis.lstrip().startswith('<div id="analysis"') and "<html" not in analysis

    def test_the_form_changes_the_results_in_place_and_works_without_javascript(self) -> None:
        body = self.client.get(self.url()).content.decode()
        assert 'action="/en/models/glm-4-5-air/on/nvidia-a100-80gb-pcie/"' in body
        assert 'method="get"' in body
        assert 'hx-trigger="change"' in body and 'hx-push-url="true"' in body
        for name in ("quant", "ctx", "gpus", "seqs", "kv", "engine", "offload", "prompt", "output"):
            assert f'name="{name}"' in body and f'<label for="id_{name}"' in body

    def test_the_numbers_match_the_estimator_at_8k(self) -> None:
        response = self.client.get(self.url(), {"quant": "Q4_K_M", "ctx": "8192"})
        result = result_to_dict(response.context["result"])
        expected = self.expected(8192)
        for key in ("kv_cache_bytes", "weights_bytes", "per_device_bytes", "max_context_tokens"):
            assert result[key] == expected[key], key
        assert result["decode_tokens_per_s"] == expected["decode_tokens_per_s"]
        # 46 layers x 2 x 8 KV heads x 128 x 2 B x 8,192 tokens = 1,543,503,872 B = 1.4375 GiB
        assert result["kv_cache_bytes"] == 46 * 2 * 8 * 128 * 2 * 8192 == int(1.4375 * GIB)
        body = response.content.decode()
        assert '<td class="num">1.44</td>' in body  # the KV row of the memory table, in GiB
        decode = f"{expected['decode_tokens_per_s']['estimate']:.1f}"
        assert f"<strong>{decode}</strong>" in body

    def test_moe_experts_in_host_memory_at_the_hosts_bandwidth(self) -> None:
        query = {"quant": "Q8_0", "ctx": "8192", "moe": "on", "host_bw": "204.8"}
        response = self.client.get(self.url(), query)
        assert response.status_code == 200
        result = result_to_dict(response.context["result"])
        body = self.expected(8192, "Q8_0")  # the same request without offload
        expected = self.expected(
            8192,
            "Q8_0",
            # 8 channels of DDR5-3200: 8 x 25.6 GB/s
            device={"host_bandwidth_gbps": 204.8},
            workload={"offload": {"moe_experts": True}},
        )
        assert body["offloaded_bytes"] == 0 < expected["offloaded_bytes"]
        assert result["offloaded_bytes"] == expected["offloaded_bytes"]
        assert result["decode_tokens_per_s"] == expected["decode_tokens_per_s"]
        html = response.content.decode()
        assert "--cpu-moe" in html and "at 204.8 GB/s" in html
        # Half the host bandwidth, slower decode: the experts stream over the host's bus.
        slow = result_to_dict(
            self.client.get(self.url(), {**query, "host_bw": "102.4"}).context["result"]
        )
        assert slow["decode_tokens_per_s"]["estimate"] < result["decode_tokens_per_s"]["estimate"]
        bad = self.client.get(self.url(), {**query, "host_bw": "abc"})
        assert bad.status_code == 400 and "host_bw" in bad.context["form"].errors

    def test_the_numbers_match_the_estimator_at_32k(self) -> None:
        response = self.client.get(self.url(), {"quant": "Q4_K_M", "ctx": "32768"})
        expected = self.expected(32768)
        result = result_to_dict(response.context["result"])
        # 4 x the 8K cache: 5.75 GiB
        assert result["kv_cache_bytes"] == expected["kv_cache_bytes"] == int(5.75 * GIB)
        assert result["fit"] == expected["fit"]
        assert '<td class="num">5.75</td>' in response.content.decode()

    def test_the_usable_memory_of_all_gpus_is_each_ones_times_the_count(self) -> None:
        response = self.client.get(self.url(), {"quant": "Q4_K_M", "ctx": "8192", "gpus": "2"})
        per_device = self.expected(8192, device={"count": 2})["usable_bytes_per_device"]
        assert response.context["result"].usable_bytes_per_device == per_device
        # The memory table's last row: both A100s' usable bytes, in GiB and in GB.
        both = 2 * per_device
        row = (
            f'<tr><th>Usable on all GPUs</th><td class="num">{both / GIB:.2f}</td>'
            f'<td class="num">{both / 1e9:.2f}</td></tr>'
        )
        assert row in response.content.decode()

    def test_the_default_quant_is_the_least_compressed_that_fits(self) -> None:
        response = self.client.get(self.url())
        # 80 GiB (85.9 GB) at 8K: Q5_K_M is the first rung of the ladder that fits. (With
        # the card read as 80 x 10^9 bytes, the old unit slip, it was Q5_K_S.)
        assert response.context["setup"].quant == "Q5_K_M"
        assert response.context["setup"].context_tokens == 8192

    def test_the_page_shows_the_quant_it_sized_and_keeps_what_was_sent(self) -> None:
        response = self.client.get(self.url(), {"ctx": "8192"})
        body = response.content.decode()
        # "Best that fits" stays the selected choice and names the quant the page chose, so
        # the next change (a longer context) sizes the best that fits again...
        assert '<option value="" selected>Best that fits (Q5_K_M)</option>' in body
        assert '<option value="Q5_K_M" selected>' not in body
        assert "quant=Q5_K_M" in response.context["page_url"]
        # ...while the form still holds what the visitor sent: "best that fits".
        form = response.context["form"]
        assert "quant" not in form.data and form.cleaned_data["quant"] == ""
        chosen = self.client.get(self.url(), {"ctx": "8192", "quant": "Q4_K_M"})
        assert '<option value="Q4_K_M" selected>' in chosen.content.decode()
        assert '<option value="Q5_K_M" selected>' not in chosen.content.decode()

    def test_best_that_fits_stays_on_through_a_context_change(self) -> None:
        # What the browser sends after the first answer: the select still says "best that
        # fits" (quant empty), so a longer context is sized afresh instead of pinned.
        short = self.client.get(self.url(), {"ctx": "8192", "quant": ""}, HTTP_HX_REQUEST="true")
        long = self.client.get(self.url(), {"ctx": "131072", "quant": ""}, HTTP_HX_REQUEST="true")
        assert short.context["setup"].quant == "Q5_K_M"
        assert long.context["setup"].quant != "Q5_K_M"
        assert long.context["result"].fit.verdict != "does_not_fit"
        assert '<option value="" selected>Best that fits' in long.content.decode()

    def test_when_nothing_fits_the_page_sizes_the_nearest_miss(self) -> None:
        # GLM-4.5-Air (106B parameters) on a 40 GiB card with vLLM: bf16 needs ~200 GiB,
        # a 4-bit checkpoint ~55 GiB; none fits, and the answer is the 4-bit one (the least
        # short), not the engine's bf16 fallback.
        small = Accelerator.objects.create(
            **{**a100(), "slug": "a100-40", "memory_gb": 40, "memory_gib": 40}
        )
        url = reverse("configurator:configure", args=[self.model.slug, small.slug])
        response = self.client.get(url, {"engine": "vllm", "ctx": "8192"})
        setup, result = response.context["setup"], response.context["result"]
        assert result.fit.verdict == "does_not_fit"
        assert setup.quant in ("awq-int4", "gptq-int4", "nvfp4", "mxfp4")
        bf16 = self.client.get(url, {"engine": "vllm", "ctx": "8192", "quant": "bf16"})
        assert result.per_device_bytes < bf16.context["result"].per_device_bytes / 3

    def test_an_engine_switch_never_traps_the_page_on_its_kv_type(self) -> None:
        # vLLM with a q8_0 cache (what llama.cpp had): vLLM has none, so the page answers
        # with its default f16 and says so, and the KV select offers vLLM's types only.
        response = self.client.get(self.url(), {"engine": "vllm", "kv": "q8_0", "ctx": "8192"})
        assert response.status_code == 200
        assert response.context["setup"].kv == "f16"
        body = response.content.decode()
        assert "vLLM has no q8_0 KV cache: showing f16 instead." in body
        select = str(response.context["form"]["kv"])
        assert '<option value="fp8"' in select and '<option value="q8_0"' not in select
        # Back on llama.cpp, q8_0 is offered and kept.
        back = self.client.get(self.url(), {"engine": "llama.cpp", "kv": "q8_0", "ctx": "8192"})
        assert back.context["setup"].kv == "q8_0"
        assert "KV cache:" not in back.context["form"].kv_note

    def test_bad_parameters_give_a_form_error_not_a_500(self) -> None:
        cases = {
            "ctx=-5": "ctx",
            "quant=Q9_X": "quant",
            "gpus=0": "gpus",
            "ctx=999999": "ctx",
            "kv=zz": "kv",
            "kv=zz8": "kv",
            "prompt=9000&output=9000": "prompt",
            "offload=150": "offload",
            "seqs=abc": "seqs",
        }
        for query, field in cases.items():
            response = self.client.get(f"{self.url()}?{query}")
            assert response.status_code == 400, query
            assert field in response.context["form"].errors, query
            assert 'class="card error-summary"' in response.content.decode(), query
            htmx = self.client.get(f"{self.url()}?{query}", HTTP_HX_REQUEST="true")
            assert htmx.status_code == 400 and "<html" not in htmx.content.decode()

    def test_the_context_error_names_the_models_maximum(self) -> None:
        response = self.client.get(self.url(), {"ctx": 200000})
        assert "131072" in " ".join(response.context["form"].errors["ctx"])

    def test_unknown_slugs_are_404(self) -> None:
        assert self.client.get(self.url(model="nope")).status_code == 404
        assert self.client.get(self.url(card="nope")).status_code == 404

    def test_a_model_without_config_gets_a_message(self) -> None:
        LLMModel.objects.create(name="Bare", slug="bare")
        response = self.client.get(self.url(model="bare"))
        assert response.status_code == 200
        assert "no usable config.json" in response.content.decode()

    def _queries(self, **params: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert self.client.get(self.url(), params).status_code == 200
        return len(ctx.captured_queries)

    def test_query_counts_stay_flat_as_the_catalog_grows(self) -> None:
        add_cards(10)
        few = self._queries(quant="Q4_K_M")  # cold: the sizing reads its rows
        warm = self._queries(quant="Q4_K_M")  # again: figures from the shared sizing cache
        assert warm < few
        add_cards(90, start=10)  # a catalog write: a new catalog version, cold again
        assert self._queries(quant="Q4_K_M") == few
        assert self._queries(quant="Q4_K_M") == warm

    def test_every_section_is_on_the_full_page(self) -> None:
        add_cards(6)
        # No GGUF download recorded: llama.cpp says so in words, never a made-up file.
        query = {"quant": "Q4_K_M", "ctx": "8192"}
        body = self.client.get(self.url(), query).content.decode()
        assert "llama-server" not in body
        assert "No Q4_K_M GGUF download of zai-org/GLM-4.5-Air is recorded" in body
        # The seed page's own repository (unsloth/GLM-4.5-Air-GGUF:Q4_K_M).
        ModelWeights.objects.create(
            model=self.model, format="gguf", quant="Q4_K_M", repo="unsloth/GLM-4.5-Air-GGUF"
        )
        response = self.client.get(self.url(), query)
        body = response.content.decode()
        assert "-hf unsloth/GLM-4.5-Air-GGUF:Q4_K_M" in body
        for text in (
            "Fits",
            "Weights on the GPUs",
            "Token speed simulator",
            "llama-server",
            "OLLAMA_CONTEXT_LENGTH=8192",
            # A GGUF page: the HF-checkpoint engines say why they are not for it.
            "not for this configuration",
            "How this was computed",
            "Recommendations",
            "Cheapest cloud offer",
            "Offers that fit the configuration",
            "Rent or buy",
            "KV cache tuning",
            "Fine-tuning memory",
            "Quantization matrix",
            "Memory by context",
            "<svg",
            "Can the A100 80GB PCIe run GLM-4.5-Air?",
            "How much VRAM at 32K?",
        ):
            assert text in body, text
        chart = response.context["memory_by_context"]
        # 4K, 8K, ..., 128K = 131,072, the model's maximum
        assert [b.context_tokens for b in chart] == [4096, 8192, 16384, 32768, 65536, 131072]

    def test_a_configuration_that_does_not_fit_gets_a_plan(self) -> None:
        response = self.client.get(self.url(), {"quant": "Q8_0", "ctx": "8192"})
        assert response.context["result"].fit.verdict == "does_not_fit"
        plan = response.context["plan"]
        assert plan and plan[0].fits
        assert "Make it fit" in response.content.decode()

    def test_it_renders_in_all_four_languages_with_localized_numbers(self) -> None:
        for lang, decimal in (("en", "1.44"), ("de", "1,44"), ("it", "1,44"), ("zh-hans", "1.44")):
            response = self.client.get(self.url(lang), {"quant": "Q4_K_M", "ctx": "8192"})
            body = response.content.decode()
            assert response.status_code == 200, lang
            assert f'<html lang="{lang}"' in body, lang
            assert f'<td class="num">{decimal}</td>' in body, lang
        german = self.client.get(self.url("de"), {"quant": "Q4_K_M", "ctx": "8192"})
        # SVG widths and data attributes stay machine-readable in every language
        assert re.search(
            r'<rect class="seg seg-weights" x="0\.0" y="0" width="\d+\.\d+"',
            body_de := german.content.decode(),
        )
        assert 'style="' not in body_de
        assert "," not in german.content.decode().split('data-tokens-per-s="')[1].split('"')[0]


class UploaderRecipes(GlmOnA100):
    def test_a_bartowski_recipe_is_sized_not_refused(self) -> None:
        self.client.force_login(self.bob)
        url = reverse("configurator:configure", args=[self.model.slug, self.card.slug])
        base = self.client.get(url, {"quant": "Q4_K_M", "ctx": "8192"})
        recipe = self.client.get(url, {"quant": "Q4_K_L", "ctx": "8192"})
        assert base.status_code == recipe.status_code == 200
        # Q8_0 embeddings and output instead of Q4_K / Q6_K: GLM-4.5-Air's 151,552 x 4,096
        # token_embd and output grow by 620,756,992 x (34/32 - 144/256) and
        # 620,756,992 x (34/32 - 210/256) bytes: 310,378,496 + 150,339,584 = 460,718,080.
        grown = recipe.context["result"].weights_bytes - base.context["result"].weights_bytes
        assert grown == 460_718_080
