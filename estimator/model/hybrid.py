"""Parsers for hybrid and heterogeneous decoders: qwen3_5 / qwen3_5_moe (Gated DeltaNet +
gated attention, like qwen3_next), nemotron_h (Mamba2 + attention + MLP/MoE layers),
minimax_m1 (lightning + softmax attention, MoE) and DeciLM / nemotron-nas (per-layer
block_configs).

Sources: transformers models/qwen3_5, qwen3_next, nemotron_h (NemotronHConfig,
NemotronHMamba2Mixer, NemotronHMOE), NVIDIA's modeling_decilm.py (DeciLMConfig
block_configs, _ffn_mult_to_intermediate_size), MiniMax-AI/MiniMax-M1's
modeling_minimax_m1.py and configuration_minimax_m1.py; llama.cpp llama-arch.cpp for gguf
names.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from estimator.model import moe
from estimator.model.blocks import AttnPlan, BlockPlan, FfnPlan, Lightning, LinearAttn, Mamba2
from estimator.model.dense import gqa, layer_types
from estimator.model.fields import Config, get_bool, get_int, get_opt_int, get_str_list, get_sub
from estimator.model.spec import ConfigError
from estimator.model.text import Common, Defaults, MoE, TextArch, read_common

# Absent keys in a Nemotron-H config take the values of nvidia/Nemotron-H-8B-Base-8K's
# config.json shape (hidden 4096, 52 layers, 32 heads, 8 KV heads, head_dim 128); every
# catalog config sets them, so these only matter for hand-written inputs.
NEMOTRON_H = Defaults(
    "Nemotron-H-8B-like shape (NemotronHConfig)", 131072, 4096, 21504, 52, 32, 8, 8192, head_dim=128
)
# DeciLM: the Llama-3.x layout it is pruned from (LlamaConfig defaults otherwise).
DECI = Defaults(
    "transformers LlamaConfig (DeciLM is a pruned Llama)", 32000, 4096, 11008, 32, 32, None, 2048
)
# MiniMaxM1Config constructor defaults (configuration_minimax_m1.py): vocab 32000, hidden
# 4096, intermediate 14336, 32 layers, 32 heads, kv 8, max 4096 x 32; 8 experts, top-2.
MINIMAX_M1 = Defaults("MiniMaxM1Config", 32000, 4096, 14336, 32, 32, 8, 131072)
NEMOTRON_CHARS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


def parse_qwen3_5(cfg: Config, model_type: str) -> TextArch:
    """qwen3_5 (dense) and qwen3_5_moe (Qwen3.5 / Qwen3.6): the Qwen3-Next hybrid --
    Gated DeltaNet on 3 of 4 layers, gated full attention (attn_output_gate) with QK-norm
    on the rest. The MoE variant has a gated shared expert on every layer; the dense one a
    SwiGLU MLP of intermediate_size. MTP layers (mtp_num_hidden_layers) are not counted.
    """
    if cfg.get("num_experts"):
        arch = moe.parse_qwen3_next(cfg, model_type)
        return replace(
            arch, gguf_arch="qwen35moe", notes=(*arch.notes, "Qwen3.5 MoE: Qwen3-Next layout")
        )
    c = read_common(cfg, moe.QWEN3_NEXT)
    lin = LinearAttn(
        n_key_heads=get_int(cfg, "linear_num_key_heads", 16),
        n_value_heads=get_int(cfg, "linear_num_value_heads", 32),
        key_head_dim=get_int(cfg, "linear_key_head_dim", 128),
        value_head_dim=get_int(cfg, "linear_value_head_dim", 128),
        conv_kernel=get_int(cfg, "linear_conv_kernel_dim", 4),
    )
    interval = get_int(cfg, "full_attention_interval", 4)
    types = layer_types(cfg, c.n_layers) or [
        "linear_attention" if (i + 1) % interval else "full_attention" for i in range(c.n_layers)
    ]
    full = gqa(c, qk_norm=True, gated_q=get_bool(cfg, "attn_output_gate", True))
    linear = AttnPlan("deltanet", 0, 0, 0, 0, linear=lin)
    ffn = FfnPlan(width=c.intermediate)
    blocks = tuple(
        BlockPlan("linear", None, linear, ffn)
        if t == "linear_attention"
        else BlockPlan("full", None, full, ffn)
        for t in types
    )
    notes = ("Qwen3.5 dense: Qwen3-Next layout with a SwiGLU MLP", "MTP layers not counted")
    return TextArch(model_type, "qwen35", c, blocks, notes=notes)


def nemotron_pattern(cfg: Config) -> list[str]:
    """Per-layer block kinds ("mamba" / "attention" / "mlp" / "moe").

    layers_block_type (Nemotron-3 Ultra) or hybrid_override_pattern, one character per
    layer: M Mamba2, * attention, - MLP, E MoE (transformers NemotronHConfig).
    """
    listed = get_str_list(cfg, "layers_block_type")
    if listed:
        return [s.lower() for s in listed]
    pattern = cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError("hybrid_override_pattern", "is required for nemotron_h")
    unknown = set(pattern) - set(NEMOTRON_CHARS)
    if unknown:
        raise ConfigError("hybrid_override_pattern", f"unknown block types {sorted(unknown)}")
    return [NEMOTRON_CHARS[ch] for ch in pattern]


def _nemotron_common(cfg: Config, n_layers: int) -> Common:
    """Common fields; head_dim from head_dim or attention_head_dim (Nemotron-H-56B)."""
    merged: dict[str, Any] = {**cfg, "num_hidden_layers": n_layers}
    if merged.get("head_dim") is None and merged.get("attention_head_dim") is not None:
        merged["head_dim"] = merged["attention_head_dim"]
    return read_common(merged, NEMOTRON_H)


def _mamba(cfg: Config, hidden: int) -> Mamba2:
    """Mamba2 dims: mamba_num_heads x mamba_head_dim (default expand x hidden / 64 heads)."""
    head_dim = get_int(cfg, "mamba_head_dim", 64)
    d_inner = get_int(cfg, "expand", 2) * hidden
    return Mamba2(
        n_heads=get_int(cfg, "mamba_num_heads", d_inner // head_dim),
        head_dim=head_dim,
        state_size=get_int(cfg, "ssm_state_size", 128),
        n_groups=get_int(cfg, "n_groups", 8),
        conv_kernel=get_int(cfg, "conv_kernel", 4),
    )


def _nemotron_moe(cfg: Config, c: Common) -> tuple[MoE, FfnPlan]:
    """Routed experts (relu2, not gated), shared expert, sigmoid router with a score bias,
    LatentMoE projections when moe_latent_size is set (Nemotron-3 Super/Ultra)."""
    n = get_int(cfg, "n_routed_experts", 0, minimum=0)
    if not n:
        return MoE(), FfnPlan()
    k = get_int(cfg, "num_experts_per_tok", 1)
    width = get_int(cfg, "moe_intermediate_size", c.intermediate)
    shared = get_int(cfg, "moe_shared_expert_intermediate_size", 0, minimum=0)
    n_shared = get_int(cfg, "n_shared_experts", 1 if shared else 0, minimum=0)
    latent = get_opt_int(cfg, "moe_latent_size") or 0
    ffn = FfnPlan(
        n_experts=n,
        expert_width=width,
        shared_width=shared,
        score_bias=True,
        gated=False,
        latent_size=latent,
    )
    return MoE(n, min(k, n), n_shared, width), ffn


def parse_nemotron_h(cfg: Config, model_type: str) -> TextArch:
    """nemotron_h (Nemotron-H, Nemotron-3 Nano/Super/Ultra): one mixer or FFN per layer.

    Mamba2 layers keep a fixed f32 state per sequence ("linear" LayerSpec); attention
    layers are GQA with a KV cache; MLP ("-") and MoE ("E") layers hold no cache.
    MLP and experts use relu2 (up + down, no gate). MTP layers are not counted.
    """
    kinds = nemotron_pattern(cfg)
    c = _nemotron_common(cfg, len(kinds))
    mamba = AttnPlan(
        "mamba2",
        0,
        0,
        0,
        0,
        qkv_bias=get_bool(cfg, "use_conv_bias", True),
        mamba=_mamba(cfg, c.hidden),
    )
    attn = gqa(c, qkv_bias=get_bool(cfg, "attention_bias", False))
    none = AttnPlan("none", 0, 0, 0, 0)
    moe_counts, sparse = _nemotron_moe(cfg, c)
    mlp = FfnPlan(width=c.intermediate, gated=False)
    plans = {
        "mamba": BlockPlan("linear", None, mamba, FfnPlan()),
        "attention": BlockPlan("full", None, attn, FfnPlan()),
        "mlp": BlockPlan("linear", None, none, mlp),
        "moe": BlockPlan("linear", None, none, sparse if moe_counts.n_experts else mlp),
    }
    unknown = set(kinds) - set(plans)
    if unknown:
        raise ConfigError("layers_block_type", f"unknown block types {sorted(unknown)}")
    gguf = "nemotron_h_moe" if moe_counts.n_experts else "nemotron_h"
    notes = ("Mamba2 state per sequence in f32 (mamba_ssm_cache_dtype)", "MTP layers not counted")
    return TextArch(model_type, gguf, c, tuple(plans[k] for k in kinds), moe_counts, notes=notes)


def ffn_mult_to_width(ffn_mult: float, hidden: int) -> int:
    """DeciLM _ffn_mult_to_intermediate_size: int(2 x ffn_mult x hidden / 3) rounded up to
    a multiple of 256. Llama-3.3-Nemotron-Super-49B, ffn_mult 5.25, hidden 8192: 28672."""
    width = int(2 * ffn_mult * hidden / 3)
    return -(-width // 256) * 256


def _deci_block(block: Config, c: Common) -> BlockPlan:
    """One DeciLM block: attention no_op / replace_with_linear / GQA with
    n_heads // n_heads_in_group KV heads (sliding when window_length); FFN no_op /
    replace_with_linear (one hidden x hidden matrix, sized as a non-gated FFN of width
    hidden / 2: the same element count) / SwiGLU of ffn_mult_to_width(ffn_mult)."""
    a = get_sub(block, "attention") or {}
    f = get_sub(block, "ffn") or {}
    window = get_opt_int(a, "window_length")
    if get_bool(a, "no_op", False):
        attn, kind = AttnPlan("none", 0, 0, 0, 0), "linear"
    elif get_bool(a, "replace_with_linear", False):
        attn, kind = AttnPlan("gqa", 0, 0, 0, 0, linear_o=True), "linear"
    else:
        group = get_int(a, "n_heads_in_group", 1)
        kv = max(1, c.n_heads // group)
        attn = AttnPlan("gqa", c.n_heads, kv, c.head_dim, c.head_dim)
        kind = "sliding" if window else "full"
    if get_bool(f, "no_op", False):
        ffn = FfnPlan()
    elif get_bool(f, "replace_with_linear", False):
        ffn = FfnPlan(width=c.hidden // 2, gated=False)
    else:
        mult = f.get("ffn_mult")
        if not isinstance(mult, (int, float)) or isinstance(mult, bool) or mult <= 0:
            raise ConfigError(
                "block_configs.ffn.ffn_mult", f"must be a positive number, got {mult!r}"
            )
        ffn = FfnPlan(width=ffn_mult_to_width(float(mult), c.hidden))
    return BlockPlan(kind, window if kind == "sliding" else None, attn, ffn)


def parse_deci(cfg: Config, model_type: str) -> TextArch:
    """deci / nemotron-nas (Llama-3.1/3.3-Nemotron Super/Ultra): a Llama whose blocks were
    pruned one by one (block_configs). Blocks with no_op attention hold no KV cache."""
    blocks_cfg = cfg.get("block_configs")
    if not isinstance(blocks_cfg, list) or not blocks_cfg:
        raise ConfigError("block_configs", "is required for DeciLM / nemotron-nas")
    merged: dict[str, Any] = {**cfg, "num_hidden_layers": len(blocks_cfg)}
    merged["intermediate_size"] = merged.get("intermediate_size") or 1
    c = read_common(merged, DECI)
    blocks = []
    for item in blocks_cfg:
        if not isinstance(item, dict):
            raise ConfigError("block_configs", "entries must be objects")
        blocks.append(_deci_block(item, c))
    kv = max((b.attn.n_kv_heads for b in blocks), default=c.n_kv_heads)
    c = replace(c, n_kv_heads=kv or c.n_heads, intermediate=max(b.ffn.width for b in blocks))
    notes = ("per-layer block_configs (no_op attention layers hold no KV cache)",)
    return TextArch(model_type, "deci", c, tuple(blocks), notes=notes)


def minimax_attention_kinds(cfg: Config, n_layers: int) -> list[str]:
    """Per layer "lightning" or "softmax": attn_type_list (0 = lightning, 1 = softmax, as
    MiniMaxM1Model picks MiniMaxM1LightningAttention / MiniMaxM1FlashAttention2), else
    layer_types ("linear_attention" / "full_attention")."""
    codes = cfg.get("attn_type_list")
    if isinstance(codes, list):
        kinds = ["softmax" if code == 1 else "lightning" for code in codes]
    else:
        kinds = [
            "lightning" if t == "linear_attention" else "softmax"
            for t in layer_types(cfg, n_layers) or []
        ]
    if len(kinds) != n_layers:
        raise ConfigError("attn_type_list", f"needs one entry per layer ({n_layers})")
    return kinds


def parse_minimax_m1(cfg: Config, model_type: str) -> TextArch:
    """minimax_m1 (MiniMax-M1, same layout as MiniMax-Text-01): lightning attention layers
    (fixed f32 state, no per-token cache) and GQA softmax layers per attn_type_list; every
    layer MoE (num_local_experts of intermediate_size, top num_experts_per_tok); with
    shared_intermediate_size > 0 a shared MLP of intermediate_size behind a sigmoid gate.
    max_position_embeddings is taken as given (10,240,000 in the release config)."""
    c = read_common(cfg, MINIMAX_M1)
    n = get_int(cfg, "num_local_experts", 8)
    k = min(get_int(cfg, "num_experts_per_tok", 2), n)
    shared = c.intermediate if get_int(cfg, "shared_intermediate_size", 0, minimum=0) else 0
    ffn = FfnPlan(
        n_experts=n, expert_width=c.intermediate, shared_width=shared, shared_gate=bool(shared)
    )
    lightning = AttnPlan("lightning", 0, 0, 0, 0, lightning=Lightning(c.n_heads, c.head_dim))
    plans = {
        "lightning": BlockPlan("linear", None, lightning, ffn),
        "softmax": BlockPlan("full", None, gqa(c), ffn),
    }
    blocks = tuple(plans[kind] for kind in minimax_attention_kinds(cfg, c.n_layers))
    moe_counts = MoE(n, k, 1 if shared else 0, c.intermediate)
    notes = (
        f"defaults: {MINIMAX_M1.source}",
        "lightning attention state per sequence in f32 (the reference code's kv matrix)",
    )
    return TextArch(model_type, "minimax-01", c, blocks, moe_counts, notes=notes)
