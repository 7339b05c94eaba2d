"""llama_tensor_get_type_impl, transcribed: the GGUF type llama-quantize picks per tensor.

Source: llama.cpp src/llama-quant.cpp (ggml-org/llama.cpp @ 007dbbf3). Falcon-only and
Q2_K_S/TQ branches are left out. Counters (i_attention_wv, i_ffn_down) run over tensors
in llama.cpp's order (by layer), as in quantize_state_impl.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from estimator.model import ModelSpec, Tensor
from estimator.weights.gguf_types import (
    _FALLBACK,
    _IQ_LOW,
    _UNQUANTIZED,
    BLOCKS,
    RECIPE_BASE,
    RECIPE_EMBED_OUTPUT_TYPE,
    REPACK_BASE,
    UD_RECIPES,
    Ctx,
    UdRecipe,
    allows_quantization,
    category,
    make_ctx,
    tensor_bytes,
    use_more_bits,
)


@dataclass
class Counters:
    """quantize_state_impl's running counters."""

    n_attention_wv: int = 0
    i_attention_wv: int = 0
    i_ffn_down: int = 0
    seen: dict[str, int] = field(default_factory=dict)


def _output_type(c: Ctx, row_len: int) -> str:
    """output.weight (and token_embd when tied): Q6_K unless Q8_0 / IQ1-IQ2 (Q5_K) /
    MXFP4_MOE (Q8_0) / row length not a multiple of the default block (Q8_0)."""
    if c.ftype == "MXFP4_MOE" or row_len % BLOCKS[c.default][0]:
        return "Q8_0"
    if c.ftype in ("IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"):
        return "Q5_K"
    return c.default if c.default == "Q8_0" else "Q6_K"


def _token_embd_type(c: Ctx) -> str:
    """Untied token_embd: the default type, lowered for the IQ1/IQ2/IQ3_XXS families."""
    if c.ftype in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
        return "Q2_K"
    if c.ftype in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
        return "IQ3_S"
    return c.default


def _iq_low(c: Ctx, cat: str, n: Counters) -> str:
    """IQ1_S/IQ1_M/IQ2_* file types."""
    big_iq = c.ftype in ("IQ2_S", "IQ2_M")
    if cat == "attn_v":
        n.i_attention_wv += 1
        if c.n_gqa >= 4 or c.n_expert >= 4:
            return "Q4_K"
        return "IQ3_S" if big_iq else "Q2_K"
    if c.n_expert == 8 and cat == "attn_k":
        return "Q4_K"
    if cat == "ffn_down":
        n.i_ffn_down += 1
        if n.i_ffn_down - 1 < c.n_layers // 8:
            return "IQ3_S" if big_iq else "Q2_K"
        return c.default
    if cat == "attn_output":
        if c.n_expert == 8:
            return "Q5_K"
        if c.ftype in ("IQ1_S", "IQ1_M"):
            return "IQ2_XXS"
        if big_iq:
            return "IQ3_S"
    return c.default


def _attn_v(c: Ctx, n: Counters) -> str:
    """attn_v / attn_qkv / attn_kv_b: raised for GQA >= 4, Q3/Q4 mixes (use_more_bits on
    the attn_v counter), 70B-class (Q3_K/Q4_K -> Q5_K), 8-expert MoE (Q8_0)."""
    f, gqa4, i = c.ftype, c.n_gqa >= 4, n.i_attention_wv
    t = c.default
    if f == "Q2_K":
        t = "Q4_K" if gqa4 else "Q3_K"
    elif f == "Q2_K_S" and gqa4:
        t = "Q4_K"
    elif f == "IQ3_XXS":
        t = "Q4_K" if gqa4 else ("IQ3_XXS" if c.imatrix else "IQ3_S")
    elif (f in ("IQ3_XS", "IQ3_S") and gqa4) or f == "IQ3_M":
        t = "Q4_K"
    elif f == "Q3_K_M":
        t = "Q5_K" if i < 2 else "Q4_K"
    elif f == "Q3_K_L" or (f in ("IQ4_NL", "IQ4_XS") and gqa4):
        t = "Q5_K"
    elif f in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n.n_attention_wv):
        t = "Q6_K"
    elif f == "Q4_K_S" and i < 4:
        t = "Q5_K"
    if c.is_70b and t in ("Q3_K", "Q4_K"):
        t = "Q5_K"
    if c.n_expert == 8:
        t = "Q8_0"
    n.i_attention_wv += 1
    return t


