"""Parsers for mixture-of-experts decoders: mixtral, qwen2_moe, qwen3_moe, qwen3_next,
deepseek_v2/v3 (and kimi_k2), glm4_moe, gpt_oss, llama4.

Defaults for absent keys are the constructor defaults of transformers' config classes
(src/transformers/models/<name>/configuration_<name>.py), cited per entry.
"""

from __future__ import annotations

from dataclasses import replace

from estimator.model.blocks import AttnPlan, BlockPlan, FfnPlan, LinearAttn
from estimator.model.dense import gqa, layer_types
from estimator.model.fields import Config, get_bool, get_int, get_int_list, get_opt_int
from estimator.model.spec import MLASpec
from estimator.model.text import Defaults as D
from estimator.model.text import TextArch, opt_window, read_common, read_moe

# MixtralConfig: intermediate 14336, kv 8, max 4096*32, num_local_experts 8, top-2.
MIXTRAL = D("transformers MixtralConfig", 32000, 4096, 14336, 32, 32, 8, 131072)
# Qwen2MoeConfig: hidden 2048, intermediate 5632, 24 layers, 16 heads, kv 16; 60 experts,
# top-4, moe_intermediate_size 1408, shared_expert_intermediate_size 5632.
QWEN2_MOE = D("transformers Qwen2MoeConfig", 151936, 2048, 5632, 24, 16, 16, 32768)
# Qwen3MoeConfig: hidden 2048, intermediate 6144, 24 layers, 32 heads, kv 4; 128 experts,
# top-8, moe_intermediate_size 768, decoder_sparse_step 1, mlp_only_layers [].
QWEN3_MOE = D("transformers Qwen3MoeConfig", 151936, 2048, 6144, 24, 32, 4, 32768)
# Qwen3NextConfig: hidden 2048, intermediate 5632, 48 layers, 16 heads, kv 2, head_dim
# 256; 512 experts top-10, moe/shared width 512; linear heads 16 key / 32 value, dims 128,
# conv kernel 4; full_attention_interval 4.
QWEN3_NEXT = D("transformers Qwen3NextConfig", 151936, 2048, 5632, 48, 16, 2, 32768, head_dim=256)
# DeepseekV3Config: 61 layers, hidden 7168, intermediate 18432, 128 heads; 256 experts
# top-8 of width 2048, 1 shared, first_k_dense_replace 3; MLA ranks 512/1536, rope 64,
# nope 128, v 128.
DEEPSEEK_V3 = D("transformers DeepseekV3Config", 129280, 7168, 18432, 61, 128, 128, 4096)
# DeepseekV2Config: 30 layers, hidden 4096, intermediate 11008, 32 heads, moe width 1407,
# first_k_dense_replace 0, moe_layer_freq 1; expert counts have no default (None).
DEEPSEEK_V2 = D("transformers DeepseekV2Config", 102400, 4096, 11008, 30, 32, 32, 2048)
# Glm4MoeConfig: 46 layers, hidden 4096, intermediate 10944, 96 heads, kv 8, head_dim 128;
# 128 experts top-8 of width 1408, 1 shared, first_k_dense_replace 1.
GLM4_MOE = D("transformers Glm4MoeConfig", 151552, 4096, 10944, 46, 96, 8, 131072, head_dim=128)
# GptOssConfig: 36 layers, hidden 2880, intermediate 2880, 64 heads, kv 8, head_dim 64,
# 128 experts top-4, sliding_window 128 on alternate layers, attention sinks.
GPT_OSS = D("transformers GptOssConfig", 201088, 2880, 2880, 36, 64, 8, 131072, head_dim=64)
# Llama4TextConfig: 48 layers, hidden 5120, intermediate 8192 (expert and shared width),
# intermediate_size_mlp 16384 (dense layers), 40 heads, kv 8, head_dim 128; 16 experts
# top-1, interleave_moe_layer_step 1, no_rope_layer_interval 4, attention_chunk_size 8192.
LLAMA4 = D("transformers Llama4TextConfig", 202048, 5120, 8192, 48, 40, 8, 131072, head_dim=128)


def _note(d: D) -> str:
    return f"defaults: {d.source}"


def parse_mixtral(cfg: Config, model_type: str) -> TextArch:
    """mixtral: every layer MoE, no shared expert, expert width = intermediate_size."""
    c = read_common(cfg, MIXTRAL)
    moe = read_moe(
        cfg, "num_local_experts", "num_experts_per_tok", "intermediate_size", c.intermediate, 8, 2
    )
    window = opt_window(cfg)
    ffn = FfnPlan(n_experts=moe.n_experts, expert_width=moe.width)
    kind = "sliding" if window else "full"
    blocks = tuple(BlockPlan(kind, window, gqa(c), ffn) for _ in range(c.n_layers))
    return TextArch(model_type, "llama", c, blocks, moe, notes=(_note(MIXTRAL),))


