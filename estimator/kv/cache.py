"""The KV cache of one engine instance: every layer's rows x the engine's cells, plus
the fixed state of linear layers; totals cover every tensor-parallel rank.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from estimator.engines import llama_family
from estimator.kv.cells import KVSettings, engine_cells
from estimator.kv.layout import (
    KV_DTYPE_BLOCKS,
    default_indexer_layout,
    default_mla_layout,
    normalize_kv_dtype,
)
from estimator.kv.rows import KindRows, cache_rows

if TYPE_CHECKING:
    from estimator.model.spec import ModelSpec


@dataclass(frozen=True)
class KVPart:
    """The cache of all layers of one attention kind."""

    attention: str  # "full" | "sliding" | "chunked" | "mla" | "linear" | "indexer"
    n_layers: int
    cells_per_layer: int  # tokens held per layer, all sequences together (0 for linear)
    k_bytes_per_cell: int  # summed over the part's layers
    v_bytes_per_cell: int  # summed over the part's layers
    k_bytes: int
    v_bytes: int
    state_bytes: int  # fixed recurrent state, all sequences (linear layers only)
    total_bytes: int


@dataclass(frozen=True)
class KVCache:
    """KV cache of one engine instance (all sequences, all tensor-parallel ranks)."""

    engine: str
    kv_dtype: str
    context_tokens: int  # per sequence, as requested
    sequences: int
    cells: int  # cells of a full-attention layer after padding / block rounding
    total_bytes: int
    k_bytes: int
    v_bytes: int
    state_bytes: int
    bytes_per_token: int  # all attention layers, as if every layer held every token
    effective_bytes_per_token: float  # total_bytes / (context_tokens x sequences)
    per_rank_bytes: int  # one tensor-parallel rank (== total_bytes at tensor_parallel 1)
    mla_layout: str | None
    parts: tuple[KVPart, ...]  # by attention kind; the DSA indexer keys are "indexer"
    notes: tuple[str, ...]
    indexer_bytes: int = 0  # DSA indexer key cache, all ranks (included in total_bytes)


def _check_v_dtype(engine: str, v_dtype: str, flash_attention: bool) -> None:
    """llama.cpp refuses a quantized V cache without flash attention (llama-context.cpp:
    "quantized V cache was requested, but this requires Flash Attention")."""
    quantized = KV_DTYPE_BLOCKS[normalize_kv_dtype(v_dtype)][1] > 1
    if llama_family(engine) and quantized and not flash_attention:
        raise ValueError("llama.cpp needs flash attention for a quantized V cache")


def kv_cache_bytes(
    model: ModelSpec,
    *,
    engine: str,
    context_tokens: int,
    sequences: int = 1,
    kv_dtype: str = "f16",
    v_dtype: str | None = None,
    n_ubatch: int = 512,
    mla_layout: str | None = None,
    flash_attention: bool = True,
    settings: KVSettings | None = None,
    indexer_layout: str | None = None,
) -> KVCache:
    """KV cache bytes for `sequences` sequences of `context_tokens` tokens each.

    Sum over layers of cells(layer) x (K row bytes + V row bytes), plus the fixed state of
    linear layers x sequences. Cells follow the engine (llama_cpp_cells / mlx_cells /
    paged_cells). DSA indexer keys take the cells of their MLA layer in the engine's
    layout (default_indexer_layout) and form the part "indexer". MTP /
    next-token-prediction layers are not in model.layers and get no cache: llama.cpp sets
    n_layer_kv_from_start = n_layer - nextn_predict_layers, vLLM allocates them only with
    MTP speculative decoding. Excludes compute buffers.
    """
    settings = settings or KVSettings()
    if settings.n_ubatch != n_ubatch:
        settings = replace(settings, n_ubatch=n_ubatch)
    layout = mla_layout or default_mla_layout(engine)
    ix_layout = indexer_layout or default_indexer_layout(engine)
    dtype_v = normalize_kv_dtype(v_dtype or kv_dtype)
    _check_v_dtype(engine, dtype_v, flash_attention)
    tp = 1 if llama_family(engine) else settings.tensor_parallel
    rows = cache_rows(model, kv_dtype, dtype_v, layout, tp, ix_layout)
    parts = _parts(rows, engine, context_tokens, sequences, settings)
    cache = _assemble(
        model, engine, context_tokens, sequences, kv_dtype, dtype_v, layout, tp, parts
    )
    return _with_indexer_note(cache, ix_layout, tp)


def _with_indexer_note(cache: KVCache, layout: str, tp: int) -> KVCache:
    """Name the indexer part's bytes on the cache (indexer_bytes) and in its notes."""
    part = next((p for p in cache.parts if p.attention == "indexer"), None)
    if part is None:
        return cache
    per_layer = (part.k_bytes_per_cell + part.v_bytes_per_cell) // part.n_layers
    note = f"DSA indexer key cache ({layout}): {part.n_layers} layers x {per_layer} B per token"
    return replace(cache, indexer_bytes=part.total_bytes * tp, notes=(*cache.notes, note))


