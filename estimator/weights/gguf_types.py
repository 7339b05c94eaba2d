"""GGUF block sizes, file types and llama.cpp's per-tensor type rules.

Sources: ggml's ggml-common.h block structs / GGML_QUANT_SIZES in gguf-py constants.py
(block sizes), llama.cpp src/llama-quant.cpp: llama_ftype_get_default_type,
tensor_allows_quantization, llama_tensor_get_type_impl, tensor_type_fallback
(ggml-org/llama.cpp @ 007dbbf3, 2026). See estimator/data/validation/GGUF_QUANTS.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from estimator.model import ModelSpec, Tensor

# type -> (weights per block, bytes per block)
BLOCKS: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q8_0": (32, 34),
    "Q6_K": (256, 210),
    "Q5_1": (32, 24),
    "Q5_K": (256, 176),
    "Q5_0": (32, 22),
    "Q4_1": (32, 20),
    "Q4_K": (256, 144),
    "Q4_0": (32, 18),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
    "MXFP4": (32, 17),
    "Q3_K": (256, 110),
    "IQ3_S": (256, 110),
    "IQ3_XXS": (256, 98),
    "Q2_K": (256, 84),
    "IQ2_S": (256, 82),
    "IQ2_XS": (256, 74),
    "IQ2_XXS": (256, 66),
    "IQ1_M": (256, 56),
    "IQ1_S": (256, 50),
}

GGUF_FILE_TYPES: tuple[str, ...] = (
    "F32",
    "F16",
    "BF16",
    "Q8_0",
    "Q6_K",
    "Q5_K_M",
    "Q5_K_S",
    "Q5_0",
    "Q4_K_M",
    "Q4_K_S",
    "Q4_0",
    "IQ4_XS",
    "IQ4_NL",
    "Q3_K_L",
    "Q3_K_M",
    "Q3_K_S",
    "IQ3_M",
    "IQ3_XS",
    "IQ3_XXS",
    "Q2_K",
    "IQ2_M",
    "IQ2_S",
    "IQ2_XS",
    "IQ2_XXS",
    "IQ1_M",
    "IQ1_S",
    "MXFP4_MOE",
)
# Uploader recipes: a llama.cpp file type with the token embedding and output tensors kept
# at Q8_0. bartowski's model cards: "Uses Q8_0 for embed and output weights" for Q6_K_L,
# Q5_K_L, Q4_K_L, Q3_K_XL and Q2_K_L (e.g. huggingface.co/bartowski/Qwen2.5-72B-Instruct-GGUF,
# README.md); the base types are the files of the same name without the suffix (Q3_K_XL:
# Q3_K_L, the K_L/K_M types: K_M).
RECIPE_BASE: dict[str, str] = {
    "Q6_K_L": "Q6_K",
    "Q5_K_L": "Q5_K_M",
    "Q4_K_L": "Q4_K_M",
    "Q3_K_XL": "Q3_K_L",
    "Q2_K_L": "Q2_K",
}
RECIPE_EMBED_OUTPUT_TYPE = "Q8_0"
# ARM repacks of Q4_0 (ggml types 31-33, llama_ftype 33-35): Q4_0's 18-byte blocks of 32
# weights interleaved 4 or 8 rows at a time for NEON/i8mm/SVE kernels, so every tensor
# has Q4_0's bytes. llama.cpp later "removed [them] from gguf files, use Q4_0 and runtime
# repack" (include/llama.h, ggml/include/ggml.h), but older uploads carry them. A file is
# sized as Q4_0 under Q4_0's per-tensor rules except the imatrix guard that raises the
# first n_layer/8 ffn_down to Q4_1, which llama.cpp keys on the Q4_0 file type alone
# (llama_tensor_get_type, src/llama.cpp @ 2024-07, as merged in ikawrakow/ik_llama.cpp
# 0ceeb117: `ftype == LLAMA_FTYPE_MOSTLY_Q4_0 ... && qs.has_imatrix`): Mistral-Large-
# Instruct-2407 Q4_0 69.32 GB, Q4_0_4_4 69.08 GB (bartowski, llama.cpp b3634).
REPACK_BASE: dict[str, str] = {"Q4_0_4_4": "Q4_0", "Q4_0_4_8": "Q4_0", "Q4_0_8_8": "Q4_0"}


@dataclass(frozen=True)
class UdRecipe:
    """An unsloth Dynamic 2.0 ("UD-") file sized by rule: a llama.cpp file type plus overrides.

    Every tensor first takes llama.cpp's type for `base`. Then, in MoE models, routed
    experts take `expert` (ffn_down_exps `expert_down`) and every other quantized tensor is
    raised to at least the type llama.cpp gives it under `floor`; in dense models ffn_down
    is raised to at least `dense_down` = (type on use_more_bits layers, type elsewhere);
    `embed_output` replaces token_embd/output. The tensor bytes are then multiplied by
    `scale_dense` / `scale_moe`, a fitted uniform shift (median of measured / rule size).
    """

    base: str
    expert: str | None = None
    expert_down: str | None = None
    floor: str | None = None
    dense_down: tuple[str, str | None] | None = None
    embed_output: str | None = None
    scale_dense: float = 1.0
    scale_moe: float = 1.0


# unsloth Dynamic 2.0 GGUFs. unsloth publishes no per-tensor recipe ("each model now uses a
# custom-tailored quantization scheme", docs.unsloth.ai/basics/unsloth-dynamic-2.0-ggufs),
# so each variant is the structure the public material shows plus a fitted uniform shift:
# - MoE experts: the "Details" column of unsloth's size tables (down_proj bits / other expert
#   bits, e.g. IQ1_S "2.06/1.56bit" = IQ2_XXS / IQ1_S, Q2_K_XL "3.5/2.5bit" = Q3_K / Q2_K;
#   unsloth.ai/docs/models/tutorials/deepseek-r1-0528-how-to-run-locally). For Q3/Q4_K_XL
#   the llama.cpp load logs leave room for the experts at the base type only (DeepSeek-V3-0324
#   UD-Q3_K_XL: 173 q3_K tensors for 174 expert tensors; UD-Q4_K_XL: 384.0 GB, 6.6 GB over
#   all-Q4_K where Q5_K ffn_down_exps alone would add 27 GB; ik_llama.cpp #455, #572, #386).
# - MoE attention, shared experts, dense layers, embeddings: "leave attention and other
#   layers in 4 or 6bit" (unsloth.ai/blog/deepseekr1-dynamic): at least llama.cpp's Q4_K_M.
# - Dense Q4_K_XL: Qwen3-32B UD-Q4_K_XL has q5_K 35 + q6_K 94 = 129 tensors, as many as its
#   attn_v + ffn_down + output (q4_K 293, iq4_xs 28; ik_llama.cpp issue #503): no ffn_down
#   below Q5_K. UD-Q5_K_XL sizes as llama.cpp's Q5_K_M (Qwen3-32B: 0.1 %).
# - UD-Q8_K_XL: Q8_0 with bf16 tensors (Llama-3.3-70B: q8_0 455, bf16 107;
#   kyuz0/amd-strix-halo-toolboxes benchmark/loadtime_results @62e50801); bf16 embeddings.
# Scales: median measured / rule over the "fit" rows of estimator/data/validation/
# gguf_sizes_ud.csv (1.0 where no published size was found: every dense IQ*/Q3/Q6 variant and
# UD-IQ2_M). Held-out error per row: tests/estimator/test_ud_quants.py.
UD_RECIPES: dict[str, UdRecipe] = {
    "UD-IQ1_S": UdRecipe("IQ1_S", "IQ1_S", "IQ2_XXS", "Q4_K_M", scale_moe=1.238),
    "UD-IQ1_M": UdRecipe("IQ1_M", "IQ1_M", "IQ2_S", "Q4_K_M", scale_moe=1.145),
    "UD-IQ2_XXS": UdRecipe("IQ2_XXS", "IQ2_XXS", "IQ2_S", "Q4_K_M", scale_moe=1.151),
    "UD-IQ2_M": UdRecipe("IQ2_M", "IQ2_S", "IQ3_S", "Q4_K_M"),
    "UD-Q2_K_XL": UdRecipe("Q2_K", "Q2_K", "Q3_K", "Q4_K_M", scale_dense=1.018, scale_moe=1.015),
    "UD-Q3_K_XL": UdRecipe("Q3_K_M", "Q3_K", None, "Q4_K_M", scale_moe=1.017),
    "UD-Q4_K_XL": UdRecipe(
        "Q4_K_M", "Q4_K", None, "Q4_K_M", ("Q6_K", "Q5_K"), scale_dense=0.998, scale_moe=1.015
    ),
    "UD-Q5_K_XL": UdRecipe("Q5_K_M", scale_dense=0.999, scale_moe=1.005),
    "UD-Q6_K_XL": UdRecipe("Q6_K", None, None, "Q8_0", ("Q8_0", None), scale_moe=1.035),
    "UD-Q8_K_XL": UdRecipe("Q8_0", embed_output="BF16", scale_dense=1.070, scale_moe=1.088),
}
# Also understood (legacy / less common, and the uploader recipes): sized with the same rules.
EXTRA_GGUF_FILE_TYPES: tuple[str, ...] = (
    "Q5_1",
    "Q4_1",
    "IQ3_S",
    "Q2_K_S",
    *RECIPE_BASE,
    *UD_RECIPES,
)

# llama_ftype_get_default_type
DEFAULT_TYPE: dict[str, str] = {
    "F32": "F32",
    "F16": "F16",
    "BF16": "BF16",
    "Q8_0": "Q8_0",
    "Q6_K": "Q6_K",
    "Q5_K_M": "Q5_K",
    "Q5_K_S": "Q5_K",
    "Q5_0": "Q5_0",
    "Q5_1": "Q5_1",
    "Q4_K_M": "Q4_K",
    "Q4_K_S": "Q4_K",
    "Q4_0": "Q4_0",
    "Q4_1": "Q4_1",
    "IQ4_XS": "IQ4_XS",
    "IQ4_NL": "IQ4_NL",
    "Q3_K_L": "Q3_K",
    "Q3_K_M": "Q3_K",
    "Q3_K_S": "Q3_K",
    "IQ3_M": "IQ3_S",
    "IQ3_S": "IQ3_S",
    "IQ3_XS": "IQ3_S",
    "IQ3_XXS": "IQ3_XXS",
    "Q2_K": "Q2_K",
    "Q2_K_S": "Q2_K",
    "IQ2_M": "IQ2_S",
    "IQ2_S": "IQ2_XS",
    "IQ2_XS": "IQ2_XS",
    "IQ2_XXS": "IQ2_XXS",
    "IQ1_M": "IQ1_M",
    "IQ1_S": "IQ1_S",
    "MXFP4_MOE": "MXFP4",
}

_UNQUANTIZED = ("F32", "F16", "BF16")
_IQ_LOW = ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")
# tensor_type_fallback: row length not a multiple of the block size
_FALLBACK = {
    "IQ1_S": "IQ4_NL",
    "IQ1_M": "IQ4_NL",
    "IQ2_XXS": "IQ4_NL",
    "IQ2_XS": "IQ4_NL",
    "IQ2_S": "IQ4_NL",
    "IQ3_XXS": "IQ4_NL",
    "IQ3_S": "IQ4_NL",
    "IQ4_XS": "IQ4_NL",
    "Q2_K": "Q4_0",
    "Q3_K": "Q4_0",
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}


def tensor_bytes(type_name: str, n_elements: int) -> int:
    """Bytes of n_elements stored as type_name: ceil(n / block) x block bytes."""
    per_block, size = BLOCKS[type_name]
    return -(-n_elements // per_block) * size


@dataclass(frozen=True)
class Ctx:
    """What llama_tensor_get_type_impl reads from the model and the quantize params."""

    ftype: str
    default: str
    n_layers: int
    n_gqa: int
    n_expert: int
    is_70b: bool
    tied: bool
    imatrix: bool


def make_ctx(model: ModelSpec, ftype: str, imatrix: bool) -> Ctx:
    """Model facts for the rules. LLM_TYPE_70B: llama/qwen2 with 80 layers (as llama.cpp
    classifies Llama-2/3-70B and Qwen2-72B); n_gqa from the model's head counts."""
    is_70b = model.gguf_arch in ("llama", "qwen2") and model.n_layers == 80
    return Ctx(
        ftype,
        DEFAULT_TYPE[ftype],
        model.n_layers,
        model.n_heads // max(1, model.n_kv_heads),
        model.n_experts,
        is_70b,
        model.tie_word_embeddings,
        imatrix,
    )


