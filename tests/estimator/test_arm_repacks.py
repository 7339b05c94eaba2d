"""The ARM repacks of Q4_0 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8): sized as Q4_0, named as given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from estimator import quality
from estimator.api import RequestError, estimate
from estimator.model import ModelSpec, parse_hf_config
from estimator.weights import REPACK_BASE, WeightsFormat, weights_breakdown

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"
REPACKS = ("Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8")
# Mistral-Large-Instruct-2407's shapes, as Lightning-AI/litgpt litgpt/config.py @ 0006c973
# copies them from its config.json: 88 layers, width 12,288, 96 heads, 8 KV groups, FFN
# 28,672, vocabulary 32,768, RMSNorm eps 1e-5, no biases (the catalog has no config.json
# of this model: catalog/data/configs/SOURCES_E.md).
MISTRAL_LARGE_2407 = {
    "architectures": ["MistralForCausalLM"],
    "model_type": "mistral",
    "hidden_size": 12288,
    "intermediate_size": 28672,
    "num_hidden_layers": 88,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 32768,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}


def mistral_7b() -> ModelSpec:
    config: dict[str, Any] = json.loads(
        (CONFIGS / "mistralai__Mistral-7B-Instruct-v0.3.json").read_text(encoding="utf-8")
    )
    return parse_hf_config(config)


def total(spec: ModelSpec, quant: str, *, imatrix: bool = True) -> int:
    return weights_breakdown(spec, WeightsFormat("gguf", quant, imatrix=imatrix)).total_bytes


def test_a_7b_models_repack_bytes_are_its_q4_0_bytes() -> None:
    # Mistral 7B v0.3: 32 layers of q 4096x4096 + k, v 4096x1024 + o 4096x4096 + gate, up,
    # down 3 x 4096x14336 = 218,103,808 weights; x 32 = 6,979,321,856, + token_embd
    # 32768x4096 = 134,217,728, all at Q4_0: 7,113,539,584 x 18/32 = 4,001,366,016 bytes;
    # output 134,217,728 x 210/256 (Q6_K) = 110,100,480; 1-D norms 266,240 x 4 = 1,064,960;
    # metadata 4,096 + 291 tensors x 100 + 32,768 x 40 = 1,343,916.
    # Total 4,001,366,016 + 110,100,480 + 1,064,960 + 1,343,916 = 4,113,875,372.
    spec = mistral_7b()
    q4_0 = total(spec, "Q4_0", imatrix=False)
    assert q4_0 == 4_113_875_372
    for quant in REPACKS:
        assert total(spec, quant) == total(spec, quant, imatrix=False) == q4_0, quant
    repack = weights_breakdown(spec, WeightsFormat("gguf", "Q4_0_4_8"))
    assert set(repack.tensor_types.values()) == {"F32", "Q4_0", "Q6_K"}
    assert repack.bits_per_weight == pytest.approx(8 * (q4_0 - 1_343_916) / 7_248_023_552)


def test_the_q4_0_imatrix_guard_does_not_apply_to_a_repack() -> None:
    # llama.cpp raises the first 32 // 8 = 4 ffn_down of an imatrix Q4_0 file to Q4_1 (20
    # bytes per 32 weights instead of 18), keyed on the Q4_0 file type alone:
    # 4 x 14,336 x 4,096 = 234,881,024 weights x 2/32 = 14,680,064 bytes more than a repack.
    spec = mistral_7b()
    assert total(spec, "Q4_0") - total(spec, "Q4_0_4_4") == 14_680_064
    q4_0 = weights_breakdown(spec, WeightsFormat("gguf", "Q4_0")).tensor_types
    repack = weights_breakdown(spec, WeightsFormat("gguf", "Q4_0_4_4")).tensor_types
    assert q4_0["blk.0.ffn_down"] == "Q4_1" and repack["blk.0.ffn_down"] == "Q4_0"
    assert {k for k, v in repack.items() if q4_0[k] != v} == {f"blk.{i}.ffn_down" for i in range(4)}


def test_mistral_large_2407_q4_0_4_4_is_its_published_size() -> None:
    # bartowski/Mistral-Large-Instruct-2407-GGUF (llama.cpp b3634, imatrix): Q4_0 69.32 GB,
    # Q4_0_4_4 69.08 GB (estimator/data/validation/gguf_sizes_more.csv). The repack is the
    # imatrix Q4_0 less its guard: 88 // 8 = 11 ffn_down of 28,672 x 12,288 weights,
    # 3,875,536,896 x 2/32 = 242,221,056 bytes: 69,323,064,972 - 242,221,056
    # = 69,080,843,916 bytes = 69.08 GB (0.001 % off; GGUF rows are held to 1 % median,
    # 3 % at most, tests/estimator/test_weights.py).
    spec = parse_hf_config(MISTRAL_LARGE_2407)
    q4_0, repack = total(spec, "Q4_0"), total(spec, "Q4_0_4_4")
    assert q4_0 == 69_323_064_972 and round(q4_0 / 1e9, 2) == 69.32
    assert q4_0 - repack == 242_221_056
    assert repack == 69_080_843_916 == total(spec, "Q4_0", imatrix=False)
    assert abs(repack - 69.08e9) / 69.08e9 < 0.01


def test_the_api_accepts_a_repack_keeps_its_name_and_says_how_it_sized_it() -> None:
    config = json.loads(
        (CONFIGS / "mistralai__Mistral-7B-Instruct-v0.3.json").read_text(encoding="utf-8")
    )

    def request(quant: str) -> dict[str, Any]:
        return {
            "model": {"hf_config": config},
            "weights": {"format": "gguf", "quant": quant},
            "device": {"memory_gb": 24, "bandwidth_gbps": 1008, "fp16_tflops": 165.2},
            "engine": {"name": "llama.cpp", "backend": "cpu"},
            "workload": {"context_tokens": 4096},
        }

    repack, plain = estimate(request("q4_0_8_8")), estimate(request("Q4_0"))
    # The worked 7B example above; imatrix (the default) adds 14,680,064 bytes to Q4_0 only.
    assert repack["weights_bytes"] == 4_113_875_372
    assert plain["weights_bytes"] - repack["weights_bytes"] == 14_680_064
    assert "Q4_0_8_8 is an ARM repack of Q4_0 (the same blocks): sized as Q4_0" in (repack["notes"])
    assert not any("ARM repack" in note for note in plain["notes"])
    with pytest.raises(RequestError, match="unknown GGUF file type 'Q4_0_2_2'"):
        estimate(request("Q4_0_2_2"))


def test_a_repack_takes_q4_0s_quality_tier() -> None:
    for quant in REPACKS:
        assert REPACK_BASE[quant] == "Q4_0"
        entry = quality.format_quality(quant)
        assert entry is not None and entry.tier == quality.tier_of("Q4_0") == "good"
        assert entry.bits_per_weight == 4.5  # 18 bytes x 8 / 32 weights
