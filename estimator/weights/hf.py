"""Bytes per tensor of Hugging Face checkpoints (safetensors), by dtype / quant scheme.

What stays 16-bit in the quantized schemes (AWQ, GPTQ, w8a8, fp8, NVFP4, MXFP4):
embeddings, lm_head, norms, biases and the MoE router, as in their quantization_config
(modules_to_not_convert / ignore lists of the published checkpoints).
"""

from __future__ import annotations

from estimator.model import Tensor

HF_FORMATS: tuple[str, ...] = (
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "w8a8",
    "awq-int4",
    "gptq-int4",
    "mxfp4",
    "nvfp4",
)
HALF = 2
FP8_BLOCK = 128
MX_BLOCK = 32
NV_BLOCK = 16


def _is_linear(t: Tensor) -> bool:
    """A quantizable linear weight: 2-D/3-D, not embedding/output, norm, bias or router."""
    if not t.is_matrix or t.name.endswith(".bias"):
        return False
    if t.kind in ("embedding", "output", "router", "norm", "attn_norm"):
        return False
    return "conv1d" not in t.name and "position_embd" not in t.name


def _matrices(t: Tensor) -> tuple[int, int, int]:
    """(stacked count, rows, row length) of a 2-D or stacked 3-D weight."""
    if len(t.shape) == 3:
        return t.shape[0], t.shape[1], t.shape[2]
    return 1, t.shape[0], t.shape[-1]


def fp8_block_bytes(t: Tensor) -> int:
    """e4m3 weight (1 byte) + one f32 scale per 128 x 128 block (DeepSeek-V3 layout)."""
    n, rows, cols = _matrices(t)
    blocks = -(-rows // FP8_BLOCK) * -(-cols // FP8_BLOCK)
    return t.n_elements + n * blocks * 4


def int4_group_bytes(t: Tensor, group: int, gptq: bool) -> int:
    """Packed int4 weight (n/2) + per group of `group` inputs an fp16 scale and a packed
    int4 zero (2.5 bytes per group per output row); GPTQ adds an int32 g_idx per input."""
    n, rows, cols = _matrices(t)
    groups = -(-cols // group)
    size = t.n_elements // 2 + n * rows * groups * 5 // 2
    return size + (n * cols * 4 if gptq else 0)


def w8a8_bytes(t: Tensor) -> int:
    """int8 weight + one f32 scale per output channel (compressed-tensors W8A8)."""
    n, rows, _ = _matrices(t)
    return t.n_elements + n * rows * 4


def mxfp4_bytes(t: Tensor) -> int:
    """MXFP4: 32 fp4 values (16 bytes) + one e8m0 scale byte per block = 17/32 B/weight."""
    return -(-t.n_elements // MX_BLOCK) * 17


def nvfp4_bytes(t: Tensor) -> int:
    """NVFP4: fp4 (1/2 byte) + fp8 scale per 16 weights + two f32 global scales per matrix."""
    n, _, _ = _matrices(t)
    return t.n_elements // 2 + -(-t.n_elements // NV_BLOCK) + n * 8


def hf_tensor_bytes(t: Tensor, name: str, group_size: int, moe: bool) -> tuple[int, str]:
    """(bytes, dtype label) of one tensor in an HF checkpoint of format `name`.

    mxfp4 on MoE models quantizes the routed experts only (gpt-oss); on dense models
    every linear weight. Non-quantized tensors are bf16 (fp32 for "fp32").
    """
    if name == "fp32":
        return t.n_elements * 4, "fp32"
    base = (t.n_elements * HALF, "fp16" if name == "fp16" else "bf16")
    if name in ("bf16", "fp16") or not _is_linear(t):
        return base
    if name == "fp8":
        return fp8_block_bytes(t), "fp8"
    if name == "w8a8":
        return w8a8_bytes(t), "int8"
    if name in ("awq-int4", "gptq-int4"):
        return int4_group_bytes(t, group_size, name == "gptq-int4"), "int4"
    if name == "mxfp4":
        return (mxfp4_bytes(t), "mxfp4") if t.kind == "expert" or not moe else base
    if name == "nvfp4":
        return nvfp4_bytes(t), "nvfp4"
    raise ValueError(f"unknown HF weights format {name!r}")
