"""Cells (token slots) each engine allocates per layer: llama.cpp's unified cache padded
to 256, mlx-lm's growing and rotating caches, vLLM's paged blocks.

The rules read only a layer's attention kind and window; sources in each docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.engines import llama_family

if TYPE_CHECKING:
    from estimator.model.spec import LayerSpec

LLAMA_CPP_PAD_CELLS = 256
VLLM_BLOCK_SIZE = 16


def _ceil_to(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def llama_cpp_cells(
    layer: LayerSpec,
    *,
    context_tokens: int,
    sequences: int,
    n_ubatch: int,
    pad_cells: int = LLAMA_CPP_PAD_CELLS,
    swa_full: bool = False,
) -> int:
    """Cells one llama.cpp layer holds for all sequences (unified KV cache).

    Full / MLA layers: n_ctx = pad(context x sequences, 256) (llama-context.cpp).
    Sliding / chunked layers (llama-kv-cache-iswa.cpp):
    pad(min(n_ctx, window x sequences + n_ubatch), 256); with --swa-full they hold n_ctx.
    Linear layers hold no cells (their state is per sequence).
    """
    if layer.attention == "linear":
        return 0
    n_ctx = _ceil_to(context_tokens * sequences, pad_cells)
    if layer.attention in ("sliding", "chunked") and layer.window_tokens and not swa_full:
        swa_cells = min(n_ctx, layer.window_tokens * sequences + n_ubatch)
        return _ceil_to(swa_cells, LLAMA_CPP_PAD_CELLS)
    return n_ctx


def mlx_cells(layer: LayerSpec, *, context_tokens: int, sequences: int) -> int:
    """Cells an mlx-lm cache holds: KVCache grows in steps of 256 tokens per sequence;
    sliding layers use RotatingKVCache(max_size=window) (mlx_lm/models/cache.py)."""
    if layer.attention == "linear":
        return 0
    per_sequence = _ceil_to(context_tokens, 256)
    if layer.attention in ("sliding", "chunked") and layer.window_tokens:
        per_sequence = min(per_sequence, layer.window_tokens)
    return per_sequence * sequences


def paged_cells(
    layer: LayerSpec,
    *,
    context_tokens: int,
    sequences: int,
    block_size: int = VLLM_BLOCK_SIZE,
    max_num_batched_tokens: int = 8192,
) -> int:
    """Token slots vLLM allocates per layer for `sequences` requests of `context_tokens`.

    Full / MLA: cdiv(context, block) blocks (FullAttentionSpec). Sliding:
    cdiv(min(window - 1 + max_num_batched_tokens, context), block) + 1 blocks
    (SlidingWindowSpec: "+1 because the window may not start at a block boundary").
    Chunked: cdiv(min(chunk + max_num_batched_tokens, context), block) blocks
    (ChunkedLocalAttentionSpec). Linear: 0 (state counted per sequence).
    """
    if layer.attention == "linear":
        return 0
    window = layer.window_tokens
    if layer.attention == "sliding" and window:
        tokens = min(window - 1 + max_num_batched_tokens, context_tokens)
        blocks = -(-tokens // block_size) + 1
    elif layer.attention == "chunked" and window:
        tokens = min(window + max_num_batched_tokens, context_tokens)
        blocks = -(-tokens // block_size)
    else:
        blocks = -(-context_tokens // block_size)
    return blocks * block_size * sequences


@dataclass(frozen=True)
class KVSettings:
    """Engine knobs that change the cache size (defaults: llama-server / vllm serve)."""

    n_ubatch: int = 512
    pad_cells: int = LLAMA_CPP_PAD_CELLS
    swa_full: bool = False
    block_size: int = VLLM_BLOCK_SIZE
    max_num_batched_tokens: int = 8192
    tensor_parallel: int = 1


def engine_cells(
    engine: str, layer: LayerSpec, context_tokens: int, sequences: int, settings: KVSettings
) -> int:
    """Dispatch to the engine's cell rule (llama_cpp_cells, mlx_cells, paged_cells).

    The rules read only layer.attention and layer.window_tokens: kv_cache_bytes counts the
    cells once for all layers that share both (rows.CellGroup).
    """
    if engine == "mlx":
        return mlx_cells(layer, context_tokens=context_tokens, sequences=sequences)
    if llama_family(engine):
        return llama_cpp_cells(
            layer,
            context_tokens=context_tokens,
            sequences=sequences,
            n_ubatch=settings.n_ubatch,
            pad_cells=settings.pad_cells,
            swa_full=settings.swa_full,
        )
    return paged_cells(
        layer,
        context_tokens=context_tokens,
        sequences=sequences,
        block_size=settings.block_size,
        max_num_batched_tokens=settings.max_num_batched_tokens,
    )