def _ffn_down(c: Ctx, layer: int) -> str:
    """ffn_down (dense, experts, shared): layer-dependent bumps per file type."""
    f, n8 = c.ftype, c.n_layers // 8
    if f == "Q2_K":
        return "Q3_K"
    if f == "Q2_K_S":
        return "Q4_K" if layer < n8 else c.default
    if f == "IQ3_XXS" and not c.imatrix:
        return "Q4_K" if layer < n8 else "Q3_K"
    if f == "Q3_K_M":
        return "Q5_K" if layer < c.n_layers // 16 else "Q4_K"
    if f == "IQ3_M" and (layer < n8 or (c.n_expert == 8 and use_more_bits(layer, c.n_layers))):
        return "Q4_K"
    if f == "Q3_K_L":
        return "Q5_K"
    if f == "Q4_K_M":
        return "Q6_K" if use_more_bits(layer, c.n_layers) else c.default
    if layer < n8 and f in ("IQ4_NL", "IQ4_XS") and not c.imatrix:
        return "Q5_K"
    if f == "Q5_K_M" and use_more_bits(layer, c.n_layers):
        return "Q6_K"
    if f == "Q4_K_S" and layer < n8:
        return "Q5_K"
    if f in ("Q4_0", "Q5_0") and c.imatrix and layer < n8:
        return "Q4_1" if f == "Q4_0" else "Q5_1"
    return c.default


_MOE8_ATTN_OUT = (
    "Q2_K",
    "IQ3_XS",
    "IQ3_XXS",
    "Q3_K_S",
    "Q3_K_M",
    "IQ4_NL",
    "Q4_K_S",
    "Q4_K_M",
    "IQ3_S",
    "IQ3_M",
    "IQ4_XS",
)
_ATTN_OUT = {
    "Q2_K": "Q3_K",
    "IQ3_XXS": "IQ3_S",
    "Q3_K_M": "Q4_K",
    "Q3_K_L": "Q5_K",
    "IQ3_M": "Q4_K",
}


