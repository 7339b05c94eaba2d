"""Parsers for newer mixture-of-experts decoders: minimax_m2, glm_moe_dsa and deepseek_v32
(MLA + DeepSeek sparse-attention indexer), mimo_v2_flash, gemma4, ernie4_5_moe,
hunyuan_v1_moe and hunyuan (its original remote-code name).

Sources: transformers models/<name>/modeling_<name>.py and configuration_<name>.py
(MiniMaxM2, GlmMoeDsa, Gemma4, Ernie4_5_Moe, HunYuanMoEV1), DeepSeek-V3.2-Exp
inference/model.py (Indexer), vLLM models/mimo_v2_flash.py, Tencent's remote-code
hunyuan.py / modeling_hunyuan.py (Hunyuan-A13B GitHub release); gguf names from llama.cpp
src/llama-arch.cpp (minimax-m2, glm-dsa, mimo2, gemma4, ernie4_5-moe, hunyuan-moe).
"""

from __future__ import annotations

from dataclasses import replace

from estimator.model.blocks import AttnPlan, BlockPlan, FfnPlan, Indexer
from estimator.model.dense import gqa, layer_types
from estimator.model.fields import Config, get_bool, get_int, get_int_list, get_opt_int
from estimator.model.moe import parse_deepseek
from estimator.model.spec import ConfigError
from estimator.model.text import Common, MoE, TextArch, read_common
from estimator.model.text import Defaults as D

# Absent keys: the shapes of the released checkpoints named, not a transformers default
# (the catalog configs set every key these parsers read).
MINIMAX_M2 = D("MiniMax-M2 config.json shape", 200064, 3072, 1536, 62, 48, 8, 196608, head_dim=128)
MIMO_V2 = D("MiMo-V2-Flash config.json shape", 152576, 4096, 16384, 48, 64, 4, 262144, head_dim=192)
GEMMA4 = D(
    "gemma-4-31B config.json shape",
    262144,
    5376,
    21504,
    60,
    32,
    16,
    262144,
    tie_word_embeddings=True,
    head_dim=256,
)
ERNIE_MOE = D(
    "ERNIE-4.5-21B-A3B config.json shape",
    103424,
    2560,
    12288,
    28,
    20,
    4,
    131072,
    tie_word_embeddings=True,
    head_dim=128,
)
HUNYUAN_MOE = D(
    "Hunyuan-A13B config.json shape",
    128167,
    4096,
    3072,
    32,
    32,
    8,
    32768,
    tie_word_embeddings=True,
    head_dim=128,
)


def parse_minimax_m2(cfg: Config, model_type: str) -> TextArch:
    """minimax_m2 (MiniMax-M2/M2.5/M2.7): every layer MoE (num_local_experts of
    intermediate_size, sigmoid router with e_score_correction_bias), GQA with QK-norm,
    no shared expert. MTP modules (use_mtp) are not counted."""
    c = read_common(cfg, MINIMAX_M2)
    n = get_int(cfg, "num_local_experts", 256)
    k = min(get_int(cfg, "num_experts_per_tok", 8), n)
    shared = get_int(cfg, "shared_intermediate_size", 0, minimum=0)
    ffn = FfnPlan(
        n_experts=n,
        expert_width=c.intermediate,
        shared_width=shared,
        score_bias=get_bool(cfg, "use_routing_bias", True),
    )
    attn = gqa(c, qk_norm=get_bool(cfg, "use_qk_norm", True))
    blocks = tuple(BlockPlan("full", None, attn, ffn) for _ in range(c.n_layers))
    notes = (
        "MTP modules not counted",
        "per-layer QK-norm sized per head (q_norm/k_norm span all heads: +0.003%)",
    )
    moe = MoE(n, k, 1 if shared else 0, c.intermediate)
    return TextArch(model_type, "minimax-m2", c, blocks, moe, notes=notes)


