"""The generic fallback parser: any decoder-only config, MoE-aware, never a crash on real keys.

It reads the keys most Hugging Face configs share (the transformers naming and the common
aliases of remote-code models), decides per layer whether the FFN is dense or routed and
whether attention is full, sliding or MLA, and lists in the notes every key it used, so a
reader can see what the estimate rests on. Architecture details it cannot know (fused
projections, gates, extra norms, MTP layers) are left out; expect a few % error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.model.blocks import AttnPlan, BlockPlan, FfnPlan, LinearAttn
from estimator.model.fields import (
    MAX_LAYERS,
    Config,
    get_bool,
    get_int,
    get_opt_int,
    get_rope_scaling,
)
from estimator.model.spec import ConfigError, MLASpec, RopeScaling
from estimator.model.text import Common, MoE, TextArch

# Alternative key names, most common first. Values must be positive integers.
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
TOP_K_KEYS = (
    "num_experts_per_tok",
    "moe_k",
    "top_k_experts",
    "num_experts_per_token",
    "experts_per_token",
    "moe_topk",
)
EXPERT_WIDTH_KEYS = ("moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size")
SHARED_WIDTH_KEYS = (
    "shared_expert_intermediate_size",
    "moe_shared_expert_intermediate_size",
    "shared_intermediate_size",
    "share_expert_dim",
)
SHARED_COUNT_KEYS = ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts")
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")
# Per-layer lists or strings a layer count can be derived from.
PATTERN_KEYS = (
    "layer_types",
    "layers_block_type",
    "hybrid_override_pattern",
    "block_configs",
    "mlp_layer_types",
    "hybrid_layer_pattern",
)


class Used:
    """Collects the config keys the fallback read, for the notes."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def first_int(
        self, cfg: Config, keys: tuple[str, ...], default: int | None, minimum: int = 1
    ) -> int | None:
        """The first of `keys` present with a usable integer (records it), else default."""
        for key in keys:
            value = cfg.get(key)
            if isinstance(value, (int, float)) and _is_count(value, minimum):
                self.keys.append(key)
                return int(value)
        return default


def _is_count(value: float, minimum: int) -> bool:
    """An int (or integral finite float) >= minimum; bools are not counts."""
    if isinstance(value, bool):
        return False
    return math.isfinite(value) and value == int(value) and value >= minimum


def layer_count(cfg: Config, used: Used) -> int:
    """num_hidden_layers (or an alias), else the length of a per-layer pattern.

    Nemotron-3 Ultra lists its layers only in layers_block_type; Nemotron-H strings in
    hybrid_override_pattern have one character per layer. Raises ConfigError when none.
    """
    n = used.first_int(cfg, LAYER_KEYS, None)
    if n is None:
        for key in PATTERN_KEYS:
            value = cfg.get(key)
            if isinstance(value, (list, str)) and value:
                used.keys.append(f"len({key})")
                n = len(value)
                break
    if n is None:
        raise ConfigError("num_hidden_layers", "is required (no per-layer pattern to derive it)")
    # Before any block is planned: the parser walks the layers one by one.
    if n > MAX_LAYERS:
        key = used.keys[-1].removeprefix("len(").removesuffix(")")
        raise ConfigError(key, f"must be <= {MAX_LAYERS}, got {n}")
    return n


