"""The DeepSeek sparse attention (DSA) indexer key cache: worked examples per engine.

Sources: vLLM models/deepseek_v2.py (Indexer: DeepseekV32IndexerCache of head_dim +
head_dim // quant_block_size * 4 = 128 + 4 = 132 uint8 per token, fp8 values plus a float32
scale per 128); SGLang NSATokenToKVPool (index_k_with_scale_buffer: page_size x (128 + 4) B);
llama.cpp llama_kv_cache_dsa (a K-only cache of indexer_head_size in the -ctk type, same
cells as the MLA cache); mlx-lm deepseek_v32.py (indexer KVCache, values zeros_like(keys)).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.api import estimate, parse_request
from estimator.api.run import paged_bytes_per_token
from estimator.kv import (
    KVSettings,
    indexer_row_bytes,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_read_split,
    kv_tokens_that_fit,
)
from estimator.model import parse_hf_config
from estimator.units import MIB

CONFIGS = Path(__file__).resolve().parents[2] / "catalog" / "data" / "configs"


def load(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return result


V32_CONFIG = load("deepseek-ai__DeepSeek-V3.2")
V32 = parse_hf_config(V32_CONFIG)
GLM52 = parse_hf_config(load("zai-org__GLM-5.2"))
GLM5 = parse_hf_config(load("zai-org__GLM-5"))
DEEPSEEK_V3 = parse_hf_config(load("deepseek-ai__DeepSeek-V3"))

# DeepSeek-V3.2: 61 MLA layers, each with an indexer of index_head_dim 128.
MLA_BF16 = 61 * (512 + 64) * 2  # 70,272 B per token: the latent, no V
INDEXER_FP8 = 61 * (128 + 128 // 128 * 4)  # 61 x 132 = 8,052 B per token
TOKENS = 32768


def test_every_deepseek_v32_layer_caches_a_128_value_indexer_key() -> None:
    assert V32.n_layers == 61
    assert {layer.indexer_head_dim for layer in V32.layers} == {128}
    assert all(layer.indexer_head_dim == 0 for layer in DEEPSEEK_V3.layers)


def test_the_row_bytes_of_each_layout() -> None:
    assert indexer_row_bytes(128, layout="fp8_scaled", kv_dtype="bf16") == (132, 0)
    assert indexer_row_bytes(128, layout="fp8_scaled", kv_dtype="fp8") == (132, 0)
    assert indexer_row_bytes(128, layout="k", kv_dtype="f16") == (256, 0)
    assert indexer_row_bytes(128, layout="k", kv_dtype="q8_0") == (4 * 34, 0)  # 136
    assert indexer_row_bytes(128, layout="kv", kv_dtype="bf16") == (256, 256)
    with pytest.raises(ValueError):
        indexer_row_bytes(128, layout="bogus", kv_dtype="f16")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_paged_engines_add_132_bytes_per_layer_at_32768_tokens(engine: str) -> None:
    # MLA: 70,272 B x 32,768 = 2,302,672,896 B; indexer: 8,052 B x 32,768 = 263,847,936 B
    # (61 x 132); together 78,324 B per token, 2,566,520,832 B = 2.39 GiB.
    cache = kv_cache_bytes(V32, engine=engine, context_tokens=TOKENS, kv_dtype="bf16")
    parts = {p.attention: p for p in cache.parts}
    assert parts["mla"].total_bytes == MLA_BF16 * TOKENS == 2_302_672_896
    assert parts["indexer"].n_layers == 61
    assert parts["indexer"].cells_per_layer == TOKENS
    assert parts["indexer"].total_bytes == INDEXER_FP8 * TOKENS == 263_847_936
    assert cache.indexer_bytes == 263_847_936
    assert cache.total_bytes == 2_566_520_832
    assert cache.bytes_per_token == MLA_BF16 + INDEXER_FP8 == 78_324
    assert any("61 layers x 132 B per token" in note for note in cache.notes)


def test_the_fp8_indexer_does_not_follow_an_fp8_kv_cache() -> None:
    # The indexer cache is uint8 132 B whatever --kv-cache-dtype says; the latent halves.
    cache = kv_cache_bytes(V32, engine="vllm", context_tokens=TOKENS, kv_dtype="fp8")
    assert cache.bytes_per_token == 61 * 576 + INDEXER_FP8 == 35_136 + 8_052


def test_llama_cpp_keeps_a_k_only_indexer_row_in_the_k_type() -> None:
    # f16: 61 x 128 x 2 = 15,616 B per token x 32,768 = 511,705,088 B beside the latent.
    f16 = kv_cache_bytes(V32, engine="llama.cpp", context_tokens=TOKENS, kv_dtype="f16")
    assert f16.indexer_bytes == 61 * 256 * TOKENS == 511_705_088
    assert f16.total_bytes == (MLA_BF16 + 61 * 256) * TOKENS == 2_814_377_984
    # q8_0: 61 x 136 = 8,296 B per token (the latent in q8_0: 61 x 18 blocks x 34 = 37,332).
    q8 = kv_cache_bytes(V32, engine="llama.cpp", context_tokens=TOKENS, kv_dtype="q8_0")
    assert q8.indexer_bytes == 61 * 136 * TOKENS
    assert q8.bytes_per_token == 61 * 18 * 34 + 61 * 136


def test_llama_cpp_glm_52_indexer_cache_matches_the_published_178_5_mib() -> None:
    # ggml-org/llama.cpp issue #26382, comment by fairydreaming (2026-08-02), after PR
    # #26474 (indexer cache only in GLM-5.2's "full" indexer layers): "for q8_0 K type and
    # 65536 cells indexer cache went from 663.00 MiB to 178.50 MiB".
    # GLM-5.2: 21 of 78 layers own an indexer: 21 x 136 B x 65,536 = 187,170,816 B = 178.5 MiB.
    cache = kv_cache_bytes(GLM52, engine="llama.cpp", context_tokens=65536, kv_dtype="q8_0")
    assert sum(1 for layer in GLM52.layers if layer.indexer_head_dim) == 21
    assert cache.indexer_bytes == 21 * 136 * 65536 == int(178.5 * MIB)
    # Every one of GLM-5's 78 layers owns one: 78 x 136 B x 65,536 = 663.00 MiB, the
    # figure before the PR (GGUFs that repeat the indexer in every layer).
    glm5 = kv_cache_bytes(GLM5, engine="llama.cpp", context_tokens=65536, kv_dtype="q8_0")
    assert glm5.indexer_bytes == 78 * 136 * 65536 == 663 * MIB


def test_mlx_keeps_the_indexer_keys_twice() -> None:
    # mlx-lm's indexer KVCache stores values = zeros_like(keys): 61 x 2 x 128 x 2 = 31,232 B.
    cache = kv_cache_bytes(V32, engine="mlx", context_tokens=TOKENS, kv_dtype="bf16")
    assert cache.indexer_bytes == 61 * 512 * TOKENS == 1_023_410_176


def test_tensor_parallel_ranks_each_keep_the_whole_indexer_cache() -> None:
    # The indexer is replicated (vLLM: "no tensor parallel, just replicated"), like the latent.
    settings = KVSettings(tensor_parallel=8)
    cache = kv_cache_bytes(
        V32, engine="vllm", context_tokens=TOKENS, kv_dtype="bf16", settings=settings
    )
    assert cache.per_rank_bytes == 2_566_520_832
    assert cache.indexer_bytes == 8 * 263_847_936


def test_glm_52_paged_indexer_covers_only_its_21_full_indexer_layers() -> None:
    # 78 x 1,152 B latent + 21 x 132 B indexer = 89,856 + 2,772 = 92,628 B per token.
    assert kv_bytes_per_token(GLM52, kv_dtype="bf16") == 78 * 1152 + 21 * 132 == 92_628


def test_tokens_that_fit_count_the_indexer() -> None:
    # 10 GB per rank: 10^10 // (16 x 78,324) = 7,979 blocks = 127,664 tokens; without the
    # indexer it would be 10^10 // (16 x 70,272) = 8,894 blocks = 142,304 tokens.
    assert kv_bytes_per_token(V32, kv_dtype="bf16") == 78_324
    assert kv_tokens_that_fit(V32, 10**10) == 7979 * 16 == 127_664
    assert kv_tokens_that_fit(DEEPSEEK_V3, 10**10) == 8894 * 16 == 142_304


def test_the_api_counts_the_indexer_in_the_kv_cache_and_its_pool() -> None:
    body = {
        "model": {"hf_config": V32_CONFIG},
        "weights": {"format": "hf", "dtype": "fp8"},
        "device": {"memory_gb": 141, "bandwidth_gbps": 4800, "count": 8},
        "engine": {"name": "vllm"},
        "workload": {"context_tokens": TOKENS, "tensor_parallel": 8},
    }
    result = estimate(body)
    # 8 ranks x 2,566,520,832 B (latent and indexer are both replicated)
    assert result["kv_cache_bytes"] == 8 * 2_566_520_832
    assert result["kv_cache_bytes_per_token"] == 8 * 78_324
    assert any("DSA indexer key cache (fp8_scaled)" in note for note in result["notes"])
    request = parse_request(body)
    assert paged_bytes_per_token(request, V32, "tensor") == 78_324


def test_decode_reads_leave_the_indexer_out() -> None:
    # The speed model's split is unchanged for DSA models (see kv_read_split).
    assert kv_read_split(V32, kv_dtype="bf16") == (MLA_BF16, 0, 0)


def test_models_without_an_indexer_have_no_indexer_part() -> None:
    cache = kv_cache_bytes(DEEPSEEK_V3, engine="vllm", context_tokens=TOKENS, kv_dtype="bf16")
    assert [p.attention for p in cache.parts] == ["mla"] and cache.indexer_bytes == 0


@given(
    tokens=st.integers(min_value=1, max_value=300_000),
    sequences=st.integers(min_value=1, max_value=8),
    engine=st.sampled_from(["vllm", "sglang", "llama.cpp", "mlx"]),
)
def test_the_indexer_part_follows_the_mla_cells(tokens: int, sequences: int, engine: str) -> None:
    cache = kv_cache_bytes(
        V32, engine=engine, context_tokens=tokens, sequences=sequences, kv_dtype="bf16"
    )
    parts = {p.attention: p for p in cache.parts}
    mla, indexer = parts["mla"], parts["indexer"]
    assert indexer.cells_per_layer == mla.cells_per_layer >= tokens * sequences
    per_cell = indexer.k_bytes_per_cell + indexer.v_bytes_per_cell
    assert indexer.total_bytes == indexer.cells_per_layer * per_cell == cache.indexer_bytes
    assert cache.total_bytes == mla.total_bytes + indexer.total_bytes
