"""WeightsFormat -> WeightsBreakdown: bytes per tensor, per layer, experts, replication."""

from __future__ import annotations

from dataclasses import dataclass

from estimator.model import ModelSpec, Tensor
from estimator.weights.gguf_rules import gguf_tensor_bytes, gguf_tensor_types
from estimator.weights.gguf_types import DEFAULT_TYPE, RECIPE_BASE, REPACK_BASE, UD_RECIPES
from estimator.weights.hf import HF_FORMATS, hf_tensor_bytes

# GGUF key/value metadata: mostly the tokenizer (token strings, types, scores or BPE
# merges). Llama-3 (128k tokens + 280k merges) carries about 60 bytes per vocab entry,
# Gemma's SentencePiece about 24; 40 is the middle. Tensor infos are ~100 bytes each.
GGUF_TOKENIZER_BYTES_PER_TOKEN = 40
GGUF_TENSOR_INFO_BYTES = 100
GGUF_HEADER_BYTES = 4096


@dataclass(frozen=True)
class WeightsFormat:
    """How the weights are stored: a GGUF file type or an HF dtype / quant scheme. GGUF
    names: llama.cpp's file types, the uploader recipes (RECIPE_BASE, UD_RECIPES) and the
    ARM repacks of Q4_0 (REPACK_BASE), which keep their name and are sized as Q4_0."""

    family: str
    name: str
    group_size: int = 128
    imatrix: bool = True
    file_bytes: int | None = None

    def __post_init__(self) -> None:
        known = DEFAULT_TYPE | RECIPE_BASE | REPACK_BASE | UD_RECIPES
        if self.family == "gguf" and self.name not in known:
            raise ValueError(f"unknown GGUF file type {self.name!r}")
        if self.family == "hf" and self.name not in HF_FORMATS:
            raise ValueError(f"unknown HF weights format {self.name!r}")
        if self.family not in ("gguf", "hf"):
            raise ValueError(f"family must be 'gguf' or 'hf', got {self.family!r}")
        if self.group_size < 1 or (self.file_bytes is not None and self.file_bytes < 1):
            raise ValueError("group_size and file_bytes must be positive")


@dataclass(frozen=True)
class WeightsBreakdown:
    """Weight bytes of a model in one format, split the ways the sizers need."""

    total_bytes: int
    multimodal_bytes: int
    expert_bytes: int
    active_bytes_per_token: int
    per_layer_bytes: tuple[int, ...]
    non_layer_bytes: int
    replicated_bytes: int
    tensor_types: dict[str, str]
    bits_per_weight: float
    metadata_bytes: int = 0
    tensor_bytes: dict[str, int] | None = None


def gguf_metadata_bytes(model: ModelSpec) -> int:
    """GGUF header + tensor infos + tokenizer metadata (estimate, see constants above)."""
    return (
        GGUF_HEADER_BYTES
        + len(model.text_tensors) * GGUF_TENSOR_INFO_BYTES
        + model.vocab_size * GGUF_TOKENIZER_BYTES_PER_TOKEN
    )


def _sized(model: ModelSpec, fmt: WeightsFormat) -> tuple[dict[str, int], dict[str, str]]:
    """Bytes and type of every text tensor (an unsloth Dynamic type: times its fitted
    shift, gguf_tensor_bytes)."""
    if fmt.family == "gguf":
        types = gguf_tensor_types(model, fmt.name, fmt.imatrix)
        return gguf_tensor_bytes(model, fmt.name, types), types
    sizes, types = {}, {}
    for t in model.text_tensors:
        sizes[t.name], types[t.name] = hf_tensor_bytes(t, fmt.name, fmt.group_size, model.is_moe)
    return sizes, types


def _multimodal_bytes(model: ModelSpec, fmt: WeightsFormat) -> int:
    """Vision/audio towers: an F16 mmproj for GGUF (1-D F32), the model dtype for HF
    (quantized checkpoints keep their towers in bf16)."""
    wide = 4 if fmt.family == "hf" and fmt.name == "fp32" else 2
    return sum(t.n_elements * (wide if t.is_matrix else 4) for t in model.multimodal_tensors)


def _is_replicated(t: Tensor, family: str) -> bool:
    """Not split by tensor parallelism: 1-D tensors, routers; in llama.cpp also
    token_embd and output (vLLM shards them over the vocabulary)."""
    if not t.is_matrix or t.kind == "router":
        return True
    return family == "gguf" and t.kind in ("embedding", "output")


def _scale(sizes: dict[str, int], meta: int, file_bytes: int | None) -> tuple[dict[str, int], int]:
    """With a measured file size, scale every tensor (and the metadata) by
    file_bytes / computed so the splits keep their shares; rounding goes to metadata."""
    if file_bytes is None:
        return sizes, meta
    factor = file_bytes / (sum(sizes.values()) + meta)
    scaled = {name: int(size * factor) for name, size in sizes.items()}
    return scaled, file_bytes - sum(scaled.values())


def weights_breakdown(model: ModelSpec, fmt: WeightsFormat) -> WeightsBreakdown:
    """Size the weights tensor by tensor (GGUF: llama.cpp's type rules; HF: dtype rules).

    total_bytes: text model incl. GGUF metadata; multimodal towers separate.
    active_bytes_per_token: non-expert bytes + k/E of expert bytes, minus an untied
    token_embd (a row lookup, not a full read). bits_per_weight: 8 x tensor bytes /
    params_total (metadata excluded).
    """
    sizes, types = _sized(model, fmt)
    meta = gguf_metadata_bytes(model) if fmt.family == "gguf" else 0
    sizes, meta = _scale(sizes, meta, fmt.file_bytes)
    per_layer = [0] * model.n_layers
    expert = replicated = non_layer = 0
    for t in model.text_tensors:
        size = sizes[t.name]
        if t.layer is None:
            non_layer += size
        else:
            per_layer[t.layer] += size
        expert += size if t.kind == "expert" else 0
        replicated += size if _is_replicated(t, fmt.family) else 0
    tensor_total = sum(sizes.values())
    active = tensor_total - expert
    if model.n_experts:
        active += expert * model.n_experts_per_token // model.n_experts
    if not model.tie_word_embeddings:
        active -= sizes.get("token_embd", 0)
    return WeightsBreakdown(
        total_bytes=tensor_total + meta,
        multimodal_bytes=_multimodal_bytes(model, fmt),
        expert_bytes=expert,
        active_bytes_per_token=active,
        per_layer_bytes=tuple(per_layer),
        non_layer_bytes=non_layer + meta,
        replicated_bytes=replicated,
        tensor_types=types,
        bits_per_weight=8 * tensor_total / model.params_total,
        metadata_bytes=meta,
        tensor_bytes=sizes,
    )


def tp_shard_bytes(breakdown: WeightsBreakdown, tp: int) -> int:
    """Per-device weight bytes under tensor parallelism of degree tp:
    replicated + ceil((total - replicated) / tp). Multimodal towers excluded."""
    if tp < 1:
        raise ValueError(f"tp must be >= 1, got {tp}")
    split = breakdown.total_bytes - breakdown.replicated_bytes
    return breakdown.replicated_bytes + -(-split // tp)
