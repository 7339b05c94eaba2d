"""Parsers for dense decoders: llama, mistral, granite, qwen2, qwen3, phi3, gemma2, gemma3.

Defaults for absent keys are the constructor defaults of transformers' config classes
(src/transformers/models/<name>/configuration_<name>.py), cited per entry.
"""

from __future__ import annotations

from estimator.model.blocks import AttnPlan, BlockPlan, FfnPlan
from estimator.model.fields import Config, get_bool, get_int, get_str_list
from estimator.model.spec import ConfigError
from estimator.model.text import Common, Defaults, TextArch, opt_window, read_common

# LlamaConfig: vocab 32000, hidden 4096, intermediate 11008, 32 layers, 32 heads,
# num_key_value_heads None -> heads, max_position_embeddings 2048, untied.
LLAMA = Defaults("transformers LlamaConfig", 32000, 4096, 11008, 32, 32, None, 2048)
# GraniteConfig mirrors LlamaConfig's sizes.
GRANITE = Defaults("transformers GraniteConfig", 32000, 4096, 11008, 32, 32, None, 2048)
# MistralConfig: intermediate 14336, kv heads 8, max_position_embeddings 4096*32,
# sliding_window 4096 (explicit null in v0.2+ configs turns it off).
MISTRAL = Defaults("transformers MistralConfig", 32000, 4096, 14336, 32, 32, 8, 131072)
# Qwen2Config: vocab 151936, intermediate 22016, kv heads 32, max_position 32768.
QWEN2 = Defaults("transformers Qwen2Config", 151936, 4096, 22016, 32, 32, 32, 32768)
# Qwen3Config: as Qwen2Config plus head_dim 128.
QWEN3 = Defaults("transformers Qwen3Config", 151936, 4096, 22016, 32, 32, 32, 32768, head_dim=128)
# Phi3Config: vocab 32064, hidden 3072, intermediate 8192, kv None -> heads, max 4096.
PHI3 = Defaults("transformers Phi3Config", 32064, 3072, 8192, 32, 32, None, 4096)
# Gemma2Config: vocab 256000, hidden 2304, intermediate 9216, 26 layers, 8 heads, 4 kv,
# head_dim 256, max 8192, tie_word_embeddings True, sliding_window 4096.
GEMMA2 = Defaults(
    "transformers Gemma2Config",
    256000,
    2304,
    9216,
    26,
    8,
    4,
    8192,
    tie_word_embeddings=True,
    head_dim=256,
)
# Gemma3TextConfig: vocab 262208, hidden 2304, intermediate 9216, 26 layers, 8 heads,
# 4 kv, head_dim 256, max 131072, tied, sliding_window 4096, sliding_window_pattern 6.
GEMMA3 = Defaults(
    "transformers Gemma3TextConfig",
    262208,
    2304,
    9216,
    26,
    8,
    4,
    131072,
    tie_word_embeddings=True,
    head_dim=256,
)


def gqa(
    c: Common,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    sinks: bool = False,
    gated_q: bool = False,
) -> AttnPlan:
    """Grouped-query attention with the model's heads and head_dim (K and V widths equal)."""
    return AttnPlan(
        "gqa",
        c.n_heads,
        c.n_kv_heads,
        c.head_dim,
        c.head_dim,
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        qk_norm=qk_norm,
        sinks=sinks,
        gated_q=gated_q,
    )


def layer_types(cfg: Config, n_layers: int) -> list[str] | None:
    """transformers' layer_types list ("full_attention" / "sliding_attention" / ...)."""
    types = get_str_list(cfg, "layer_types")
    if types is not None and len(types) != n_layers:
        raise ConfigError("layer_types", f"has {len(types)} entries for {n_layers} layers")
    return types


def _uniform(
    cfg: Config, c: Common, attn: AttnPlan, window: int | None, ffn: FfnPlan | None = None
) -> tuple[BlockPlan, ...]:
    """The same block n_layers times: sliding when a window is set, else full."""
    kind = "sliding" if window else "full"
    return tuple(
        BlockPlan(kind, window, attn, ffn or FfnPlan(width=c.intermediate))
        for _ in range(c.n_layers)
    )


def parse_llama(cfg: Config, model_type: str) -> TextArch:
    """llama / granite / codellama: q,k,v,o (+ biases when attention_bias), SwiGLU FFN."""
    d = GRANITE if model_type == "granite" else LLAMA
    c = read_common(cfg, d)
    bias = get_bool(cfg, "attention_bias", False)
    notes = ("mlp_bias ignored (tiny)",) if get_bool(cfg, "mlp_bias", False) else ()
    blocks = _uniform(cfg, c, gqa(c, qkv_bias=bias, o_bias=bias), None)
    arch = "granite" if model_type == "granite" else "llama"
    return TextArch(model_type, arch, c, blocks, notes=(f"defaults: {d.source}", *notes))