def read_generic_common(cfg: Config, used: Used) -> Common:
    """Hidden size, heads, KV heads, head_dim, vocab, FFN width, context, tying.

    Missing FFN width: 4 x hidden (GPT-2 convention); missing vocab: 32000 (Llama);
    missing KV heads: the attention heads; head_dim: hidden / heads unless given.
    """
    hidden = used.first_int(cfg, ("hidden_size", "d_model", "n_embd", "dim"), 4096) or 4096
    heads = used.first_int(cfg, ("num_attention_heads", "n_head", "num_heads"), 32) or 32
    kv = (
        used.first_int(
            cfg,
            ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"),
            heads,
        )
        or heads
    )
    if heads % kv:
        kv = heads  # an inconsistent pair: the safe (larger) KV estimate
    head_dim = (
        used.first_int(cfg, ("head_dim", "attention_head_dim", "kv_channels"), hidden // heads)
        or hidden // heads
    )
    return Common(
        hidden=hidden,
        vocab=used.first_int(cfg, ("vocab_size", "padded_vocab_size"), 32000) or 32000,
        n_layers=layer_count(cfg, used),
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
        intermediate=used.first_int(
            cfg, ("intermediate_size", "ffn_hidden_size", "ffn_dim", "n_inner"), 4 * hidden
        )
        or 4 * hidden,
        max_ctx=used.first_int(
            cfg,
            ("max_position_embeddings", "max_sequence_length", "seq_length", "n_positions"),
            4096,
        )
        or 4096,
        tied=_tied(cfg, used),
        rope=_rope(cfg),
    )


def _rope(cfg: Config) -> RopeScaling | None:
    """RoPE scaling when the config states it readably; the fallback parser ignores a
    malformed block rather than refuse a config it can otherwise size."""
    try:
        return get_rope_scaling(cfg)
    except ConfigError:
        return None


def _tied(cfg: Config, used: Used) -> bool:
    """tie_word_embeddings when present; absent means untied (LlamaConfig's default and
    the larger, safe estimate; PretrainedConfig's own default would be tied)."""
    if isinstance(cfg.get("tie_word_embeddings"), bool):
        used.keys.append("tie_word_embeddings")
    return get_bool(cfg, "tie_word_embeddings", False)


@dataclass(frozen=True)
class GenericMoE:
    """Routed and shared experts as the fallback reads them."""

    moe: MoE
    shared_width: int


def read_generic_moe(cfg: Config, c: Common, used: Used) -> GenericMoE:
    """Routed experts (count, top-k, width) and the shared-expert width.

    Width: moe_intermediate_size (or alias), else intermediate_size (Mixtral convention).
    Shared width: an explicit shared width key, else n_shared_experts x expert width.
    """
    n = used.first_int(cfg, EXPERT_KEYS, 0) or 0
    if n <= 1:
        return GenericMoE(MoE(), 0)
    k = used.first_int(cfg, TOP_K_KEYS, 2) or 2
    width = used.first_int(cfg, EXPERT_WIDTH_KEYS, c.intermediate) or c.intermediate
    shared = used.first_int(cfg, SHARED_WIDTH_KEYS, 0, minimum=0) or 0
    count = used.first_int(cfg, SHARED_COUNT_KEYS, 0, minimum=0) or 0
    if not shared and count:
        shared = count * width
    n_shared = count or (1 if shared else 0)
    return GenericMoE(MoE(n, min(k, n), n_shared, width), shared)


def moe_layers(cfg: Config, n_layers: int, used: Used) -> list[bool]:
    """Which layers route to experts, from the first key that says so.

    mlp_layer_types ("dense"/"sparse"); moe_layer_freq as a 0/1 list (MiMo, MiniMax-M3);
    first_k_dense_replace + moe_layer_freq every-k (DeepSeek); decoder_sparse_step +
    mlp_only_layers (Qwen-MoE: (i + 1) % step == 0); else every layer.
    """
    types = cfg.get("mlp_layer_types")
    if isinstance(types, list) and len(types) == n_layers:
        used.keys.append("mlp_layer_types")
        return [t != "dense" for t in types]
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list) and len(freq) == n_layers:
        used.keys.append("moe_layer_freq")
        return [bool(x) for x in freq]
    first_dense = used.first_int(cfg, ("first_k_dense_replace",), 0, minimum=0) or 0
    every = used.first_int(cfg, ("moe_layer_freq",), 1) or 1
    step = used.first_int(cfg, ("decoder_sparse_step",), 1) or 1
    mlp_only = cfg.get("mlp_only_layers")
    dense_set = set(mlp_only) if isinstance(mlp_only, list) else set()
    if dense_set:
        used.keys.append("mlp_only_layers")
    return [
        i >= first_dense
        and (i - first_dense) % every == 0
        and (i + 1) % step == 0
        and i not in dense_set
        for i in range(n_layers)
    ]


