"""weights_breakdown: GGUF per-tensor sizing against real files, HF formats, properties."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.model import ModelSpec, parse_hf_config
from estimator.weights import (
    EXTRA_GGUF_FILE_TYPES,
    GGUF_FILE_TYPES,
    WeightsFormat,
    tp_shard_bytes,
    weights_breakdown,
)

DATA = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation"
GB = 10**9
CONFIG_OF = {
    "Llama-3.1-8B-Instruct": "meta-llama__Llama-3.1-8B-Instruct",
    "Qwen2.5-7B-Instruct": "Qwen__Qwen2.5-7B-Instruct",
    "Mistral-7B-Instruct-v0.3": "mistralai__Mistral-7B-Instruct-v0.3",
    "Gemma-2-9B-it": "google__gemma-2-9b-it",
    "Mixtral-8x7B-Instruct-v0.1": "mistralai__Mixtral-8x7B-Instruct-v0.1",
    "gpt-oss-20b": "openai__gpt-oss-20b",
}


def spec_of(fixture: str) -> ModelSpec:
    with (DATA / "configs" / f"{fixture}.json").open() as f:
        config: dict[str, Any] = json.load(f)
    return parse_hf_config(config)


def skip_reason(row: dict[str, str]) -> str | None:
    """Rows the tensor rules do not describe: unsloth's hand-tuned UD-* mixes and Mixtral
    files made before llama.cpp's 8-expert rules (Dec 2023). bartowski's *_L/*_XL recipes
    (token_embd and output at Q8_0) are modelled (RECIPE_BASE)."""
    quant = row["quant"]
    known = GGUF_FILE_TYPES + EXTRA_GGUF_FILE_TYPES
    if (quant.endswith(("_L", "_XL")) and quant not in known) or quant.startswith("UD-"):
        return "uploader mix"
    if "BEFORE the MoE-specific quant rules" in row["notes"]:
        return "pre-2024 llama.cpp MoE rules"
    return None


def uses_imatrix(row: dict[str, str]) -> bool:
    """bartowski (and its lmstudio duplicates) quantize with an imatrix; 'static' ones not."""
    text = row["notes"] + row["source"]
    return ("imatrix" in text or "bartowski" in text) and "static" not in row["notes"]


def gguf_errors() -> list[tuple[str, str, float, float]]:
    """(model, quant, measured GB, computed GB) for every modelled gguf_sizes.csv row."""
    specs = {name: spec_of(fixture) for name, fixture in CONFIG_OF.items()}
    out = []
    with (DATA / "gguf_sizes.csv").open() as f:
        for row in csv.DictReader(f):
            if skip_reason(row):
                continue
            fmt = WeightsFormat("gguf", row["quant"], imatrix=uses_imatrix(row))
            computed = weights_breakdown(specs[row["model"]], fmt).total_bytes / GB
            out.append((row["model"], row["quant"], float(row["file_size_gb"]), computed))
    return out


def test_it_sizes_real_gguf_files_within_one_percent_median_three_max() -> None:
    rows = gguf_errors()
    errors = [abs(c - m) / m * 100 for _, _, m, c in rows]
    worst = max(zip(errors, rows, strict=True))
    print(
        f"\nGGUF sizes: n={len(rows)} median={statistics.median(errors):.3f}% "
        f"p90={statistics.quantiles(errors, n=10)[-1]:.3f}% max={worst[0]:.3f}% {worst[1]}"
    )
    assert len(rows) >= 85
    assert statistics.median(errors) <= 1.0
    assert max(errors) <= 3.0


def test_it_sizes_llama_3_1_8b_q8_0_as_34_bytes_per_32_weights() -> None:
    # 2-D tensors: 8,030,261,248 - 266,240 1-D = 8,029,995,008 weights x 34/32
    #   = 8,531,869,696 bytes; 1-D norms 266,240 x 4 = 1,064,960 (F32);
    # metadata 4096 + 292 tensors x 100 + 128,256 x 40 = 5,163,536
    # total 8,538,098,192 = 8.54 GB (published: 8.54 GB)
    spec = spec_of("meta-llama__Llama-3.1-8B-Instruct")
    b = weights_breakdown(spec, WeightsFormat("gguf", "Q8_0"))
    one_d = 32 * 2 * 4096 + 4096
    assert b.total_bytes - b.metadata_bytes == (spec.params_total - one_d) * 34 // 32 + one_d * 4
    assert round(b.total_bytes / GB, 2) == 8.54
    assert b.tensor_types["output"] == "Q8_0"
    assert b.tensor_types["blk.0.attn_norm"] == "F32"


def test_an_uploader_recipe_is_its_base_type_with_q8_0_embeddings_and_output() -> None:
    spec = spec_of("meta-llama__Llama-3.1-8B-Instruct")
    base = weights_breakdown(spec, WeightsFormat("gguf", "Q4_K_M"))
    recipe = weights_breakdown(spec, WeightsFormat("gguf", "Q4_K_L"))
    changed = {k for k, v in recipe.tensor_types.items() if base.tensor_types[k] != v}
    assert changed == {"token_embd", "output"}
    assert recipe.tensor_types["token_embd"] == recipe.tensor_types["output"] == "Q8_0"
    # token_embd and output are 128,256 x 4,096 = 525,336,576 weights each; Q4_K_M has
    # them at Q4_K (144 B / 256) and Q6_K (210 B / 256), Q8_0 at 34 B / 32:
    # 525,336,576 x (34/32 - 144/256) + 525,336,576 x (34/32 - 210/256)
    #   = 262,668,288 + 127,229,952 = 389,898,240 bytes more (published: 4.92 -> 5.31 GB).
    assert recipe.total_bytes - base.total_bytes == 389_898_240
    assert round(recipe.total_bytes / GB, 2) == 5.31


def test_it_applies_llama_cpp_rules_to_q4_k_m() -> None:
    b = weights_breakdown(
        spec_of("meta-llama__Llama-3.1-8B-Instruct"), WeightsFormat("gguf", "Q4_K_M")
    )
    # use_more_bits(i, 32): i < 4, i >= 28, or (i - 4) % 3 == 2 -> layers 0-3, 6, 9, ...
    assert b.tensor_types["blk.0.attn_v"] == "Q6_K"
    assert b.tensor_types["blk.6.ffn_down"] == "Q6_K"
    assert b.tensor_types["blk.5.ffn_down"] == "Q4_K"
    assert b.tensor_types["blk.5.attn_q"] == "Q4_K"
    assert b.tensor_types["output"] == "Q6_K"
    assert b.tensor_types["token_embd"] == "Q4_K"


def test_it_bumps_mixtral_attention_and_keeps_the_router_f32() -> None:
    b = weights_breakdown(
        spec_of("mistralai__Mixtral-8x7B-Instruct-v0.1"), WeightsFormat("gguf", "Q4_K_M")
    )
    assert b.tensor_types["blk.3.attn_v"] == "Q8_0"
    assert b.tensor_types["blk.3.attn_k"] == "Q8_0"
    assert b.tensor_types["blk.3.attn_output"] == "Q5_K"
    assert b.tensor_types["blk.3.ffn_gate_inp"] == "F32"


def test_it_keeps_gpt_oss_experts_mxfp4_whatever_the_label() -> None:
    spec = spec_of("openai__gpt-oss-20b")
    for name in ("F16", "Q8_0", "Q4_K_M", "Q2_K"):
        b = weights_breakdown(spec, WeightsFormat("gguf", name))
        assert b.tensor_types["blk.0.ffn_down_exps"] == "MXFP4"
    # hidden 2880 is not a multiple of 256: K-quants fall back (Q4_K -> Q5_0)
    b = weights_breakdown(spec, WeightsFormat("gguf", "Q4_K_M"))
    assert b.tensor_types["blk.1.attn_q"] == "Q5_0"


def test_it_scales_every_tensor_to_a_measured_file_size() -> None:
    spec = spec_of("meta-llama__Llama-3.1-8B-Instruct")
    computed = weights_breakdown(spec, WeightsFormat("gguf", "Q4_K_M"))
    measured = weights_breakdown(spec, WeightsFormat("gguf", "Q4_K_M", file_bytes=5_000_000_000))
    assert measured.total_bytes == 5_000_000_000
    ratio = measured.per_layer_bytes[5] / computed.per_layer_bytes[5]
    assert ratio == pytest.approx(5e9 / computed.total_bytes, rel=1e-6)


def test_it_sizes_deepseek_v3_fp8_with_128_block_scales() -> None:
    spec = spec_of("deepseek-ai__DeepSeek-V3")
    b = weights_breakdown(spec, WeightsFormat("hf", "fp8"))
    # 671.03B params: linear weights at 1 byte + one f32 scale per 128 x 128 block
    # (+0.024%), embeddings/norms/router bf16 (2 x 129,280 x 7168 embeddings = 3.7 GB):
    # about 673 GB. The published checkpoint (~688.6 GB) also holds the MTP layer
    # (num_nextn_predict_layers 1, ~14 GB), which vLLM skips without speculative decoding.
    assert 670 * GB < b.total_bytes < 676 * GB
    assert b.tensor_types["blk.5.ffn_gate_inp"] == "bf16"
    assert b.tensor_types["blk.5.ffn_up_exps"] == "fp8"


def test_it_sizes_gpt_oss_hf_checkpoint_as_mxfp4_experts_plus_bf16() -> None:
    spec = spec_of("openai__gpt-oss-120b")
    b = weights_breakdown(spec, WeightsFormat("hf", "mxfp4"))
    # the published openai/gpt-oss-120b safetensors total 65.3 GB
    assert b.total_bytes / GB == pytest.approx(65.3, rel=0.02)


def test_it_counts_awq_scales_and_zeros_and_keeps_embeddings_16_bit() -> None:
    spec = spec_of("meta-llama__Llama-3.1-8B-Instruct")
    b = weights_breakdown(spec, WeightsFormat("hf", "awq-int4", group_size=128))
    # q_proj 4096 x 4096: 8,388,608 B weights + 4096 rows x 32 groups x 2.5 B = 327,680
    assert b.tensor_bytes is not None
    assert b.tensor_bytes["blk.0.attn_q"] == 4096 * 4096 // 2 + 4096 * 32 * 5 // 2
    assert b.tensor_types["token_embd"] == "bf16"
    # published hugging-quants Llama-3.1-8B AWQ-INT4 checkpoint: 5.73 GB
    assert b.total_bytes / GB == pytest.approx(5.73, rel=0.02)


def test_it_reports_active_bytes_per_token_for_moe() -> None:
    spec = spec_of("Qwen__Qwen3-30B-A3B")
    b = weights_breakdown(spec, WeightsFormat("hf", "bf16"))
    # active params 3,353,032,704 minus token_embd 151,936 x 2048 = 3,041,869,824 x 2 bytes
    assert b.active_bytes_per_token == (spec.params_active - 151936 * 2048) * 2
    assert b.expert_bytes > 0.9 * b.total_bytes


def test_it_counts_multimodal_towers_apart() -> None:
    config = {
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text",
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "num_hidden_layers": 34,
        },
        "vision_config": {
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_hidden_layers": 27,
            "patch_size": 14,
            "image_size": 896,
        },
    }
    spec = parse_hf_config(config)
    assert spec.params_total == 3_880_263_168  # model_configs.csv Gemma-3-4B-it
    # SigLIP-so400m tower ~0.417B + projector 1152 x 2560
    assert 0.40e9 < spec.params_multimodal < 0.45e9
    b = weights_breakdown(spec, WeightsFormat("hf", "bf16"))
    assert b.multimodal_bytes == pytest.approx(2 * spec.params_multimodal, rel=0.01)


# Ordered by effective size when no row needs a fallback type (dims multiple of 256).
# Not in the chain: Q3_K_L (its Q5_K attn_v/attn_output/ffn_down can outweigh IQ4_XS in
# small models), IQ4_NL/Q4_0/Q5_0 (same nominal bpw as K neighbours), IQ3_M and IQ2_M/IQ2_S
# (IQ3_S token_embd can exceed Q2_K's in vocabulary-heavy models).
SIZE_CHAIN = (
    "F32",
    "F16",
    "Q8_0",
    "Q6_K",
    "Q5_K_M",
    "Q5_K_S",
    "Q4_K_M",
    "Q4_K_S",
    "IQ4_XS",
    "Q3_K_M",
    "Q3_K_S",
    "IQ3_XS",
    "IQ3_XXS",
    "IQ2_XS",
    "IQ2_XXS",
    "IQ1_M",
    "IQ1_S",
)

dims = st.integers(min_value=4, max_value=32).map(lambda k: k * 256)


@st.composite
def dense_configs(draw: st.DrawFn) -> dict[str, Any]:
    heads = draw(st.sampled_from([8, 16, 32]))
    return {
        "model_type": "llama",
        "hidden_size": heads * 128,
        "num_attention_heads": heads,
        "num_key_value_heads": draw(st.sampled_from([h for h in (1, 2, 4, 8) if h <= heads])),
        "num_hidden_layers": draw(st.integers(min_value=1, max_value=48)),
        "intermediate_size": draw(dims),
        "vocab_size": draw(dims) * 16,
        "tie_word_embeddings": draw(st.booleans()),
    }


@settings(max_examples=40, deadline=None)
@given(dense_configs())
def test_bytes_never_decrease_with_more_bits_per_weight(config: dict[str, Any]) -> None:
    spec = parse_hf_config(config)
    sizes = [
        weights_breakdown(spec, WeightsFormat("gguf", name)).total_bytes for name in SIZE_CHAIN
    ]
    assert sizes == sorted(sizes, reverse=True)


@settings(max_examples=40, deadline=None)
@given(
    dense_configs(),
    st.sampled_from(GGUF_FILE_TYPES + EXTRA_GGUF_FILE_TYPES),
    st.sampled_from(["gguf", "hf"]),
)
def test_tp_2_halves_everything_but_the_replicated_part(
    config: dict[str, Any], gguf_name: str, family: str
) -> None:
    spec = parse_hf_config(config)
    fmt = WeightsFormat("gguf", gguf_name) if family == "gguf" else WeightsFormat("hf", "bf16")
    b = weights_breakdown(spec, fmt)
    shard = tp_shard_bytes(b, 2)
    assert tp_shard_bytes(b, 1) == b.total_bytes
    assert 2 * shard - b.replicated_bytes in (b.total_bytes, b.total_bytes + 1)
    assert sum(b.per_layer_bytes) + b.non_layer_bytes == b.total_bytes


def test_it_rejects_unknown_formats() -> None:
    with pytest.raises(ValueError):
        WeightsFormat("gguf", "Q9_K")
    with pytest.raises(ValueError):
        WeightsFormat("hf", "int3")
