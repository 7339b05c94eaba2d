"""The parsed model: tensors, layers and the ModelSpec contract (docs/estimator-internals.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

# Tensor kinds that belong to the multimodal towers, not the text model.
MULTIMODAL_KINDS = frozenset({"vision", "projector", "audio"})


class ConfigError(ValueError):
    """A config.json the parser cannot read: `field` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Tensor:
    """One weight tensor as llama.cpp names it; shape has the row length (ne[0]) last."""

    name: str
    shape: tuple[int, ...]
    layer: int | None
    kind: str
    n_elements: int = field(default=0)

    def __post_init__(self) -> None:
        count = 1
        for dim in self.shape:
            count *= dim
        object.__setattr__(self, "n_elements", count)

    @property
    def row_length(self) -> int:
        """Elements per row: the dimension a quantization block must divide."""
        return self.shape[-1]

    @property
    def is_matrix(self) -> bool:
        """True for 2-D and stacked 3-D weights; llama.cpp never quantizes 1-D tensors."""
        return len(self.shape) >= 2


@dataclass(frozen=True)
class LayerSpec:
    """Attention and FFN facts of one block, as the KV cache and offload code need them.

    MLA layers: n_kv_heads is 1 and head_dim_k is kv_lora_rank + qk_rope_head_dim (the
    latent plus the shared rope key, 576 for DeepSeek-V3); head_dim_v is kv_lora_rank,
    but llama.cpp and vLLM read V out of the same latent and store nothing extra, so a
    cache sizer must use model.mla rather than add K and V widths.
    Linear layers (Gated DeltaNet, Mamba2): n_kv_heads and head dims are 0; the fixed
    per-sequence state is in linear_state_bytes_per_seq (f32, as llama.cpp stores it).
    Layers with no token mixer at all (Nemotron-H MLP/MoE layers, DeciLM no_op attention)
    are "linear" with a zero state: they cache nothing.
    """

    index: int
    attention: str
    window_tokens: int | None
    n_kv_heads: int
    head_dim_k: int
    head_dim_v: int
    is_moe: bool
    linear_state_bytes_per_seq: int = 0


@dataclass(frozen=True)
class MLASpec:
    """Multi-head latent attention ranks (DeepSeek-V2/V3, Kimi K2)."""

    kv_lora_rank: int
    q_lora_rank: int | None
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class ModelSpec:
    """A parsed config.json: architecture numbers, per-layer specs and every weight tensor."""

    model_type: str
    gguf_arch: str
    is_fallback: bool
    n_layers: int
    hidden_size: int
    vocab_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    n_experts: int
    n_experts_per_token: int
    n_shared_experts: int
    moe_intermediate_size: int
    max_context_tokens: int
    tie_word_embeddings: bool
    mla: MLASpec | None
    layers: tuple[LayerSpec, ...]
    tensors: tuple[Tensor, ...]
    notes: tuple[str, ...]

    # Cached: weights sizing and every speed estimate read these (a sweep once per card and
    # quant); the fields never change, so each is summed once per model.
    @cached_property
    def text_tensors(self) -> tuple[Tensor, ...]:
        """Tensors of the text model (everything except vision/audio towers and projectors)."""
        return tuple(t for t in self.tensors if t.kind not in MULTIMODAL_KINDS)

    @cached_property
    def multimodal_tensors(self) -> tuple[Tensor, ...]:
        """Vision/audio encoder and projector tensors (llama.cpp's mmproj file)."""
        return tuple(t for t in self.tensors if t.kind in MULTIMODAL_KINDS)

    @cached_property
    def params_total(self) -> int:
        """Sum of text-model tensor elements; a tied output head is one tensor, counted once.

        Excludes multimodal towers (params_multimodal) and MTP/next-token-prediction layers.
        """
        return sum(t.n_elements for t in self.text_tensors)

    @cached_property
    def params_expert(self) -> int:
        """Elements of routed-expert tensors (weights and biases), all experts."""
        return sum(t.n_elements for t in self.tensors if t.kind == "expert")

    @cached_property
    def params_active(self) -> int:
        """Parameters read per token: params_total - params_expert x (1 - k/E).

        Includes embeddings and the output head, as in model_configs.csv; shared experts
        are always active.
        """
        if self.n_experts == 0:
            return self.params_total
        inactive = self.params_expert * (self.n_experts - self.n_experts_per_token)
        return self.params_total - inactive // self.n_experts

    @cached_property
    def params_multimodal(self) -> int:
        """Elements of the vision/audio towers and their projectors (0 for text-only)."""
        return sum(t.n_elements for t in self.multimodal_tensors)

    @cached_property
    def params_embedding(self) -> int:
        """Elements of token_embd plus an untied output head."""
        return sum(t.n_elements for t in self.tensors if t.kind in ("embedding", "output"))

    @property
    def is_moe(self) -> bool:
        """True when some layer routes tokens to experts."""
        return self.n_experts > 0