def _parts(
    rows: tuple[KindRows, ...],
    engine: str,
    context_tokens: int,
    sequences: int,
    settings: KVSettings,
) -> tuple[KVPart, ...]:
    """Per-attention-kind totals, in the order the kinds first appear in the model: each
    group's cells (engine_cells) x its summed row bytes, plus the linear state x sequences."""
    parts = []
    for kind in rows:
        max_cells = k_bytes = v_bytes = 0
        for group in kind.groups:
            cells = engine_cells(engine, group.layer, context_tokens, sequences, settings)
            max_cells = max(max_cells, cells)
            k_bytes += cells * group.k_row_bytes
            v_bytes += cells * group.v_row_bytes
        state = kind.state_bytes_per_seq * sequences
        parts.append(
            KVPart(
                kind.attention,
                kind.n_layers,
                max_cells,
                kind.k_bytes_per_cell,
                kind.v_bytes_per_cell,
                k_bytes,
                v_bytes,
                state,
                k_bytes + v_bytes + state,
            )
        )
    return tuple(parts)


def _assemble(
    model: ModelSpec,
    engine: str,
    context_tokens: int,
    sequences: int,
    kv_dtype: str,
    v_dtype: str,
    layout: str,
    tp: int,
    parts: tuple[KVPart, ...],
) -> KVCache:
    """Fold the parts into one KVCache; totals cover every tensor-parallel rank."""
    per_rank = k_bytes = v_bytes = state = per_token = 0
    full_cells: list[int] = []
    for part in parts:
        per_rank += part.total_bytes
        k_bytes += part.k_bytes
        v_bytes += part.v_bytes
        state += part.state_bytes
        per_token += part.k_bytes_per_cell + part.v_bytes_per_cell
        if part.attention in ("full", "mla"):
            full_cells.append(part.cells_per_layer)
    tokens = max(1, context_tokens * sequences)
    notes: list[str] = []
    if model.mla is not None:
        notes.append(f"MLA cache layout: {layout}")
    if tp > 1 and model.mla is not None and layout != "full":
        # MLA's latent is one vector per token shared by all heads: every rank keeps it all
        notes.append(f"MLA latent cache replicated on each of {tp} tensor-parallel ranks")
    elif tp > 1:
        notes.append(f"KV heads split over {tp} tensor-parallel ranks")
    return KVCache(
        engine=engine,
        kv_dtype=normalize_kv_dtype(kv_dtype),
        context_tokens=context_tokens,
        sequences=sequences,
        cells=max(full_cells, default=0),
        total_bytes=per_rank * tp,
        k_bytes=k_bytes * tp,
        v_bytes=v_bytes * tp,
        state_bytes=state * tp,
        bytes_per_token=per_token * tp,
        effective_bytes_per_token=per_rank * tp / tokens,
        per_rank_bytes=per_rank,
        mla_layout=layout if model.mla is not None else None,
        parts=parts,
        notes=tuple(notes),
    )