def _with_indexer(arch: TextArch, cfg: Config) -> TextArch:
    """Add the DSA indexer to every MLA block that owns one.

    GLM-5.2's indexer_types marks "shared" layers that reuse another layer's indexer
    (no weights of their own); absent, every layer has one.
    """
    ix = Indexer(get_int(cfg, "index_n_heads", 64), get_int(cfg, "index_head_dim", 128))
    kinds = cfg.get("indexer_types")
    owns = [k == "full" for k in kinds] if isinstance(kinds, list) else [True] * len(arch.blocks)
    if len(owns) != len(arch.blocks):
        raise ConfigError("indexer_types", f"has {len(owns)} entries for {len(arch.blocks)} layers")
    blocks = tuple(
        replace(b, attn=replace(b.attn, indexer=ix)) if own else b
        for b, own in zip(arch.blocks, owns, strict=True)
    )
    note = (
        f"DSA indexer ({ix.n_heads} heads x {ix.head_dim}) on {sum(owns)} layers; each "
        f"caches one {ix.head_dim}-value key per token (LayerSpec.indexer_head_dim, sized "
        "per engine in estimator/kv/)"
    )
    return replace(arch, blocks=blocks, notes=(*arch.notes, note))


def _mlp_layer_types(arch: TextArch, cfg: Config) -> TextArch:
    """GLM-5.2's mlp_layer_types ("dense" / "sparse") overrides first_k_dense_replace."""
    types = cfg.get("mlp_layer_types")
    if not isinstance(types, list):
        return arch
    if len(types) != len(arch.blocks):
        raise ConfigError("mlp_layer_types", f"has {len(types)} entries")
    sparse = next((b.ffn for b in arch.blocks if b.ffn.n_experts), None)
    dense = next((b.ffn for b in arch.blocks if not b.ffn.n_experts), None)
    if sparse is None or dense is None:
        return arch
    blocks = tuple(
        replace(b, ffn=dense if t == "dense" else sparse)
        for b, t in zip(arch.blocks, types, strict=True)
    )
    return replace(arch, blocks=blocks)


def parse_dsa(cfg: Config, model_type: str) -> TextArch:
    """deepseek_v32 (DeepSeek-V3.2) and glm_moe_dsa (GLM-5): DeepSeek-V3 layout (MLA,
    first_k_dense_replace dense layers, shared expert, sigmoid router with score bias)
    plus the lightning indexer of DeepSeek sparse attention. MTP layers not counted."""
    arch = parse_deepseek(cfg, "deepseek_v3")
    arch = _mlp_layer_types(_with_indexer(arch, cfg), cfg)
    gguf = "glm-dsa" if model_type == "glm_moe_dsa" else "deepseek2"
    notes = arch.notes
    if gguf == "deepseek2":
        notes = (*notes, "gguf_arch: mainline llama.cpp's nearest arch (deepseek2)")
    return replace(arch, model_type=model_type, gguf_arch=gguf, notes=notes)


def parse_mimo_v2(cfg: Config, model_type: str) -> TextArch:
    """mimo_v2_flash: hybrid_layer_pattern 0 = full attention (num_key_value_heads),
    1 = sliding window (swa_* heads, sliding_window, attention sink bias); K head_dim 192,
    V 128; moe_layer_freq 0/1 per layer (dense layers of intermediate_size); 256 experts,
    sigmoid router with score bias, no shared expert. MTP layers not counted."""
    c = read_common(cfg, MIMO_V2)
    v_dim = get_int(cfg, "v_head_dim", 128)
    pattern = get_int_list(cfg, "hybrid_layer_pattern", [0] * c.n_layers)
    freq = get_int_list(cfg, "moe_layer_freq", [1] * c.n_layers)
    if len(pattern) != c.n_layers or len(freq) != c.n_layers:
        raise ConfigError("hybrid_layer_pattern", "needs one entry per layer")
    window = get_opt_int(cfg, "sliding_window") or 128
    full = AttnPlan(
        "gqa",
        c.n_heads,
        c.n_kv_heads,
        c.head_dim,
        v_dim,
        sinks=get_bool(cfg, "add_full_attention_sink_bias", False),
    )
    swa = AttnPlan(
        "gqa",
        get_int(cfg, "swa_num_attention_heads", c.n_heads),
        get_int(cfg, "swa_num_key_value_heads", c.n_kv_heads),
        get_int(cfg, "swa_head_dim", c.head_dim),
        get_int(cfg, "swa_v_head_dim", v_dim),
        sinks=get_bool(cfg, "add_swa_attention_sink_bias", False),
    )
    n = get_int(cfg, "n_routed_experts", 256)
    width = get_int(cfg, "moe_intermediate_size", 2048)
    shared = (get_opt_int(cfg, "n_shared_experts") or 0) * width
    sparse = FfnPlan(n_experts=n, expert_width=width, shared_width=shared, score_bias=True)
    dense = FfnPlan(width=c.intermediate)
    blocks = tuple(
        BlockPlan(
            "sliding" if p else "full",
            window if p else None,
            swa if p else full,
            sparse if f else dense,
        )
        for p, f in zip(pattern, freq, strict=True)
    )
    moe = MoE(n, min(get_int(cfg, "num_experts_per_tok", 8), n), 1 if shared else 0, width)
    return TextArch(model_type, "mimo2", c, blocks, moe, notes=("MTP layers not counted",))