def attention_kinds(cfg: Config, n_layers: int, used: Used) -> list[str]:
    """Per-layer "full" / "sliding" / "linear" from layer_types; else all sliding when a
    sliding_window is set without a layer list (Mistral v0.1 convention), else all full."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == n_layers:
        used.keys.append("layer_types")
        return [
            "sliding"
            if "sliding" in str(t) or "local" in str(t)
            else "linear"
            if "linear" in str(t)
            else "full"
            for t in types
        ]
    if get_opt_int(cfg, "sliding_window") and cfg.get("use_sliding_window") is not False:
        used.keys.append("sliding_window")
        return ["sliding"] * n_layers
    return ["full"] * n_layers


def _mla(cfg: Config, used: Used) -> MLASpec | None:
    """DeepSeek-style MLA when kv_lora_rank is set (defaults as DeepseekV3Config)."""
    if not get_opt_int(cfg, "kv_lora_rank"):
        return None
    used.keys += ["kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"]
    return MLASpec(
        kv_lora_rank=get_int(cfg, "kv_lora_rank"),
        q_lora_rank=get_opt_int(cfg, "q_lora_rank"),
        qk_rope_head_dim=get_int(cfg, "qk_rope_head_dim", 64),
        qk_nope_head_dim=get_int(cfg, "qk_nope_head_dim", 128),
        v_head_dim=get_int(cfg, "v_head_dim", 128),
    )


def _linear_attn(cfg: Config, used: Used) -> LinearAttn | None:
    """Gated DeltaNet dims when the Qwen3-Next linear_* keys are present."""
    if "linear_num_value_heads" not in cfg:
        return None
    used.keys.append("linear_*")
    return LinearAttn(
        get_int(cfg, "linear_num_key_heads", 16),
        get_int(cfg, "linear_num_value_heads", 32),
        get_int(cfg, "linear_key_head_dim", 128),
        get_int(cfg, "linear_value_head_dim", 128),
        get_int(cfg, "linear_conv_kernel_dim", 4),
    )


def parse_generic(cfg: Config, model_type: str) -> TextArch:
    """Unknown model_type: a llama-shaped decoder, MoE-aware (see the module docstring).

    Per layer: attention from layer_types / sliding_window / kv_lora_rank (MLA); routed
    experts on the layers moe_layers() selects, dense SwiGLU elsewhere.
    """
    used = Used()
    c = read_generic_common(cfg, used)
    em = read_generic_moe(cfg, c, used)
    sparse_at = moe_layers(cfg, c.n_layers, used) if em.moe.n_experts else [False] * c.n_layers
    kinds = attention_kinds(cfg, c.n_layers, used)
    window = get_opt_int(cfg, "sliding_window")
    mla = _mla(cfg, used)
    lin = _linear_attn(cfg, used)
    full = (
        AttnPlan(
            "mla",
            c.n_heads,
            c.n_heads,
            mla.qk_nope_head_dim + mla.qk_rope_head_dim,
            mla.v_head_dim,
            mla=mla,
        )
        if mla
        else AttnPlan("gqa", c.n_heads, c.n_kv_heads, c.head_dim, c.head_dim)
    )
    sparse = FfnPlan(
        n_experts=em.moe.n_experts, expert_width=em.moe.width, shared_width=em.shared_width
    )
    dense = FfnPlan(width=c.intermediate)
    blocks = []
    for kind, is_sparse in zip(kinds, sparse_at, strict=True):
        attn = full
        if kind == "linear" and lin is not None:
            attn = AttnPlan("deltanet", 0, 0, 0, 0, linear=lin)
        elif kind == "linear":
            kind = "full"  # unknown recurrent layout: cache it as full attention (safe side)
        blocks.append(
            BlockPlan(
                "mla" if mla and attn is full else kind,
                window if kind == "sliding" else None,
                attn,
                sparse if is_sparse else dense,
            )
        )
    note = (
        f"fallback parser: model_type {model_type!r} not recognised; sized as a "
        f"llama-style decoder{' with MoE' if em.moe.n_experts else ''} from keys: "
        + ", ".join(dict.fromkeys(used.keys))
    )
    return TextArch(
        model_type, "llama", c, tuple(blocks), em.moe, mla, notes=(note,), is_fallback=True
    )
