"""The text-model parts shared by every architecture parser: common fields and assembly."""

from __future__ import annotations

from dataclasses import dataclass, field

from estimator.model.blocks import BlockPlan, block_tensors, global_tensors, layer_spec
from estimator.model.fields import (
    MAX_EXPERTS,
    MAX_HIDDEN,
    MAX_LAYERS,
    Config,
    get_bool,
    get_int,
    get_opt_int,
    get_rope_scaling,
)
from estimator.model.spec import ConfigError, MLASpec, ModelSpec, RopeScaling, Tensor


@dataclass(frozen=True)
class Defaults:
    """Constructor defaults of a transformers config class, used for absent keys."""

    source: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int | None  # None: same as num_attention_heads
    max_position_embeddings: int
    tie_word_embeddings: bool = False
    head_dim: int | None = None  # None: hidden_size // num_attention_heads


@dataclass(frozen=True)
class Common:
    """Fields every decoder has, with the architecture's defaults applied."""

    hidden: int
    vocab: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate: int
    max_ctx: int
    tied: bool
    rope: RopeScaling | None = None  # rope_scaling / rope_parameters (fields.get_rope_scaling)


def read_common(cfg: Config, d: Defaults) -> Common:
    """Read hidden size, heads, layers, vocab, head_dim, FFN width, context, RoPE scaling
    and tying.

    head_dim = config head_dim, else the class default, else hidden_size // heads.
    """
    hidden = get_int(cfg, "hidden_size", d.hidden_size, maximum=MAX_HIDDEN)
    n_heads = get_int(cfg, "num_attention_heads", d.num_attention_heads)
    n_kv = get_int(cfg, "num_key_value_heads", d.num_key_value_heads or n_heads)
    if n_heads % n_kv:
        raise ConfigError("num_key_value_heads", f"{n_kv} does not divide {n_heads} heads")
    default_hd = d.head_dim if d.head_dim is not None else hidden // n_heads
    head_dim = get_int(cfg, "head_dim", default_hd)
    return Common(
        hidden=hidden,
        vocab=get_int(cfg, "vocab_size", d.vocab_size),
        n_layers=get_int(cfg, "num_hidden_layers", d.num_hidden_layers, maximum=MAX_LAYERS),
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        intermediate=get_int(cfg, "intermediate_size", d.intermediate_size),
        max_ctx=get_int(cfg, "max_position_embeddings", d.max_position_embeddings),
        tied=get_bool(cfg, "tie_word_embeddings", d.tie_word_embeddings),
        rope=get_rope_scaling(cfg),
    )


@dataclass(frozen=True)
class MoE:
    """Model-level expert counts (zeros for dense models)."""

    n_experts: int = 0
    per_token: int = 0
    n_shared: int = 0
    width: int = 0


@dataclass(frozen=True)
class TextArch:
    """What an architecture parser returns: common fields plus one plan per block."""

    model_type: str
    gguf_arch: str
    common: Common
    blocks: tuple[BlockPlan, ...]
    moe: MoE = MoE()
    mla: MLASpec | None = None
    notes: tuple[str, ...] = field(default=())
    is_fallback: bool = False


def read_moe(
    cfg: Config,
    n_key: str,
    k_key: str,
    width_key: str,
    width_default: int,
    n_default: int,
    k_default: int,
) -> MoE:
    """Expert count, experts per token and expert width under this architecture's key names."""
    n = get_int(cfg, n_key, n_default, maximum=MAX_EXPERTS)
    k = get_int(cfg, k_key, k_default)
    if k > n:
        raise ConfigError(k_key, f"{k} experts per token exceeds {n} experts")
    return MoE(n_experts=n, per_token=k, width=get_int(cfg, width_key, width_default))


def opt_window(cfg: Config, key: str = "sliding_window") -> int | None:
    """A sliding-window size, None when absent/null."""
    return get_opt_int(cfg, key)


def check_size(c: Common, moe: MoE) -> None:
    """The size bounds (fields.MAX_LAYERS, MAX_HIDDEN, MAX_EXPERTS) for every parser,
    whichever keys it read them from; ConfigError naming the transformers key."""
    for key, value, most in (
        ("num_hidden_layers", c.n_layers, MAX_LAYERS),
        ("hidden_size", c.hidden, MAX_HIDDEN),
        ("num_experts", moe.n_experts, MAX_EXPERTS),
    ):
        if value > most:
            raise ConfigError(key, f"must be <= {most}, got {value}")


def assemble(
    arch: TextArch, extra_tensors: tuple[Tensor, ...] = (), extra_notes: tuple[str, ...] = ()
) -> ModelSpec:
    """Build the ModelSpec: global tensors, every block's tensors and LayerSpecs."""
    c = arch.common
    check_size(c, arch.moe)
    tensors = global_tensors(c.vocab, c.hidden, c.tied)
    for i, plan in enumerate(arch.blocks):
        tensors += block_tensors(i, c.hidden, plan)
    return ModelSpec(
        model_type=arch.model_type,
        gguf_arch=arch.gguf_arch,
        is_fallback=arch.is_fallback,
        n_layers=c.n_layers,
        hidden_size=c.hidden,
        vocab_size=c.vocab,
        n_heads=c.n_heads,
        n_kv_heads=c.n_kv_heads,
        head_dim=c.head_dim,
        intermediate_size=c.intermediate,
        n_experts=arch.moe.n_experts,
        n_experts_per_token=arch.moe.per_token,
        n_shared_experts=arch.moe.n_shared,
        moe_intermediate_size=arch.moe.width,
        max_context_tokens=c.max_ctx,
        tie_word_embeddings=c.tied,
        mla=arch.mla,
        layers=tuple(layer_spec(i, plan) for i, plan in enumerate(arch.blocks)),
        tensors=tuple(tensors) + extra_tensors,
        notes=arch.notes + extra_notes,
        rope_scaling=c.rope,
    )
