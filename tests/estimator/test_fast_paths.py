"""The estimator's fast paths give what the plain per-layer and per-probe code gives.

kv_cache_bytes sums per-cell bytes grouped by attention kind and window (computed once per
model and cache type); the capacity searches guess from a line and bracket from the guess.
Both are checked here against the straightforward definitions.
"""

from __future__ import annotations

import gc
import math
import weakref
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.api.run import SEARCH_LIMIT, _largest_fitting
from estimator.kv import (
    KVSettings,
    engine_cells,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_read_split,
    layer_bytes_per_token,
)
from estimator.model.spec import LayerSpec, ModelSpec

# (attention, window, kv heads, head dim, linear state bytes per sequence), in model order:
# two sliding windows, a chunked layer, linear layers with and without state, full layers.
HYBRID_LAYERS = (
    ("sliding", 512, 8, 128, 0),
    ("full", None, 8, 128, 0),
    ("sliding", 4096, 4, 256, 0),
    ("linear", None, 0, 0, 1_572_864),
    ("chunked", 8192, 8, 128, 0),
    ("sliding", 512, 8, 128, 0),
    ("full", None, 2, 64, 0),
    ("linear", None, 0, 0, 0),
)


def hybrid_model() -> ModelSpec:
    """A ModelSpec with every cell rule kv_cache_bytes distinguishes, interleaved."""
    layers = tuple(
        LayerSpec(
            index=i,
            attention=attention,
            window_tokens=window,
            n_kv_heads=heads,
            head_dim_k=dim,
            head_dim_v=dim,
            is_moe=False,
            linear_state_bytes_per_seq=state,
        )
        for i, (attention, window, heads, dim, state) in enumerate(HYBRID_LAYERS)
    )
    return ModelSpec(
        model_type="test",
        gguf_arch="test",
        is_fallback=False,
        n_layers=len(layers),
        hidden_size=2048,
        vocab_size=32000,
        n_heads=16,
        n_kv_heads=8,
        head_dim=128,
        intermediate_size=8192,
        n_experts=0,
        n_experts_per_token=0,
        n_shared_experts=0,
        moe_intermediate_size=0,
        max_context_tokens=131072,
        tie_word_embeddings=False,
        mla=None,
        layers=layers,
        tensors=(),
        notes=(),
    )


HYBRID = hybrid_model()


def per_layer_totals(
    model: ModelSpec, engine: str, context: int, sequences: int, kv_dtype: str, kv: KVSettings
) -> tuple[int, int, int]:
    """(K bytes, V bytes, state bytes) summed layer by layer: the definition."""
    k_total = v_total = state_total = 0
    tp = kv.tensor_parallel if engine in ("vllm", "sglang", "tensorrt-llm") else 1
    for layer in model.layers:
        cells = engine_cells(engine, layer, context, sequences, kv)
        k_row, v_row = layer_bytes_per_token(model, layer, kv_dtype=kv_dtype, tensor_parallel=tp)
        k_total += cells * k_row * tp
        v_total += cells * v_row * tp
        state_total += layer.linear_state_bytes_per_seq * sequences * tp
    return k_total, v_total, state_total


