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
    # DeepSeek sparse attention (DSA): width of the lightning-indexer key this layer caches
    # per token (index_head_dim, 128 for DeepSeek-V3.2 and GLM-5); 0 for layers without an
    # indexer of their own (every other architecture, GLM-5.2's "shared" indexer layers).
    # estimator/kv/ sizes the indexer cache per engine from it.
    indexer_head_dim: int = 0


@dataclass(frozen=True)
class MLASpec:
    """Multi-head latent attention ranks (DeepSeek-V2/V3, Kimi K2)."""

    kv_lora_rank: int
    q_lora_rank: int | None
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


# RoPE scaling types whose config already states the extended max_position_embeddings
# (vLLM _get_and_verify_max_len leaves the length alone for them; "su" is longrope's old name).
ROPE_TYPES_WITHOUT_EXTENSION = frozenset({"longrope", "su", "llama3", "default"})


@dataclass(frozen=True)
class RopeScaling:
    """config.json rope_scaling (transformers < 5) or rope_parameters (transformers 5).

    type: "yarn", "linear", "dynamic", "longrope", "llama3", ... (the "rope_type" key, or
    the older "type"); factor: the scale (None when the type has none, e.g. longrope);
    original_max_position_embeddings: the pre-training length the factor applies to (in
    the dict, or top-level for Phi-3's longrope), None when absent.
    """

    type: str
    factor: float | None
    original_max_position_embeddings: int | None

    def extended_tokens(self, max_position_embeddings: int) -> int:
        """The longest context this scaling allows, as vLLM derives max_model_len
        (vllm/config/model.py _get_and_verify_max_len): yarn -> original x factor;
        longrope / llama3 -> max_position_embeddings as given (their configs already state
        the extended length); any other type -> max_position_embeddings x factor. Never
        below max_position_embeddings. Qwen3 with the card's YaRN block: 32,768 x 4 =
        131,072; DeepSeek-V3: 4,096 x 40 = 163,840 (its max_position_embeddings)."""
        if self.type in ROPE_TYPES_WITHOUT_EXTENSION or not self.factor:
            return max_position_embeddings
        base = max_position_embeddings
        if self.type == "yarn" and self.original_max_position_embeddings:
            base = self.original_max_position_embeddings
        return max(max_position_embeddings, int(base * self.factor))


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
    # config.json rope_scaling / rope_parameters; None without a scaling type. See the
    # properties native_context_tokens, extended_context_tokens and rope_scaling_type.
    # max_context_tokens stays max_position_embeddings as the config states it.
    rope_scaling: RopeScaling | None = None

    @property
    def rope_scaling_type(self) -> str | None:
        """The RoPE scaling type of config.json ("yarn", "llama3", ...), None without one."""
        return self.rope_scaling.type if self.rope_scaling else None

    @property
    def native_context_tokens(self) -> int:
        """The context trained without RoPE extension: the scaling's
        original_max_position_embeddings (DeepSeek-V3 4,096, Llama 3.1 8,192), capped at
        max_position_embeddings; without one, max_position_embeddings itself."""
        original = self.rope_scaling.original_max_position_embeddings if self.rope_scaling else None
        return min(original, self.max_context_tokens) if original else self.max_context_tokens

    @property
    def extended_context_tokens(self) -> int:
        """The longest context config.json allows, RoPE scaling included
        (RopeScaling.extended_tokens); max_position_embeddings without a scaling type."""
        if self.rope_scaling is None:
            return self.max_context_tokens
        return self.rope_scaling.extended_tokens(self.max_context_tokens)

    def allowed_context_tokens(self, stated_tokens: int | None = None) -> int:
        """The longest context to accept: the config's extended length, or a longer one a
        model card states for RoPE scaling (the catalog's rope_scaling_max_context_tokens:
        Qwen3-8B's card, 131,072 with YaRN, while its config.json says 40,960 and has no
        rope_scaling block)."""
        return max(self.extended_context_tokens, stated_tokens or 0)

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