def _qwen_moe_layer(i: int, sparse_step: int, mlp_only: list[int]) -> bool:
    """transformers Qwen2/3-MoE: MoE when i not in mlp_only_layers and (i+1) % step == 0."""
    return i not in mlp_only and (i + 1) % sparse_step == 0


def parse_qwen_moe(cfg: Config, model_type: str) -> TextArch:
    """qwen2_moe (q/k/v bias, gated shared expert) and qwen3_moe (QK-norm, no shared)."""
    is_v2 = model_type == "qwen2_moe"
    d = QWEN2_MOE if is_v2 else QWEN3_MOE
    c = read_common(cfg, d)
    moe = read_moe(
        cfg,
        "num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        1408 if is_v2 else 768,
        60 if is_v2 else 128,
        4 if is_v2 else 8,
    )
    shared = get_int(cfg, "shared_expert_intermediate_size", 5632, minimum=0) if is_v2 else 0
    if shared:
        moe = replace(moe, n_shared=1)
    step = get_int(cfg, "decoder_sparse_step", 1)
    mlp_only = get_int_list(cfg, "mlp_only_layers", [])
    attn = gqa(c, qkv_bias=True) if is_v2 else gqa(c, qk_norm=True)
    sparse = FfnPlan(
        n_experts=moe.n_experts,
        expert_width=moe.width,
        shared_width=shared,
        shared_gate=bool(shared),
    )
    dense = FfnPlan(width=c.intermediate)
    blocks = tuple(
        BlockPlan("full", None, attn, sparse if _qwen_moe_layer(i, step, mlp_only) else dense)
        for i in range(c.n_layers)
    )
    arch = "qwen2moe" if is_v2 else "qwen3moe"
    return TextArch(model_type, arch, c, blocks, moe, notes=(_note(d),))


def parse_qwen3_next(cfg: Config, model_type: str) -> TextArch:
    """qwen3_next: Gated DeltaNet linear attention on 3 of 4 layers, gated full attention
    (q projection doubled for the output gate, QK-norm) on every full_attention_interval-th
    layer; every layer MoE with a gated shared expert."""
    c = read_common(cfg, QWEN3_NEXT)
    moe = read_moe(cfg, "num_experts", "num_experts_per_tok", "moe_intermediate_size", 512, 512, 10)
    shared = get_int(cfg, "shared_expert_intermediate_size", 512, minimum=0)
    moe = replace(moe, n_shared=1 if shared else 0)
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
    full = gqa(c, qk_norm=True, gated_q=True)
    linear = AttnPlan("deltanet", 0, 0, 0, 0, linear=lin)
    step = get_int(cfg, "decoder_sparse_step", 1)
    mlp_only = get_int_list(cfg, "mlp_only_layers", [])
    sparse = FfnPlan(
        n_experts=moe.n_experts,
        expert_width=moe.width,
        shared_width=shared,
        shared_gate=bool(shared),
    )
    dense = FfnPlan(width=c.intermediate)
    blocks = tuple(
        BlockPlan(
            "linear" if t == "linear_attention" else "full",
            None,
            linear if t == "linear_attention" else full,
            sparse if _qwen_moe_layer(i, step, mlp_only) else dense,
        )
        for i, t in enumerate(types)
    )
    notes = (_note(QWEN3_NEXT), "MTP layers not counted")
    return TextArch(model_type, "qwen3next", c, blocks, moe, notes=notes)


def parse_deepseek(cfg: Config, model_type: str) -> TextArch:
    """deepseek_v2 / deepseek_v3 / kimi_k2: MLA attention; dense FFN on the first
    first_k_dense_replace layers, then MoE every moe_layer_freq layers (DeepSeek's
    modeling code); MTP layers (num_nextn_predict_layers) are not counted."""
    is_v2 = model_type == "deepseek_v2"
    d = DEEPSEEK_V2 if is_v2 else DEEPSEEK_V3
    c = read_common(cfg, d)
    mla = MLASpec(
        kv_lora_rank=get_int(cfg, "kv_lora_rank", 512),
        q_lora_rank=get_opt_int(cfg, "q_lora_rank") if "q_lora_rank" in cfg else 1536,
        qk_rope_head_dim=get_int(cfg, "qk_rope_head_dim", 64),
        qk_nope_head_dim=get_int(cfg, "qk_nope_head_dim", 128),
        v_head_dim=get_int(cfg, "v_head_dim", 128),
    )
    n_routed = get_int(cfg, "n_routed_experts", None if is_v2 else 256, minimum=0)
    moe = read_moe(
        cfg,
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        1407 if is_v2 else 2048,
        n_routed,
        8,
    )
    moe = replace(moe, n_shared=get_int(cfg, "n_shared_experts", 0 if is_v2 else 1, minimum=0))
    first_dense = get_int(cfg, "first_k_dense_replace", 0 if is_v2 else 3, minimum=0)
    freq = get_int(cfg, "moe_layer_freq", 1)
    attn = AttnPlan(
        "mla",
        c.n_heads,
        c.n_heads,
        mla.qk_nope_head_dim + mla.qk_rope_head_dim,
        mla.v_head_dim,
        mla=mla,
    )
    sparse = FfnPlan(
        n_experts=moe.n_experts,
        expert_width=moe.width,
        shared_width=moe.n_shared * moe.width,
        score_bias=not is_v2,
    )
    dense = FfnPlan(width=c.intermediate)
    blocks = tuple(
        BlockPlan("mla", None, attn, sparse if i >= first_dense and i % freq == 0 else dense)
        for i in range(c.n_layers)
    )
    notes = (
        _note(d),
        "MTP layers not counted",
        "attn_kv_b kept whole (newer llama.cpp splits it into attn_k_b/attn_v_b)",
    )
    return TextArch(model_type, "deepseek2", c, blocks, moe, mla, notes=notes)


