"""Thin parsers for model types that reuse an existing layout: qwen3_vl (text), mimo,
cohere2, olmo2, smollm3, granitemoe, phimoe.

Each reuses a parser from dense.py / moe.py and changes what differs (gguf name, biases,
window pattern). gguf names from llama.cpp src/llama-arch.cpp.
"""

from __future__ import annotations

from dataclasses import replace

from estimator.model import dense, moe
from estimator.model.blocks import BlockPlan, FfnPlan
from estimator.model.fields import Config, get_bool, get_int, get_opt_int
from estimator.model.text import Defaults, TextArch, read_common

# Cohere2Config: vocab 256000, hidden 8192, intermediate 22528, 40 layers, 64 heads,
# kv None -> heads, max 8192, tied, sliding_window 4096, sliding_window_pattern 4.
COHERE2 = Defaults(
    "transformers Cohere2Config", 256000, 8192, 22528, 40, 64, None, 8192, tie_word_embeddings=True
)


def parse_qwen3_vl_text(cfg: Config, model_type: str) -> TextArch:
    """qwen3_vl text decoder: the Qwen3 dense layout (QK-norm); interleaved M-RoPE and
    DeepStack feature injection add no text-model weights."""
    return replace(dense.parse_qwen3(cfg, model_type), gguf_arch="qwen3vl")


def parse_qwen3_vl_moe_text(cfg: Config, model_type: str) -> TextArch:
    """qwen3_vl_moe text decoder: the Qwen3-MoE layout (128 experts, top-8)."""
    return replace(
        moe.parse_qwen_moe(cfg, "qwen3_moe"), model_type=model_type, gguf_arch="qwen3vlmoe"
    )


def parse_mimo(cfg: Config, model_type: str) -> TextArch:
    """mimo (MiMo-7B): the Qwen2 layout (q/k/v biases); its MTP layers
    (num_nextn_predict_layers) are not counted. llama.cpp converts it as qwen2."""
    arch = dense.parse_qwen2(cfg, model_type)
    return replace(arch, notes=(*arch.notes, "MTP layers not counted"))


def parse_cohere2(cfg: Config, model_type: str) -> TextArch:
    """cohere2 (Command R7B, Command A): parallel attention + FFN behind one LayerNorm,
    sliding window on 3 of 4 layers (sliding_window_pattern 4, or layer_types), tied
    embeddings. The block's single norm is counted as two (attn_norm + ffn_norm; +hidden
    per layer, < 0.001%)."""
    c = read_common(cfg, COHERE2)
    window = get_opt_int(cfg, "sliding_window") or 4096
    pattern = get_int(cfg, "sliding_window_pattern", 4)
    types = dense.layer_types(cfg, c.n_layers) or [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(c.n_layers)
    ]
    bias = get_bool(cfg, "attention_bias", False)
    attn = dense.gqa(c, qkv_bias=bias, o_bias=bias)
    ffn = FfnPlan(width=c.intermediate)
    blocks = tuple(
        BlockPlan("sliding", window, attn, ffn)
        if t == "sliding_attention"
        else BlockPlan("full", None, attn, ffn)
        for t in types
    )
    return TextArch(model_type, "cohere2", c, blocks, notes=(f"defaults: {COHERE2.source}",))


def parse_olmo2(cfg: Config, model_type: str) -> TextArch:
    """olmo2: Llama layout with QK-norm (over all heads; sized per head here, a few
    thousand elements less) and post-attention / post-FFN norms instead of pre-norms."""
    c = read_common(cfg, dense.LLAMA)
    attn = dense.gqa(c, qk_norm=True)
    blocks = tuple(
        BlockPlan("full", None, attn, FfnPlan(width=c.intermediate)) for _ in range(c.n_layers)
    )
    return TextArch(model_type, "olmo2", c, blocks, notes=(f"defaults: {dense.LLAMA.source}",))


def parse_smollm3(cfg: Config, model_type: str) -> TextArch:
    """smollm3: Llama layout; NoPE layers (no_rope_layers) change no weights. An absent
    tie_word_embeddings means tied (transformers SmolLM3Config default True)."""
    if cfg.get("tie_word_embeddings") is None:
        cfg = {**cfg, "tie_word_embeddings": True}
    return replace(dense.parse_llama(cfg, "llama"), model_type=model_type, gguf_arch="smollm3")


def parse_granitemoe(cfg: Config, model_type: str) -> TextArch:
    """granitemoe: Mixtral-style experts (num_local_experts of intermediate_size, top
    num_experts_per_tok) in a Granite decoder; shared_intermediate_size adds a shared
    expert (granitemoeshared)."""
    arch = moe.parse_mixtral(cfg, model_type)
    shared = get_int(cfg, "shared_intermediate_size", 0, minimum=0)
    if shared:
        blocks = tuple(replace(b, ffn=replace(b.ffn, shared_width=shared)) for b in arch.blocks)
        arch = replace(arch, blocks=blocks, moe=replace(arch.moe, n_shared=1))
    return replace(arch, gguf_arch="granitemoe")


def parse_phimoe(cfg: Config, model_type: str) -> TextArch:
    """phimoe (Phi-3.5-MoE): Mixtral layout with q/k/v/o biases (attention_bias)."""
    arch = moe.parse_mixtral(cfg, model_type)
    bias = get_bool(cfg, "attention_bias", True)
    blocks = tuple(
        replace(b, attn=replace(b.attn, qkv_bias=bias, o_bias=bias)) for b in arch.blocks
    )
    return replace(arch, blocks=blocks, gguf_arch="phimoe")