@settings(max_examples=300, deadline=None)
@given(
    engine=st.sampled_from(["llama.cpp", "ollama", "mlx", "vllm", "sglang"]),
    context=st.integers(1, 300_000),
    sequences=st.integers(1, 16),
    kv_dtype=st.sampled_from(["f16", "q8_0", "q4_0"]),
    n_ubatch=st.sampled_from([1, 512, 2048]),
    swa_full=st.booleans(),
    tensor_parallel=st.sampled_from([1, 2, 4]),
)
def test_it_sums_grouped_layers_to_the_per_layer_totals(
    engine: str,
    context: int,
    sequences: int,
    kv_dtype: str,
    n_ubatch: int,
    swa_full: bool,
    tensor_parallel: int,
) -> None:
    kv = KVSettings(n_ubatch=n_ubatch, swa_full=swa_full, tensor_parallel=tensor_parallel)
    if engine in ("vllm", "sglang"):
        kv_dtype = "f16"
    cache = kv_cache_bytes(
        HYBRID,
        engine=engine,
        context_tokens=context,
        sequences=sequences,
        kv_dtype=kv_dtype,
        n_ubatch=n_ubatch,
        settings=kv,
    )
    k_total, v_total, state_total = per_layer_totals(
        HYBRID, engine, context, sequences, kv_dtype, kv
    )
    assert (cache.k_bytes, cache.v_bytes, cache.state_bytes) == (k_total, v_total, state_total)
    assert cache.total_bytes == k_total + v_total + state_total
    assert [part.attention for part in cache.parts] == ["sliding", "full", "linear", "chunked"]
    assert [part.n_layers for part in cache.parts] == [3, 2, 2, 1]


def test_it_splits_the_windowed_read_over_every_sliding_window() -> None:
    # K + V at f16: full layers 2 x 8 x 128 x 2 B + 2 x 2 x 64 x 2 B = 4,096 + 512;
    # windowed: sliding 8 x 128 (twice), sliding 4 x 256, chunked 8 x 128 = 4 x 4,096
    assert kv_read_split(HYBRID, kv_dtype="f16") == (4_608, 16_384, 8_192)
    assert kv_bytes_per_token(HYBRID, kv_dtype="f16") == 4_608 + 16_384


def test_its_layer_cache_does_not_keep_a_model_alive() -> None:
    model = hybrid_model()
    assert kv_bytes_per_token(model, kv_dtype="q8_0") == kv_bytes_per_token(HYBRID, kv_dtype="q8_0")
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


def plain_search(need: Callable[[int], int], budget: int, upper: int) -> int:
    """Largest n in [1, upper] with need(n) <= budget, 0 if none: plain bisection."""
    low, high = 0, upper + 1
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if need(middle) <= budget else (low, middle)
    return low


def padded(pad: int) -> Callable[[int], int]:
    return lambda n: -(-n // pad) * pad


def counted(need: Callable[[int], int], probes: list[int]) -> Callable[[int], int]:
    """need, recording each n it is asked for."""

    def probe(n: int) -> int:
        probes.append(n)
        return need(n)

    return probe


@settings(max_examples=500, deadline=None)
@given(
    base=st.integers(0, 10**11),
    per_token=st.integers(1, 10**6),
    windowed=st.integers(0, 10**6),
    window=st.sampled_from([128, 4096, 262_144]),
    pad=st.sampled_from([1, 16, 256]),
    at=st.integers(1, 2**26),
    slack=st.integers(0, 10**9),
    upper=st.sampled_from([SEARCH_LIMIT, 131_071, 4_095]),
)
def test_its_capacity_search_finds_what_bisection_finds(
    base: int,
    per_token: int,
    windowed: int,
    window: int,
    pad: int,
    at: int,
    slack: int,
    upper: int,
) -> None:
    cells = padded(pad)

    def need(n: int) -> int:
        return base + per_token * cells(n) + windowed * min(cells(n), window)

    budget = need(at) - 1 + slack % (per_token * pad + 1)
    probes: list[int] = []
    found = _largest_fitting(counted(need, probes), budget, upper)
    assert found == plain_search(need, budget, upper)
    # doubling from 1 and then bisecting, as before, took up to 2 x 27 probes
    assert len(probes) <= 2 * int(math.log2(SEARCH_LIMIT)) + 3
    if windowed == 0:  # a linear cache: the guess lands within a padding step
        assert len(probes) <= 8 + 2 * int(math.log2(pad))


def test_its_capacity_search_takes_few_probes_for_a_linear_cache() -> None:
    need = padded(256)  # llama.cpp: 256-cell steps, 1 byte per cell
    probes: list[int] = []
    assert _largest_fitting(counted(need, probes), 1_000_000) == 999_936
    assert len(probes) <= 16  # doubling then bisecting took 40 (this search: 12)
