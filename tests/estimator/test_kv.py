"""KV cache sizes: worked examples, the published llama.cpp logs, and properties."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.kv import (
    KVSettings,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_tokens_that_fit,
    max_context_that_fits,
    row_bytes,
    vllm_max_concurrency,
)
from estimator.model.spec import LayerSpec, MLASpec, ModelSpec
from estimator.units import GIB, MIB

VALIDATION = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation"


def hand_spec(
    n_layers: int,
    n_kv_heads: int,
    head_dim: int,
    *,
    head_dim_v: int | None = None,
    n_heads: int = 32,
    pattern: tuple[str, ...] = ("full",),
    window: int | None = None,
    mla: MLASpec | None = None,
    linear_state: int = 0,
    max_context: int = 131072,
) -> ModelSpec:
    """A ModelSpec with only the fields the KV and memory code read.

    `pattern` repeats over the layers: ("sliding", "full") is Gemma-2 / gpt-oss.
    """
    layers = tuple(
        LayerSpec(
            index=i,
            attention=pattern[i % len(pattern)],
            window_tokens=window if pattern[i % len(pattern)] in ("sliding", "chunked") else None,
            n_kv_heads=n_kv_heads,
            head_dim_k=head_dim,
            head_dim_v=head_dim if head_dim_v is None else head_dim_v,
            is_moe=False,
            linear_state_bytes_per_seq=linear_state if pattern[i % len(pattern)] == "linear" else 0,
        )
        for i in range(n_layers)
    )
    return ModelSpec(
        model_type="test",
        gguf_arch="llama",
        is_fallback=False,
        n_layers=n_layers,
        hidden_size=4096,
        vocab_size=128256,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        intermediate_size=14336,
        n_experts=0,
        n_experts_per_token=0,
        n_shared_experts=0,
        moe_intermediate_size=0,
        max_context_tokens=max_context,
        tie_word_embeddings=False,
        mla=mla,
        layers=layers,
        tensors=(),
        notes=(),
    )


DEEPSEEK_MLA = MLASpec(
    kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128
)


def deepseek_v3() -> ModelSpec:
    """61 MLA layers, 128 heads (model.py's convention: n_kv_heads 1, K width 576)."""
    return hand_spec(61, 1, 576, head_dim_v=512, n_heads=128, pattern=("mla",), mla=DEEPSEEK_MLA)


LLAMA_31_8B = hand_spec(32, 8, 128)
GLM_45_AIR = hand_spec(46, 8, 128, n_heads=96)  # MTP layer excluded: it has no KV cache
GPT_OSS_20B = hand_spec(24, 8, 64, n_heads=64, pattern=("sliding", "full"), window=128)


def test_it_sizes_llama_31_8b_at_128_kib_per_token() -> None:
    # 32 layers x 2 (K and V) x 8 kv heads x 128 dims x 2 bytes = 131,072 B
    assert kv_bytes_per_token(LLAMA_31_8B, kv_dtype="f16") == 131_072


def test_it_sizes_glm_45_air_at_8k_context_as_1_4375_gib() -> None:
    # 46 layers x 2 x 8 x 128 x 2 B x 8,192 tokens = 1,543,503,872 B = 1.4375 GiB
    cache = kv_cache_bytes(GLM_45_AIR, engine="llama.cpp", context_tokens=8192, kv_dtype="f16")
    assert cache.total_bytes == 1_543_503_872
    assert cache.total_bytes / GIB == 1.4375


def test_it_sizes_deepseek_v3_mla_latent_in_vllm() -> None:
    # vLLM caches kv_lora_rank + rope = 512 + 64 = 576 values per layer: 61 x 576 x 2 B
    assert kv_bytes_per_token(deepseek_v3(), kv_dtype="bf16") == 61 * 576 * 2 == 70_272


def test_it_sizes_every_mla_layout_for_deepseek() -> None:
    model = deepseek_v3()
    # latent_kv (llama.cpp Apr 2025 - Jan 2026): K 576 + V 512 per layer
    assert kv_bytes_per_token(model, mla_layout="latent_kv") == 61 * (576 + 512) * 2
    # full per-head cache: K 128 x 192, V 128 x 128 per layer = 61 x 40,960 x 2 B
    assert kv_bytes_per_token(model, mla_layout="full") == 61 * (128 * 192 + 128 * 128) * 2


def test_it_counts_q8_0_and_q4_0_blocks() -> None:
    # q8_0: 1,024 elements = 32 blocks x 34 B; q4_0: 32 blocks x 18 B
    assert row_bytes("q8_0", 1024) == 1088
    assert row_bytes("q4_0", 1024) == 576
    assert row_bytes("fp8", 1024) == 1024


def test_it_caps_gpt_oss_sliding_layers_at_window_plus_ubatch_in_llama_cpp() -> None:
    # full layers: 12 x 8,192 cells x (2 x 8 x 64 x 2 B = 2,048 B) = 192 MiB
    # SWA layers: pad256(min(8192, 128 + 512)) = 768 cells: 12 x 768 x 2,048 B = 18 MiB
    cache = kv_cache_bytes(GPT_OSS_20B, engine="llama.cpp", context_tokens=8192, n_ubatch=512)
    parts = {p.attention: p for p in cache.parts}
    assert parts["sliding"].cells_per_layer == 768
    assert parts["full"].total_bytes == 192 * MIB
    assert parts["sliding"].total_bytes == 18 * MIB


def test_it_keeps_every_swa_cell_with_swa_full() -> None:
    cache = kv_cache_bytes(
        GPT_OSS_20B,
        engine="llama.cpp",
        context_tokens=8192,
        settings=KVSettings(swa_full=True),
    )
    assert cache.total_bytes == 24 * 8192 * 2048


def test_it_pads_llama_cpp_context_to_256_cells() -> None:
    cache = kv_cache_bytes(LLAMA_31_8B, engine="llama.cpp", context_tokens=1000)
    assert cache.cells == 1024


def test_it_refuses_a_quantized_v_cache_without_flash_attention() -> None:
    with pytest.raises(ValueError, match="flash attention"):
        kv_cache_bytes(
            LLAMA_31_8B,
            engine="llama.cpp",
            context_tokens=4096,
            kv_dtype="q8_0",
            flash_attention=False,
        )


def test_it_splits_kv_heads_over_tensor_parallel_ranks_in_vllm() -> None:
    # V027: Llama-3.1-8B TP2 reports 64 KiB per token per rank
    assert kv_bytes_per_token(LLAMA_31_8B, kv_dtype="bf16", tensor_parallel=2) == 64 * 1024


def test_it_counts_linear_attention_state_per_sequence() -> None:
    # 4 layers: 3 linear (1 MiB state each) + 1 full; 2 sequences of 1,024 tokens
    model = hand_spec(4, 2, 256, pattern=("linear", "linear", "linear", "full"), linear_state=MIB)
    cache = kv_cache_bytes(model, engine="llama.cpp", context_tokens=1024, sequences=2)
    # full: 2,048 cells x 2 x 2 x 256 x 2 B = 4 MiB; state: 3 x 1 MiB x 2 = 6 MiB
    assert cache.state_bytes == 6 * MIB
    assert cache.total_bytes == 10 * MIB


def test_it_reports_vllm_token_capacity_in_whole_blocks() -> None:
    # V018: 58.11 GiB / (16 x 131,072 B) = 29,752 blocks -> 476,032 tokens (logged 476,000)
    tokens = kv_tokens_that_fit(LLAMA_31_8B, int(58.11 * GIB), kv_dtype="bf16")
    assert tokens % 16 == 0
    assert abs(tokens - 476_000) / 476_000 < 0.001


def test_it_reproduces_vllm_concurrency_with_sliding_windows() -> None:
    # V040 gpt-oss-20b TP2: 2,591,776 tokens, 8,192 per request -> 316.07x
    # full layers need 512 blocks, sliding min(127 + 8192, 8192) -> 512 + 1 blocks
    concurrency = vllm_max_concurrency(
        GPT_OSS_20B,
        kv_tokens=2_591_776,
        max_model_len=8192,
        settings=KVSettings(tensor_parallel=2),
    )
    assert concurrency == pytest.approx(316.07, abs=0.01)


def test_it_finds_the_largest_context_that_fits() -> None:
    budget = 2 * GIB  # 2 GiB / 128 KiB = 16,384 tokens exactly
    assert max_context_that_fits(LLAMA_31_8B, budget, engine="llama.cpp") == 16_384


# --- the published llama.cpp load logs -------------------------------------------------


def _llamacpp_rows() -> list[dict[str, str]]:
    with (VALIDATION / "llamacpp_memory.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def _row_dtype(value: str) -> str:
    return value.replace("c^KV", "").strip() or "f16"


def _row_is_latent(row: dict[str, str]) -> bool:
    return row["type_k"].startswith("c^KV")


def _row_spec(row: dict[str, str]) -> ModelSpec:
    """Plain attention from the row's own n_embd_k_gqa / n_embd_v_gqa, or the MLA latent."""
    if _row_is_latent(row):
        return hand_spec(int(row["n_layer"]), 1, 576, pattern=("mla",), mla=DEEPSEEK_MLA)
    return hand_spec(
        int(row["n_layer"]),
        1,
        int(row["n_embd_k_gqa"]),
        head_dim_v=int(row["n_embd_v_gqa"]),
        pattern=("sliding", "sliding", "sliding", "sliding", "sliding", "full")
        if int(row["n_swa"] or 0)
        else ("full",),
        window=int(row["n_swa"] or 0) or None,
    )


def _row_cache_mib(row: dict[str, str], model: ModelSpec) -> float:
    sequences = int(row["n_seq_max"] or 1)
    cache = kv_cache_bytes(
        model,
        engine="llama.cpp",
        context_tokens=int(row["n_ctx"]) // sequences,
        sequences=sequences,
        kv_dtype=_row_dtype(row["type_k"]),
        v_dtype=_row_dtype(row["type_v"]),
        n_ubatch=int(row["n_ubatch"]),
        flash_attention=row["flash_attn"] == "1",
        mla_layout="latent",
        # ik_llama.cpp builds have no reduced SWA cache (row L006 notes)
        settings=KVSettings(swa_full="ik_llama" in row["engine"]),
    )
    return cache.total_bytes / MIB


@pytest.mark.parametrize("row", _llamacpp_rows(), ids=lambda row: row["record_id"])
def test_it_matches_the_llama_cpp_kv_buffer_from_the_row_columns(row: dict[str, str]) -> None:
    expected = float(row["kv_total_mib"])
    assert _row_cache_mib(row, _row_spec(row)) == pytest.approx(expected, rel=0.005)


# --- properties ------------------------------------------------------------------------

ENGINE_NAMES = st.sampled_from(["llama.cpp", "ollama", "mlx", "vllm", "sglang", "tensorrt-llm"])
MODELS = st.sampled_from([LLAMA_31_8B, GPT_OSS_20B, deepseek_v3()])


@given(
    model=MODELS,
    engine=ENGINE_NAMES,
    context=st.integers(1, 200_000),
    extra=st.integers(0, 50_000),
    sequences=st.integers(1, 16),
)
def test_it_never_shrinks_as_context_grows(
    model: ModelSpec, engine: str, context: int, extra: int, sequences: int
) -> None:
    def size(tokens: int) -> int:
        return kv_cache_bytes(
            model, engine=engine, context_tokens=tokens, sequences=sequences
        ).total_bytes

    assert size(context + extra) >= size(context)


@given(model=MODELS, engine=ENGINE_NAMES, context=st.integers(1, 100_000), more=st.integers(0, 8))
def test_it_never_shrinks_with_more_sequences(
    model: ModelSpec, engine: str, context: int, more: int
) -> None:
    def size(sequences: int) -> int:
        return kv_cache_bytes(
            model, engine=engine, context_tokens=context, sequences=sequences
        ).total_bytes

    assert size(1 + more) >= size(1)


@given(blocks=st.integers(1, 10_000), factor=st.integers(2, 8))
def test_it_scales_linearly_in_full_attention_layers(blocks: int, factor: int) -> None:
    # whole 256-cell blocks: no padding, so k x the context is exactly k x the bytes
    tokens = blocks * 256

    def size(n: int) -> int:
        return kv_cache_bytes(LLAMA_31_8B, engine="llama.cpp", context_tokens=n).total_bytes

    assert size(tokens * factor) == factor * size(tokens)


@given(
    model=MODELS,
    dtype=st.sampled_from(["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "fp8"]),
    context=st.integers(1, 100_000),
)
def test_a_quantized_cache_is_never_larger_than_f16(
    model: ModelSpec, dtype: str, context: int
) -> None:
    def size(kv_dtype: str) -> int:
        return kv_cache_bytes(
            model, engine="llama.cpp", context_tokens=context, kv_dtype=kv_dtype
        ).total_bytes

    assert size(dtype) <= size("f16")


# --- the same checks from the parsed config.json files ---------------------------------

CONFIGS = VALIDATION / "configs"
PARSED_FOR_LLAMACPP_ROW = {
    ("deepseek2", "61"): "deepseek-ai__DeepSeek-V3.json",
    ("llama", "32"): "meta-llama__Llama-3.1-8B-Instruct.json",
    ("qwen3moe", "94"): "Qwen__Qwen3-235B-A22B.json",
}


def parsed(file_name: str) -> ModelSpec:
    from estimator.model import parse_hf_config

    return parse_hf_config(json.loads((CONFIGS / file_name).read_text()))


def _row_mla_layout(row: dict[str, str]) -> str:
    if row["n_head_kv"] == "1":  # mainline MLA GGUF (L055): K 576 + V 512
        return "latent_kv"
    return "latent" if _row_is_latent(row) else "full"


@pytest.mark.parametrize(
    "row",
    [r for r in _llamacpp_rows() if (r["arch"], r["n_layer"]) in PARSED_FOR_LLAMACPP_ROW],
    ids=lambda row: row["record_id"],
)
def test_it_matches_the_llama_cpp_kv_buffer_from_the_parsed_config(row: dict[str, str]) -> None:
    model = parsed(PARSED_FOR_LLAMACPP_ROW[(row["arch"], row["n_layer"])])
    sequences = int(row["n_seq_max"] or 1)
    cache = kv_cache_bytes(
        model,
        engine="llama.cpp",
        context_tokens=int(row["n_ctx"]) // sequences,
        sequences=sequences,
        kv_dtype=_row_dtype(row["type_k"]),
        v_dtype=_row_dtype(row["type_v"]),
        n_ubatch=int(row["n_ubatch"]),
        flash_attention=row["flash_attn"] == "1",
        mla_layout=_row_mla_layout(row),
    )
    assert cache.total_bytes / MIB == pytest.approx(float(row["kv_total_mib"]), rel=0.005)


def test_the_parsed_configs_give_the_worked_examples() -> None:
    assert kv_bytes_per_token(parsed("meta-llama__Llama-3.1-8B-Instruct.json")) == 131_072
    assert kv_bytes_per_token(parsed("deepseek-ai__DeepSeek-V3.json")) == 61 * 576 * 2
    # gpt-oss-20b: 24 layers x 2 x 8 x 64 x 2 B = 49,152 B (sliding layers counted in full)
    assert kv_bytes_per_token(parsed("openai__gpt-oss-20b.json")) == 49_152


def test_an_mla_latent_cache_is_noted_as_replicated_on_every_rank() -> None:
    # DeepSeek-V3's latent (kv_lora_rank 512 + rope 64 per token and layer) is shared by all
    # heads: each tensor-parallel rank keeps all of it, so "KV heads split" would mislead.
    from estimator.api import estimate as run

    config = json.loads((CONFIGS / "deepseek-ai__DeepSeek-V3.json").read_text())
    result = run(
        {
            "model": {"hf_config": config},
            "weights": {"format": "hf", "dtype": "fp8"},
            "device": {"memory_gb": 141, "bandwidth_gbps": 4800, "count": 8},
            "engine": {"name": "vllm"},
            "workload": {"context_tokens": 8192, "tensor_parallel": 8},
        }
    )
    text = " ".join(result["notes"]) + " " + json.dumps(result["explanation"])
    assert "MLA latent cache replicated on each of 8 tensor-parallel ranks" in text
    assert "KV heads split over" not in text