def parse_mistral(cfg: Config, model_type: str) -> TextArch:
    """mistral: llama layout; sliding_window (v0.1: 4096 on every layer) when set."""
    c = read_common(cfg, MISTRAL)
    window = opt_window(cfg) if "sliding_window" in cfg else 4096
    blocks = _uniform(cfg, c, gqa(c), window)
    return TextArch(model_type, "llama", c, blocks, notes=(f"defaults: {MISTRAL.source}",))


def parse_qwen2(cfg: Config, model_type: str) -> TextArch:
    """qwen2: q/k/v biases always on; sliding window only with use_sliding_window, and then
    on layers >= max_window_layers (transformers Qwen2Config.layer_types)."""
    c = read_common(cfg, QWEN2)
    attn = gqa(c, qkv_bias=True)
    ffn = FfnPlan(width=c.intermediate)
    window = opt_window(cfg) if get_bool(cfg, "use_sliding_window", False) else None
    first_swa = get_int(cfg, "max_window_layers", 28, minimum=0)
    blocks = tuple(
        BlockPlan("sliding", window, attn, ffn)
        if window and i >= first_swa
        else BlockPlan("full", None, attn, ffn)
        for i in range(c.n_layers)
    )
    return TextArch(model_type, "qwen2", c, blocks, notes=(f"defaults: {QWEN2.source}",))


def parse_qwen3(cfg: Config, model_type: str) -> TextArch:
    """qwen3: QK-norm (q_norm, k_norm of head_dim), biases only with attention_bias."""
    c = read_common(cfg, QWEN3)
    bias = get_bool(cfg, "attention_bias", False)
    blocks = _uniform(cfg, c, gqa(c, qk_norm=True, qkv_bias=bias, o_bias=bias), None)
    return TextArch(model_type, "qwen3", c, blocks, notes=(f"defaults: {QWEN3.source}",))


def parse_phi3(cfg: Config, model_type: str) -> TextArch:
    """phi3 / phi-4: fused attn_qkv and fused gate+up (llama.cpp's ffn_up with 2x rows)."""
    c = read_common(cfg, PHI3)
    attn = AttnPlan("fused_qkv", c.n_heads, c.n_kv_heads, c.head_dim, c.head_dim)
    window = opt_window(cfg)
    ffn = FfnPlan(width=c.intermediate, fused_gate_up=True)
    return TextArch(
        model_type,
        "phi3",
        c,
        _uniform(cfg, c, attn, window, ffn),
        notes=(f"defaults: {PHI3.source}",),
    )


def parse_gemma2(cfg: Config, model_type: str) -> TextArch:
    """gemma2: post-attention and post-FFN norms; sliding window on even layers
    (transformers Gemma2Config: layer_types sliding when (i + 1) % 2)."""
    c = read_common(cfg, GEMMA2)
    window = opt_window(cfg) or 4096
    types = layer_types(cfg, c.n_layers) or [
        "sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(c.n_layers)
    ]
    return TextArch(
        model_type,
        "gemma2",
        c,
        _gemma_blocks(c, types, window, qk_norm=False),
        notes=(f"defaults: {GEMMA2.source}",),
    )


def parse_gemma3(cfg: Config, model_type: str) -> TextArch:
    """gemma3 text: QK-norm, post norms; sliding_window_pattern 6 (5 local : 1 global) or
    layer_types (transformers Gemma3TextConfig)."""
    c = read_common(cfg, GEMMA3)
    window = opt_window(cfg) or 4096
    pattern = get_int(cfg, "sliding_window_pattern", 6)
    types = layer_types(cfg, c.n_layers) or [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(c.n_layers)
    ]
    return TextArch(
        model_type,
        "gemma3",
        c,
        _gemma_blocks(c, types, window, qk_norm=True),
        notes=(f"defaults: {GEMMA3.source}",),
    )


def _gemma_blocks(c: Common, types: list[str], window: int, qk_norm: bool) -> tuple[BlockPlan, ...]:
    """Gemma blocks with post norms, sliding or full per layer_types entry."""
    attn = gqa(c, qk_norm=qk_norm)
    ffn = FfnPlan(width=c.intermediate)
    return tuple(
        BlockPlan("sliding", window, attn, ffn, post_norms=True)
        if t == "sliding_attention"
        else BlockPlan("full", None, attn, ffn, post_norms=True)
        for t in types
    )