def _gemma4_attn(cfg: Config, c: Common) -> tuple[AttnPlan, AttnPlan]:
    """(sliding, full) attention: sliding layers use head_dim and num_key_value_heads;
    full layers global_head_dim and num_global_key_value_heads, with K reused as V when
    attention_k_eq_v (no v_proj). Both have per-head QK-norm."""
    sliding = gqa(c, qk_norm=True)
    g_dim = get_int(cfg, "global_head_dim", c.head_dim)
    g_kv = get_int(cfg, "num_global_key_value_heads", c.n_kv_heads)
    full = AttnPlan(
        "gqa",
        c.n_heads,
        g_kv,
        g_dim,
        g_dim,
        qk_norm=True,
        k_eq_v=get_bool(cfg, "attention_k_eq_v", False),
    )
    return sliding, full


def parse_gemma4(cfg: Config, model_type: str) -> TextArch:
    """gemma4 text: sliding / full layers from layer_types; a dense GeGLU MLP on every
    layer and, with enable_moe_block, routed experts in parallel (num_experts of
    moe_intermediate_size, top_k_experts) with three extra norms; Gemma post norms.
    Per-layer input embeddings (hidden_size_per_layer_input, Gemma 4 E2B/E4B) and KV
    sharing (num_kv_shared_layers) are noted, not sized."""
    c = read_common(cfg, GEMMA4)
    window = get_opt_int(cfg, "sliding_window") or 1024
    types = layer_types(cfg, c.n_layers) or [
        "sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(c.n_layers)
    ]
    sliding, full = _gemma4_attn(cfg, c)
    moe = MoE()
    ffn = FfnPlan(width=c.intermediate)
    extra: tuple[str, ...] = ()
    if get_bool(cfg, "enable_moe_block", False):
        n = get_int(cfg, "num_experts", 128)
        width = get_opt_int(cfg, "moe_intermediate_size") or get_int(
            cfg, "expert_intermediate_size", c.intermediate
        )
        moe = MoE(n, min(get_int(cfg, "top_k_experts", 8), n), 0, width)
        ffn = FfnPlan(width=c.intermediate, n_experts=n, expert_width=width)
        extra = ("post_ffw_norm_1", "pre_ffw_norm_2", "post_ffw_norm_2")
    blocks = tuple(
        BlockPlan("sliding", window, sliding, ffn, post_norms=True, extra_norms=extra)
        if t == "sliding_attention"
        else BlockPlan("full", None, full, ffn, post_norms=True, extra_norms=extra)
        for t in types
    )
    notes: tuple[str, ...] = ()
    if get_int(cfg, "hidden_size_per_layer_input", 0, minimum=0):
        notes += ("per-layer input embeddings (Gemma 4 E2B/E4B) not sized",)
    if get_int(cfg, "num_kv_shared_layers", 0, minimum=0):
        notes += ("KV-shared layers counted as holding their own cache (overestimate)",)
    return TextArch(model_type, "gemma4", c, blocks, moe, notes=notes)


def parse_ernie_moe(cfg: Config, model_type: str) -> TextArch:
    """ernie4_5_moe: MoE on layers moe_layer_start_index..moe_layer_end_index every
    moe_layer_interval ((i + 1) % interval == 0), dense SwiGLU elsewhere; moe_num_experts
    of moe_intermediate_size, top moe_k, moe_num_shared_experts x moe_intermediate_size
    shared, router score-correction bias (moe_statics); biases when use_bias."""
    c = read_common(cfg, ERNIE_MOE)
    n = get_int(cfg, "moe_num_experts", 64)
    width = get_int(cfg, "moe_intermediate_size", 1536)
    n_shared = get_int(cfg, "moe_num_shared_experts", 0, minimum=0)
    start = get_int(cfg, "moe_layer_start_index", 1, minimum=0)
    end = get_int(cfg, "moe_layer_end_index", c.n_layers - 1, minimum=-1)
    step = get_int(cfg, "moe_layer_interval", 1)
    end = c.n_layers - 1 if end < 0 else end
    sparse = FfnPlan(
        n_experts=n, expert_width=width, shared_width=n_shared * width, score_bias=True
    )
    dense = FfnPlan(width=c.intermediate)
    bias = get_bool(cfg, "use_bias", False)
    attn = gqa(c, qkv_bias=bias, o_bias=bias)
    blocks = tuple(
        BlockPlan(
            "full", None, attn, sparse if start <= i <= end and (i + 1) % step == 0 else dense
        )
        for i in range(c.n_layers)
    )
    moe = MoE(n, min(get_int(cfg, "moe_k", 8), n), n_shared, width)
    return TextArch(model_type, "ernie4_5-moe", c, blocks, moe, notes=("MTP layers not counted",))


