"""KV cache size per attention variant, engine cache layout and cache dtype.

Every figure is exact arithmetic over the layer specs; nothing here is fitted.

Layouts by engine (sources in each docstring):
- llama.cpp / Ollama / MLX: one cache row per cell; the cell count is the total context of
  all sequences padded to 256 (llama-context.cpp: ``cparams.n_ctx = GGML_PAD(n_ctx, 256)``;
  builds before PR #17046 padded to 256 with flash attention, 32 without). Sliding-window
  and chunked layers get a second, smaller cache (llama-kv-cache-iswa.cpp).
- vLLM / SGLang / TensorRT-LLM: paged blocks of ``block_size`` tokens; a sliding-window
  layer holds at most ``window - 1 + max_num_batched_tokens`` tokens plus one block
  (vLLM ``SlidingWindowSpec.max_memory_usage_bytes``).

DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): every layer with a lightning indexer also
caches one indexer key per token, in the same cells as its MLA latent (layout.INDEXER_LAYOUTS).

Modules: layout (what one layer caches per token), rows (a model's rows, cached per model),
cells (each engine's cells per layer), cache (kv_cache_bytes), budget (what a budget holds).
Public names: KVCache, KVPart, KVSettings, kv_cache_bytes, kv_bytes_per_token, kv_read_split,
kv_tokens_that_fit, vllm_max_concurrency, max_context_that_fits, engine_cells, row_bytes,
layer_bytes_per_token, indexer_row_bytes, normalize_kv_dtype, default_mla_layout,
default_indexer_layout.
"""

from estimator.kv.budget import kv_tokens_that_fit, max_context_that_fits, vllm_max_concurrency
from estimator.kv.cache import KVCache, KVPart, kv_cache_bytes
from estimator.kv.cells import KVSettings, engine_cells
from estimator.kv.layout import (
    default_indexer_layout,
    default_mla_layout,
    indexer_row_bytes,
    layer_bytes_per_token,
    normalize_kv_dtype,
    row_bytes,
)
from estimator.kv.rows import kv_bytes_per_token, kv_read_split

__all__ = [
    "KVCache",
    "KVPart",
    "KVSettings",
    "default_indexer_layout",
    "default_mla_layout",
    "engine_cells",
    "indexer_row_bytes",
    "kv_bytes_per_token",
    "kv_cache_bytes",
    "kv_read_split",
    "kv_tokens_that_fit",
    "layer_bytes_per_token",
    "max_context_that_fits",
    "normalize_kv_dtype",
    "row_bytes",
    "vllm_max_concurrency",
]
