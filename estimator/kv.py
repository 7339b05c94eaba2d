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
caches one indexer key per token, in the same cells as its MLA latent (INDEXER_LAYOUTS).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from estimator.model.spec import LayerSpec, ModelSpec

LLAMA_CPP_LIKE = frozenset({"llama.cpp", "ollama", "mlx"})
PAGED_ENGINES = frozenset({"vllm", "sglang", "tensorrt-llm"})
ENGINES = LLAMA_CPP_LIKE | PAGED_ENGINES

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
LLAMA_CPP_PAD_CELLS = 256
VLLM_BLOCK_SIZE = 16

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


def _ceil_to(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


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


def default_indexer_layout(engine: str) -> str:
    """The DSA indexer cache layout of an engine (INDEXER_LAYOUTS): mlx "kv", llama.cpp and
    Ollama "k", the paged engines "fp8_scaled"."""
    if engine == "mlx":
        return "kv"
    if engine in LLAMA_CPP_LIKE:
        return "k"
    if engine in PAGED_ENGINES:
        return "fp8_scaled"
    raise ValueError(f"unknown engine {engine!r}; expected one of {sorted(ENGINES)}")


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
    rows = _cache_rows(model, kv_dtype, v_dtype, mla_layout, tensor_parallel, indexer_layout)
    return sum(kind.k_bytes_per_cell + kind.v_bytes_per_cell for kind in rows)


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
    cells once for all layers that share both (_CellGroup).
    """
    if engine == "mlx":
        return mlx_cells(layer, context_tokens=context_tokens, sequences=sequences)
    if engine in LLAMA_CPP_LIKE:
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


_LayerRow = tuple["LayerSpec", int, int]  # a layer and its (K, V) bytes per cell


@dataclass(frozen=True)
class _CellGroup:
    """Layers of one attention kind and window: engine_cells gives each the same cells."""

    layer: LayerSpec  # the group's first layer; engine_cells reads only attention and window
    k_row_bytes: int  # summed over the group's layers
    v_row_bytes: int


@dataclass(frozen=True)
class _KindRows:
    """What the layers of one attention kind cache per cell: a KVPart before the cells."""

    attention: str
    n_layers: int
    k_bytes_per_cell: int
    v_bytes_per_cell: int
    state_bytes_per_seq: int
    groups: tuple[_CellGroup, ...]


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


def _cache_rows(
    model: ModelSpec,
    kv_dtype: str,
    v_dtype: str | None,
    mla_layout: str,
    tensor_parallel: int,
    indexer_layout: str = "fp8_scaled",
) -> tuple[_KindRows, ...]:
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
) -> tuple[_KindRows, ...]:
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


def _kind_rows(attention: str, rows: list[_LayerRow]) -> _KindRows:
    """One attention kind's per-cell bytes, its layers grouped by window."""
    by_window: dict[int | None, list[_LayerRow]] = {}
    for row in rows:
        by_window.setdefault(row[0].window_tokens, []).append(row)
    return _KindRows(
        attention,
        n_layers=len(rows),
        k_bytes_per_cell=sum(k_row for _, k_row, _ in rows),
        v_bytes_per_cell=sum(v_row for _, _, v_row in rows),
        state_bytes_per_seq=sum(layer.linear_state_bytes_per_seq for layer, _, _ in rows),
        groups=tuple(
            _CellGroup(group[0][0], sum(k for _, k, _ in group), sum(v for _, _, v in group))
            for group in by_window.values()
        ),
    )


def default_mla_layout(engine: str) -> str:
    """Current MLA layout per engine: every engine now caches only the latent (see MLA_LAYOUTS)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {sorted(ENGINES)}")
    return "latent"


def _check_v_dtype(engine: str, v_dtype: str, flash_attention: bool) -> None:
    """llama.cpp refuses a quantized V cache without flash attention (llama-context.cpp:
    "quantized V cache was requested, but this requires Flash Attention")."""
    quantized = KV_DTYPE_BLOCKS[normalize_kv_dtype(v_dtype)][1] > 1
    if engine in LLAMA_CPP_LIKE and quantized and not flash_attention:
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
    tp = settings.tensor_parallel if engine in PAGED_ENGINES else 1
    rows = _cache_rows(model, kv_dtype, dtype_v, layout, tp, ix_layout)
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
    rows: tuple[_KindRows, ...],
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


def kv_tokens_that_fit(
    model: ModelSpec,
    budget_bytes: int,
    *,
    kv_dtype: str = "bf16",
    mla_layout: str = "latent",
    block_size: int = VLLM_BLOCK_SIZE,
    tensor_parallel: int = 1,
) -> int:
    """vLLM's "GPU KV cache size" in tokens for a per-rank KV budget.

    blocks = budget // (block_size x bytes_per_token), tokens = blocks x block_size, with
    bytes_per_token over every attention layer (kv_bytes_per_token, per rank). vLLM's hybrid
    allocator reports num_blocks // n_groups x block_size with each group's tensors shared,
    which is the same figure to within one block: sliding layers count in full here too.
    """
    per_token = kv_bytes_per_token(
        model, kv_dtype=kv_dtype, mla_layout=mla_layout, tensor_parallel=tensor_parallel
    )
    if per_token == 0 or budget_bytes <= 0:
        return 0
    return int(budget_bytes // (block_size * per_token)) * block_size


def vllm_max_concurrency(
    model: ModelSpec,
    *,
    kv_tokens: int,
    max_model_len: int,
    kv_dtype: str = "bf16",
    settings: KVSettings | None = None,
) -> float:
    """vLLM's "Maximum concurrency for N tokens per request": KV pool / one request's need.

    pool = kv_tokens x bytes_per_token; one request needs paged_cells(layer, max_model_len)
    x row bytes summed over layers, so sliding windows lower the need
    (get_max_concurrency_for_kv_cache_config in vllm/v1/core/kv_cache_utils.py).
    """
    settings = settings or KVSettings()
    tp = settings.tensor_parallel
    per_token = kv_bytes_per_token(model, kv_dtype=kv_dtype, tensor_parallel=tp)
    cache = kv_cache_bytes(
        model,
        engine="vllm",
        context_tokens=max_model_len,
        kv_dtype=kv_dtype,
        settings=settings,
    )
    need = (cache.total_bytes - cache.state_bytes) // tp
    return kv_tokens * per_token / need if need else float("inf")


def max_context_that_fits(
    model: ModelSpec,
    budget_bytes: int,
    *,
    engine: str,
    sequences: int = 1,
    kv_dtype: str = "f16",
    mla_layout: str | None = None,
    settings: KVSettings | None = None,
) -> int:
    """Largest per-sequence context whose KV cache (kv_cache_bytes) fits in budget_bytes.

    Bisection over context tokens (the cache never shrinks as context grows); 0 if even
    one token does not fit. Capped at the longest context the config allows, RoPE scaling
    included (ModelSpec.extended_context_tokens).
    """

    def fits(tokens: int) -> bool:
        cache = kv_cache_bytes(
            model,
            engine=engine,
            context_tokens=tokens,
            sequences=sequences,
            kv_dtype=kv_dtype,
            mla_layout=mla_layout,
            settings=settings,
        )
        return cache.total_bytes <= budget_bytes

    low, high = 0, max(1, model.extended_context_tokens)
    if fits(high):
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


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
    for kind in _cache_rows(model, kv_dtype, v_dtype, "latent", 1):
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