def allows_quantization(t: Tensor) -> bool:
    """tensor_allows_quantization: 2-D/3-D weights only; not norms, biases, router,
    ssm_conv1d or position embeddings. Those stay as converted (F32)."""
    return t.is_matrix and _quantizable_name(t.name)


@lru_cache(maxsize=65536)
def _quantizable_name(name: str) -> bool:
    if name.endswith(".bias"):
        return False
    excluded = ("_norm", "ffn_gate_inp", "ssm_conv1d", "position_embd", "patch_embd")
    return not any(key in name for key in excluded)


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp: i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2 (integer division)."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


@lru_cache(maxsize=65536)
def category(name: str) -> str:
    """tensor_get_category on a llama.cpp tensor name (without the .weight suffix).

    Cached: a catalog sweep asks it for every tensor of every model under every file type,
    and a name's category never changes."""
    base = name.rsplit(".", 1)[-1] if name.startswith("blk.") else name
    if name in ("output", "token_embd"):
        return name
    for key, cat in (
        ("attn_qkv", "attn_v"),
        ("attn_kv_b", "attn_v"),
        ("attn_v", "attn_v"),
        ("attn_k", "attn_k"),
        ("attn_q", "attn_q"),
        ("attn_output", "attn_output"),
        ("ffn_up", "ffn_up"),
        ("ffn_gate", "ffn_gate"),
        ("ffn_down", "ffn_down"),
    ):
        if base == key or (base.startswith(key + "_") and key.startswith("ffn")):
            return cat
    return "other"
