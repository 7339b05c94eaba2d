"""A model's cache rows: per-cell bytes of every layer, grouped by attention kind and
window, computed once per model and cache type; the per-token sums built on them.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from estimator.kv.layout import indexer_row_bytes, layer_bytes_per_token

if TYPE_CHECKING:
    from estimator.model.spec import LayerSpec, ModelSpec

_LayerRow = tuple["LayerSpec", int, int]  # a layer and its (K, V) bytes per cell


@dataclass(frozen=True)
class CellGroup:
    """Layers of one attention kind and window: engine_cells gives each the same cells."""

    layer: LayerSpec  # the group's first layer; engine_cells reads only attention and window
    k_row_bytes: int  # summed over the group's layers
    v_row_bytes: int


@dataclass(frozen=True)
class KindRows:
    """What the layers of one attention kind cache per cell: a KVPart before the cells."""

    attention: str
    n_layers: int
    k_bytes_per_cell: int
    v_bytes_per_cell: int
    state_bytes_per_seq: int
    groups: tuple[CellGroup, ...]


class _ModelKey:
    """A cache key that stands for one ModelSpec object.

    Hashing the frozen spec itself walks every tensor (50-170 us, more than the arithmetic
    it would save); the key compares by identity instead and holds only a weak reference,
    so a cache entry neither keeps a model alive nor matches a later object that reuses
    its id.
    """

    __slots__ = ("_id", "_ref")

    def __init__(self, model: ModelSpec) -> None:
        self._ref = weakref.ref(model)
        self._id = id(model)

    @property
    def model(self) -> ModelSpec | None:
        """The model, or None once it has been garbage-collected."""
        return self._ref()

    def __hash__(self) -> int:
        return self._id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _ModelKey) or other._id != self._id:
            return False
        model = self.model
        return model is not None and model is other.model


def cache_rows(
    model: ModelSpec,
    kv_dtype: str,
    v_dtype: str | None,
    mla_layout: str,
    tensor_parallel: int,
    indexer_layout: str = "fp8_scaled",
) -> tuple[KindRows, ...]:
    """Per-cell bytes of every layer (layer_bytes_per_token), grouped by attention kind in
    the order the kinds first appear, and within a kind by window; DSA indexer keys come
    last as kind "indexer". The same for every context and batch, so a capacity search
    computes it once per model and cache type."""
    return _rows_for(
        _ModelKey(model), kv_dtype, v_dtype, mla_layout, tensor_parallel, indexer_layout
    )


@lru_cache(maxsize=1024)
def _rows_for(
    key: _ModelKey,
    kv_dtype: str,
    v_dtype: str | None,
    mla_layout: str,
    tensor_parallel: int,
    indexer_layout: str,
) -> tuple[KindRows, ...]:
    model = key.model
    assert model is not None  # the caller holds the model while it asks
    by_kind: dict[str, list[_LayerRow]] = {}
    indexer: list[_LayerRow] = []
    for layer in model.layers:  # in model order: a bad dtype or layout fails on the same layer
        k_row, v_row = layer_bytes_per_token(
            model,
            layer,
            kv_dtype=kv_dtype,
            mla_layout=mla_layout,
            tensor_parallel=tensor_parallel,
            v_dtype=v_dtype,
        )
        by_kind.setdefault(layer.attention, []).append((layer, k_row, v_row))
        if layer.indexer_head_dim:
            # Replicated on every tensor-parallel rank, like the MLA latent beside it.
            ix_k, ix_v = indexer_row_bytes(
                layer.indexer_head_dim, layout=indexer_layout, kv_dtype=kv_dtype
            )
            indexer.append((layer, ix_k, ix_v))
    kinds = [_kind_rows(attention, rows) for attention, rows in by_kind.items()]
    if indexer:  # its cells follow the owning MLA layer's (engine_cells reads that layer)
        kinds.append(_kind_rows("indexer", indexer))
    return tuple(kinds)


def _kind_rows(attention: str, rows: list[_LayerRow]) -> KindRows:
    """One attention kind's per-cell bytes, its layers grouped by window."""
    by_window: dict[int | None, list[_LayerRow]] = {}
    for row in rows:
        by_window.setdefault(row[0].window_tokens, []).append(row)
    return KindRows(
        attention,
        n_layers=len(rows),
        k_bytes_per_cell=sum(k_row for _, k_row, _ in rows),
        v_bytes_per_cell=sum(v_row for _, _, v_row in rows),
        state_bytes_per_seq=sum(layer.linear_state_bytes_per_seq for layer, _, _ in rows),
        groups=tuple(
            CellGroup(group[0][0], sum(k for _, k, _ in group), sum(v for _, _, v in group))
            for group in by_window.values()
        ),
    )


def kv_bytes_per_token(
    model: ModelSpec,
    *,
    kv_dtype: str = "f16",
    mla_layout: str = "latent",
    tensor_parallel: int = 1,
    v_dtype: str | None = None,
    indexer_layout: str = "fp8_scaled",
) -> int:
    """Bytes per token summed over every layer with a per-token cache, on one rank.

    Sliding/chunked layers count in full (no window cap) and linear layers not at all: this
    is the divisor vLLM uses for "GPU KV cache size" (tokens) and the marginal cost of one
    more token in full-attention layers. Llama-3.1-8B f16: 32 x 2 x 8 x 128 x 2 = 131,072 B.
    DSA models add their indexer keys (indexer_row_bytes; the default layout is vLLM's):
    DeepSeek-V3.2 bf16 61 x (576 x 2 + 132) = 70,272 + 8,052 = 78,324 B.
    """
    rows = cache_rows(model, kv_dtype, v_dtype, mla_layout, tensor_parallel, indexer_layout)
    return sum(kind.k_bytes_per_cell + kind.v_bytes_per_cell for kind in rows)


def kv_read_split(
    model: ModelSpec, *, kv_dtype: str = "f16", v_dtype: str | None = None
) -> tuple[int, int, int]:
    """(full-attention K+V bytes per token, sliding-window K+V bytes per token, largest
    window), summed over layers for one sequence: what one decode step reads per position
    of context. Sliding and chunked layers read at most their window; the speed model
    caps them there (speed.DecodeWork). DSA indexer keys are left out: the speed model
    does not yet split DSA decode into the indexer scan (all keys) and the top-k MLA read
    (index_topk positions), so the split stays what it was for those models."""
    full = windowed = window = 0
    for kind in cache_rows(model, kv_dtype, v_dtype, "latent", 1):
        if kind.attention == "indexer":
            continue
        for group in kind.groups:
            layer = group.layer
            if layer.attention in ("sliding", "chunked") and layer.window_tokens:
                windowed += group.k_row_bytes + group.v_row_bytes
                window = max(window, layer.window_tokens)
            else:
                full += group.k_row_bytes + group.v_row_bytes
    return full, windowed, window