def parse_glm4_moe(cfg: Config, model_type: str) -> TextArch:
    """glm4_moe (GLM-4.5/4.6): q/k/v biases with attention_bias, optional QK-norm,
    dense first_k_dense_replace layers, sigmoid router with a score-correction bias."""
    c = read_common(cfg, GLM4_MOE)
    moe = read_moe(
        cfg, "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", 1408, 128, 8
    )
    moe = replace(moe, n_shared=get_int(cfg, "n_shared_experts", 1, minimum=0))
    first_dense = get_int(cfg, "first_k_dense_replace", 1, minimum=0)
    attn = gqa(
        c,
        qkv_bias=get_bool(cfg, "attention_bias", False),
        qk_norm=get_bool(cfg, "use_qk_norm", False),
    )
    sparse = FfnPlan(
        n_experts=moe.n_experts,
        expert_width=moe.width,
        shared_width=moe.n_shared * moe.width,
        score_bias=True,
    )
    dense = FfnPlan(width=c.intermediate)
    blocks = tuple(
        BlockPlan("full", None, attn, sparse if i >= first_dense else dense)
        for i in range(c.n_layers)
    )
    notes = (_note(GLM4_MOE), "MTP layers not counted (llama.cpp GGUFs may include them)")
    return TextArch(model_type, "glm4moe", c, blocks, moe, notes=notes)


def parse_gpt_oss(cfg: Config, model_type: str) -> TextArch:
    """gpt_oss: q/k/v/o biases, attention sinks, router bias, expert biases; sliding
    window 128 on even layers (layer_types)."""
    c = read_common(cfg, GPT_OSS)
    k_key = "num_experts_per_tok" if "num_experts_per_tok" in cfg else "experts_per_token"
    moe = read_moe(cfg, "num_local_experts", k_key, "intermediate_size", c.intermediate, 128, 4)
    window = opt_window(cfg) or 128
    types = layer_types(cfg, c.n_layers) or [
        "sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(c.n_layers)
    ]
    attn = gqa(c, qkv_bias=True, o_bias=True, sinks=True)
    ffn = FfnPlan(
        n_experts=moe.n_experts, expert_width=moe.width, router_bias=True, expert_bias=True
    )
    blocks = tuple(
        BlockPlan("sliding", window, attn, ffn)
        if t == "sliding_attention"
        else BlockPlan("full", None, attn, ffn)
        for t in types
    )
    return TextArch(model_type, "gpt-oss", c, blocks, moe, notes=(_note(GPT_OSS),))


def parse_llama4(cfg: Config, model_type: str) -> TextArch:
    """llama4 text: MoE on moe_layers (every interleave_moe_layer_step-th layer, the rest
    dense with intermediate_size_mlp); top-1 routed + 1 shared expert; chunked local
    attention (attention_chunk_size) on RoPE layers, global on NoPE layers (every 4th)."""
    c = read_common(cfg, LLAMA4)
    moe = read_moe(
        cfg, "num_local_experts", "num_experts_per_tok", "intermediate_size", c.intermediate, 16, 1
    )
    moe = replace(moe, n_shared=1)
    step = get_int(cfg, "interleave_moe_layer_step", 1)
    moe_layers = set(get_int_list(cfg, "moe_layers", list(range(step - 1, c.n_layers, step))))
    rope = get_int_list(cfg, "no_rope_layers", [int((i + 1) % 4 != 0) for i in range(c.n_layers)])
    chunk = get_int(cfg, "attention_chunk_size", 8192)
    sparse = FfnPlan(n_experts=moe.n_experts, expert_width=moe.width, shared_width=moe.width)
    dense = FfnPlan(width=get_int(cfg, "intermediate_size_mlp", 16384))
    blocks = tuple(
        BlockPlan(
            "chunked" if i < len(rope) and rope[i] else "full",
            chunk if i < len(rope) and rope[i] else None,
            gqa(c),
            sparse if i in moe_layers else dense,
        )
        for i in range(c.n_layers)
    )
    return TextArch(model_type, "llama4", c, blocks, moe, notes=(_note(LLAMA4),))