def _per_layer(cfg: Config, key: str, default: int, n_layers: int) -> list[int]:
    """Hunyuan keys given as one int or as a per-layer list."""
    value = cfg.get(key)
    if isinstance(value, list):
        out = get_int_list(cfg, key, [])
        if len(out) != n_layers:
            raise ConfigError(key, f"has {len(out)} entries for {n_layers} layers")
        return out
    return [get_int(cfg, key, default, minimum=0)] * n_layers


def _hunyuan_common(cfg: Config) -> Common:
    """read_common, taking head_dim from attention_head_dim (the original remote-code
    config's key) when head_dim is absent."""
    if cfg.get("head_dim") is None and cfg.get("attention_head_dim") is not None:
        cfg = {**cfg, "head_dim": cfg["attention_head_dim"]}
    return read_common(cfg, HUNYUAN_MOE)


def _cla_layers(cfg: Config, n_layers: int) -> list[bool]:
    """Cross-layer attention (use_cla): unless i % cla_share_factor == 0, layer i reuses the
    K and V of the last layer where it is (hunyuan.py HunYuanAttention "cross" layers)."""
    if not get_bool(cfg, "use_cla", False):
        return [False] * n_layers
    factor = get_int(cfg, "cla_share_factor", 1)
    return [i % factor != 0 for i in range(n_layers)]


def _hunyuan_ffn(cfg: Config, c: Common) -> list[FfnPlan]:
    """Per layer: num_experts of moe_intermediate_size plus, with use_mixed_mlp_moe, a shared
    MLP of num_shared_expert x that width (hunyuan.py HunYuanMLP is_shared_mlp); the first
    moe_layer_num_skipped layers are a dense MLP of intermediate_size."""
    n = c.n_layers
    experts = _per_layer(cfg, "num_experts", 64, n)
    widths = _per_layer(cfg, "moe_intermediate_size", c.intermediate, n)
    mixed = get_bool(cfg, "use_mixed_mlp_moe", True)
    shared = _per_layer(cfg, "num_shared_expert", 1, n) if mixed else [0] * n
    skipped = get_int(cfg, "moe_layer_num_skipped", 0, minimum=0)
    return [
        FfnPlan(width=c.intermediate)
        if i < skipped
        else FfnPlan(
            n_experts=experts[i], expert_width=widths[i], shared_width=shared[i] * widths[i]
        )
        for i in range(n)
    ]


def parse_hunyuan_moe(cfg: Config, model_type: str) -> TextArch:
    """hunyuan (original remote-code release of Hunyuan-A13B / Hunyuan-Large) and
    hunyuan_v1_moe (transformers): MoE FFN per _hunyuan_ffn; GQA with QK-norm when
    use_qk_norm; with use_cla, cross layers hold q and o only and cache nothing.
    num_experts, moe_topk, moe_intermediate_size and num_shared_expert may be per layer."""
    c = _hunyuan_common(cfg)
    topk = _per_layer(cfg, "moe_topk", 8, c.n_layers)
    ffns = _hunyuan_ffn(cfg, c)
    attn = gqa(c, qk_norm=get_bool(cfg, "use_qk_norm", True))
    cross = replace(attn, shares_kv=True)
    blocks = tuple(
        BlockPlan("full", None, cross if shares else attn, ffn)
        for ffn, shares in zip(ffns, _cla_layers(cfg, c.n_layers), strict=True)
    )
    # Model-level counts are the largest per-layer ones (every catalog config is uniform).
    sparse = [f for f in ffns if f.n_experts] or [FfnPlan()]
    n = max(f.n_experts for f in sparse)
    width = max(f.expert_width for f in sparse)
    n_shared = max(f.shared_width // max(1, f.expert_width) for f in sparse)
    moe = MoE(n, min(max(topk), n), n_shared, width)
    return TextArch(model_type, "hunyuan-moe", c, blocks, moe)
