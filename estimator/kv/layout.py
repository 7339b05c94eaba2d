"""What one layer caches per token: cache dtypes, MLA and DSA indexer layouts, row bytes.

Exact arithmetic over the layer specs (ggml block sizes, the engines' cache layouts);
nothing here is fitted.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from estimator.engines import engine_capability, llama_family

if TYPE_CHECKING:
    from estimator.model.spec import LayerSpec, ModelSpec

# (bytes per block, elements per block) for each cache dtype. ggml block sizes from
# ggml.c type_traits: q8_0 = 32 x int8 + f16 scale = 34 B; q4_0/iq4_nl = 16 B + f16 = 18 B;
# q4_1 = 16 B + 2 x f16 = 20 B; q5_0 = 16 + 4 + 2 = 22 B; q5_1 = 24 B.
KV_DTYPE_BLOCKS: dict[str, tuple[int, int]] = {
    "f32": (4, 1),
    "f16": (2, 1),
    "bf16": (2, 1),
    "fp8": (1, 1),
    "fp8_e4m3": (1, 1),
    "fp8_e5m2": (1, 1),
    "q8_0": (34, 32),
    "q5_1": (24, 32),
    "q5_0": (22, 32),
    "q4_1": (20, 32),
    "q4_0": (18, 32),
    "iq4_nl": (18, 32),
}
_DTYPE_ALIASES = {"fp16": "f16", "float16": "f16", "bfloat16": "bf16", "float32": "f32"}


# MLA cache layouts (DeepSeek-V2/V3, Kimi K2):
# "latent": one K row of kv_lora_rank + qk_rope_head_dim, no V (vLLM, SGLang, TRT-LLM;
#   llama.cpp since PR #19067 "kv-cache : support V-less cache", Jan 2026; ik_llama.cpp mla=2/3).
# "latent_kv": latent K (576) plus a V row of kv_lora_rank (512) (llama.cpp PR #12801,
#   Apr 2025 - Jan 2026; ik_llama.cpp mla=1 without flash attention).
# "full": per-head K (n_head x (nope + rope)) and V (n_head x v_head_dim), as for plain
#   attention (llama.cpp before PR #12801, Ollama's old runner, ik_llama.cpp mla=0).
MLA_LAYOUTS = ("latent", "latent_kv", "full")


# DSA lightning-indexer key cache (LayerSpec.indexer_head_dim values per token and layer):
# "fp8_scaled": fp8 values plus one float32 scale per 128 of them, whatever the KV cache
#   dtype: 128 + 128 // 128 x 4 = 132 B for head_dim 128. vLLM DeepseekV32IndexerCache
#   (models/deepseek_v2.py: head_dim + head_dim // quant_block_size * 4, uint8, one KV head,
#   paged with the MLA layers in the same blocks: UniformTypeKVCacheSpecs.page_size_bytes
#   sums the layers' pages); SGLang NSATokenToKVPool.index_k_with_scale_buffer (the same
#   132 B per token, pages of 64); TensorRT-LLM dsa.py (index_head_dim +
#   index_head_dim // quant_block_size * 4).
# "k": a K-only row of head_dim values in the K cache type (-ctk): llama.cpp
#   llama_kv_cache_dsa keeps a second llama_kv_cache with one KV head of
#   indexer_head_size and as many cells as the main cache, without V for MLA models
#   (ggml-org/llama.cpp PR #21149 / #23346; PR #26474 skips GLM-5.2's shared-indexer layers).
# "kv": mlx-lm deepseek_v32.py keeps the keys in a KVCache whose values are
#   zeros_like(keys): K and V rows of head_dim each in the cache dtype.
INDEXER_LAYOUTS = ("fp8_scaled", "k", "kv")
INDEXER_QUANT_BLOCK = 128
INDEXER_SCALE_BYTES = 4  # float32 scale per INDEXER_QUANT_BLOCK values


@lru_cache(maxsize=64)
def normalize_kv_dtype(kv_dtype: str) -> str:
    """Canonical cache dtype name ("fp16" -> "f16"); raises ValueError for unknown names."""
    name = _DTYPE_ALIASES.get(kv_dtype.lower(), kv_dtype.lower())
    if name not in KV_DTYPE_BLOCKS:
        raise ValueError(f"unknown KV cache dtype {kv_dtype!r}")
    return name


def row_bytes(kv_dtype: str, n_elements: int) -> int:
    """Bytes of one cache row: ceil(n / block elements) x block bytes (ggml_row_size).

    q8_0 is 34/32 B per element, q4_0 18/32 B, f16/bf16 2 B, fp8 1 B.
    """
    block_bytes, block_elements = KV_DTYPE_BLOCKS[normalize_kv_dtype(kv_dtype)]
    return -(-n_elements // block_elements) * block_bytes


def kv_heads_per_rank(n_kv_heads: int, tensor_parallel: int) -> int:
    """KV heads one tensor-parallel rank stores: n_kv / tp, replicated when n_kv < tp.

    vLLM replicates KV heads when tp exceeds their number (each rank keeps >= 1 head).
    """
    return max(1, n_kv_heads // max(1, tensor_parallel))


def layer_row_elements(
    model: ModelSpec, layer: LayerSpec, mla_layout: str, tensor_parallel: int = 1
) -> tuple[int, int]:
    """(K elements, V elements) cached per token in one layer on one rank.

    Plain attention: kv_heads x head_dim_k and kv_heads x head_dim_v. MLA: see MLA_LAYOUTS;
    the latent is not split by tensor parallelism (every rank keeps the whole latent).
    Linear (recurrent) layers cache no per-token rows: (0, 0).
    """
    if layer.attention == "linear":
        return 0, 0
    if layer.attention == "mla" and model.mla is not None:
        return _mla_row_elements(model, mla_layout, tensor_parallel)
    heads = kv_heads_per_rank(layer.n_kv_heads, tensor_parallel)
    return heads * layer.head_dim_k, heads * layer.head_dim_v


def _mla_row_elements(model: ModelSpec, mla_layout: str, tensor_parallel: int) -> tuple[int, int]:
    """MLA per-token elements: latent = (rank + rope, 0); latent_kv = (rank + rope, rank);
    full = (heads x (nope + rope), heads x v_head_dim) with heads split by tensor parallelism."""
    mla = model.mla
    assert mla is not None
    if mla_layout == "latent":
        return mla.kv_lora_rank + mla.qk_rope_head_dim, 0
    if mla_layout == "latent_kv":
        return mla.kv_lora_rank + mla.qk_rope_head_dim, mla.kv_lora_rank
    if mla_layout == "full":
        heads = kv_heads_per_rank(model.n_heads, tensor_parallel)
        return heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim), heads * mla.v_head_dim
    raise ValueError(f"unknown MLA layout {mla_layout!r}; expected one of {MLA_LAYOUTS}")


def layer_bytes_per_token(
    model: ModelSpec,
    layer: LayerSpec,
    *,
    kv_dtype: str,
    mla_layout: str = "latent",
    tensor_parallel: int = 1,
    v_dtype: str | None = None,
) -> tuple[int, int]:
    """(K bytes, V bytes) one layer caches per token on one rank: row_bytes(dtype, elements).

    v_dtype defaults to kv_dtype (llama.cpp's -ctk / -ctv may differ).
    """
    k_elements, v_elements = layer_row_elements(model, layer, mla_layout, tensor_parallel)
    k_bytes = row_bytes(kv_dtype, k_elements) if k_elements else 0
    v_bytes = row_bytes(v_dtype or kv_dtype, v_elements) if v_elements else 0
    return k_bytes, v_bytes


def default_mla_layout(engine: str) -> str:
    """Current MLA layout per engine: every engine now caches only the latent (see MLA_LAYOUTS)."""
    engine_capability(engine)  # ValueError for an engine the estimator does not size
    return "latent"


def default_indexer_layout(engine: str) -> str:
    """The DSA indexer cache layout of an engine (INDEXER_LAYOUTS): mlx "kv", llama.cpp and
    Ollama "k", the paged engines "fp8_scaled"."""
    if engine == "mlx":
        return "kv"
    return "k" if llama_family(engine) else "fp8_scaled"


def indexer_row_bytes(head_dim: int, *, layout: str, kv_dtype: str) -> tuple[int, int]:
    """(K bytes, V bytes) of one layer's DSA indexer key per token (see INDEXER_LAYOUTS).

    fp8_scaled: head_dim + head_dim // 128 x 4 (132 B for 128, any cache dtype); k:
    row_bytes(kv_dtype, head_dim) (256 B in f16, 136 B in q8_0); kv: that row twice.
    """
    if head_dim <= 0:
        return 0, 0
    if layout == "fp8_scaled":
        return head_dim + head_dim // INDEXER_QUANT_BLOCK * INDEXER_SCALE_BYTES, 0
    row = row_bytes(kv_dtype, head_dim)
    if layout == "k":
        return row, 0
    if layout == "kv":
        return row, row
    raise ValueError(f"unknown indexer layout {layout!r}; expected one of {INDEXER_LAYOUTS}")