def _by_category(c: Ctx, t: Tensor, cat: str, n: Counters) -> str:
    """Type of a non-embedding tensor by category (attn_v, attn_k/q, ffn_down,
    attn_output, ffn_gate/up), as llama_tensor_get_type_impl's else-if chain."""
    layer = t.layer or 0
    if c.ftype in _IQ_LOW:
        return _iq_low(c, cat, n)
    if cat == "attn_v":
        return _attn_v(c, n)
    if cat in ("attn_k", "attn_q"):
        if cat == "attn_k" and c.n_expert == 8:
            return "Q8_0"
        return {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(c.ftype, c.default)
    if cat == "ffn_down":
        return _ffn_down(c, layer)
    if cat == "attn_output":
        if c.n_expert == 8:
            return "Q5_K" if c.ftype in _MOE8_ATTN_OUT else c.default
        return _ATTN_OUT.get(c.ftype, c.default)
    if cat in ("ffn_gate", "ffn_up") and c.ftype == "IQ3_XS":
        inner = c.n_layers // 8 <= layer < 7 * c.n_layers // 8
        return "IQ3_XXS" if inner else c.default
    return c.default


def _fallback(type_name: str, row_len: int) -> str:
    """tensor_type_fallback: a compatible type when the block does not divide the row."""
    if row_len % BLOCKS[type_name][0] == 0:
        return type_name
    alt = _FALLBACK.get(type_name, "F16")
    return alt if row_len % BLOCKS[alt][0] == 0 else "F16"


def tensor_type(c: Ctx, t: Tensor, n: Counters, gpt_oss: bool) -> str:
    """The GGUF type llama-quantize gives tensor t under file type c.ftype.

    gpt-oss experts are MXFP4 in every file (converted that way, never requantized).
    """
    if not allows_quantization(t):
        return "F32"
    if gpt_oss and t.kind == "expert":
        return "MXFP4"
    if c.default in _UNQUANTIZED:
        return c.default
    cat = category(t.name)
    if cat == "output" or (cat == "token_embd" and c.tied):
        chosen = _output_type(c, t.row_length)
    elif c.ftype == "MXFP4_MOE":
        chosen = "MXFP4" if len(t.shape) == 3 else "Q8_0"
    elif cat == "token_embd":
        chosen = _token_embd_type(c)
    else:
        chosen = _by_category(c, t, cat, n)
    return _fallback(chosen, t.row_length)


def _wider(a: str, b: str) -> str:
    """The type with more bytes per weight (a on a tie)."""
    return a if BLOCKS[a][1] * BLOCKS[b][0] >= BLOCKS[b][1] * BLOCKS[a][0] else b


def _ud_type(r: UdRecipe, t: Tensor, base: str, floor: str | None, n_layers: int) -> str:
    """One tensor of an unsloth Dynamic recipe (UdRecipe). MoE model (floor given): experts
    at r.expert / r.expert_down, other tensors at least floor. Dense model: ffn_down at least
    r.dense_down. Both: token_embd/output at r.embed_output. F32 and MXFP4 (gpt-oss experts,
    never requantized) stay."""
    if base in ("F32", "MXFP4"):
        return base
    cat, chosen = category(t.name), base
    if t.kind == "expert":
        down = cat == "ffn_down" and r.expert_down is not None
        chosen = (r.expert_down if down else r.expert) or base
    elif floor is not None:
        chosen = _wider(base, floor)
    elif r.dense_down and t.kind == "ffn" and cat == "ffn_down":
        more, other = r.dense_down
        bump = more if use_more_bits(t.layer or 0, n_layers) else other
        chosen = _wider(chosen, bump) if bump else chosen
    if cat in ("token_embd", "output") and r.embed_output:
        chosen = r.embed_output
    return _fallback(chosen, t.row_length)


def ud_tensor_types(model: ModelSpec, r: UdRecipe, imatrix: bool) -> dict[str, str]:
    """Types of an unsloth Dynamic file (UD_RECIPES), in llama.cpp's order: the base type's
    llama.cpp rules, then the recipe's overrides (the floor only in MoE models)."""
    base = gguf_tensor_types(model, r.base, imatrix)
    floor = None
    if model.n_experts > 0 and r.floor is not None:
        floor = gguf_tensor_types(model, r.floor, imatrix)
    tensors = {t.name: t for t in model.text_tensors}
    return {
        name: _ud_type(r, tensors[name], typ, floor[name] if floor else None, model.n_layers)
        for name, typ in base.items()
    }


def ud_scale(model: ModelSpec, ftype: str) -> float:
    """The fitted uniform shift of an unsloth Dynamic file type (1.0 for other types)."""
    r = UD_RECIPES.get(ftype)
    if r is None:
        return 1.0
    return r.scale_moe if model.n_experts > 0 else r.scale_dense


def gguf_tensor_bytes(model: ModelSpec, ftype: str, types: dict[str, str]) -> dict[str, int]:
    """Bytes per tensor under `types`, times ud_scale (1.0 unless an unsloth Dynamic type)."""
    scale = ud_scale(model, ftype)
    return {
        t.name: round(tensor_bytes(types[t.name], t.n_elements) * scale) for t in model.text_tensors
    }


def gguf_tensor_types(model: ModelSpec, ftype: str, imatrix: bool) -> dict[str, str]:
    """Type of every text-model tensor under a GGUF file type, in llama.cpp's order. An
    uploader recipe (RECIPE_BASE) is its base type with the token embedding and output
    tensors at Q8_0 (llama-quantize --token-embedding-type/--output-tensor-type); an
    unsloth Dynamic type (UD_RECIPES) follows ud_tensor_types. An ARM repack of Q4_0
    (REPACK_BASE: Q4_0_4_4, Q4_0_4_8, Q4_0_8_8; the same 18-byte blocks) takes Q4_0's types
    as without an imatrix: llama.cpp's imatrix guard (first n_layer/8 ffn_down at Q4_1)
    fires for the Q4_0 file type only."""
    if ftype in REPACK_BASE:
        return gguf_tensor_types(model, REPACK_BASE[ftype], imatrix=False)
    if ftype in UD_RECIPES:
        return ud_tensor_types(model, UD_RECIPES[ftype], imatrix)
    if ftype in RECIPE_BASE:
        types = gguf_tensor_types(model, RECIPE_BASE[ftype], imatrix)
        for t in model.text_tensors:
            if category(t.name) in ("token_embd", "output"):
                types[t.name] = _fallback(RECIPE_EMBED_OUTPUT_TYPE, t.row_length)
        return types
    c = make_ctx(model, ftype, imatrix)
    tensors = model.text_tensors
    counters = Counters(n_attention_wv=sum(category(t.name) == "attn_v" for t in tensors))
    ordered = sorted(tensors, key=lambda t: (-1 if t.layer is None else t.layer, t.name))
    gpt_oss = model.gguf_arch == "gpt-oss"
    return {t.name: tensor_type(c, t, counters, gpt_oss) for t in ordered}
