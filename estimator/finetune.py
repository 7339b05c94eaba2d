"""Fine-tuning memory: weights, gradients, optimizer states, activations (full, LoRA, QLoRA).

Bytes per parameter (mixed-precision AdamW, Rajbhandari et al. 2020, ZeRO, section 3.1:
"2 + 2 + 12 = 16 bytes"): bf16 weights 2 + bf16 gradients 2 + fp32 master weights 4 +
Adam m and v 4 + 4. With fp32 gradients (e.g. gradient accumulation in fp32, as
DeepSpeed does by default for bf16) it is 18. 8-bit Adam (Dettmers et al. 2022, "8-bit
Optimizers via Block-wise Quantization") stores m and v in 1 byte each: 2 instead of 8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")

# NF4 with double quantization (Dettmers et al. 2023, QLoRA, section 3): 4 bits per weight
# + 8-bit absmax per 64-weight block + one fp32 constant per 256 blocks:
# 4 + 8/64 + 32/(64 x 256) = 4.127 bits per parameter.
NF4_DQ_BITS_PER_PARAM = 4 + 8 / 64 + 32 / (64 * 256)


@dataclass(frozen=True)
class FinetuneMemory:
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    adapter_params: int  # trainable LoRA parameters (0 for full fine-tuning)

    @property
    def total_bytes(self) -> float:
        return (
            self.weights_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
        )


def lora_adapter_params(
    rank: int,
    shapes: dict[str, tuple[int, int]],
    n_layers: int,
    targets: tuple[str, ...] = LORA_TARGETS,
) -> int:
    """sum over targeted linear layers of r x (in + out), times n_layers.

    shapes maps a target ("q", "k", ...) to (in_features, out_features) of one layer.
    """
    return n_layers * sum(rank * (shapes[t][0] + shapes[t][1]) for t in targets if t in shapes)


def llama_linear_shapes(
    hidden: int, intermediate: int, n_heads: int, n_kv_heads: int, head_dim: int
) -> dict[str, tuple[int, int]]:
    """(in, out) of the 7 linear layers of a Llama-style block (q,k,v,o,gate,up,down)."""
    return {
        "q": (hidden, n_heads * head_dim),
        "k": (hidden, n_kv_heads * head_dim),
        "v": (hidden, n_kv_heads * head_dim),
        "o": (n_heads * head_dim, hidden),
        "gate": (hidden, intermediate),
        "up": (hidden, intermediate),
        "down": (intermediate, hidden),
    }


def activation_bytes(
    *,
    seq_len: int,
    micro_batch: int,
    hidden: int,
    n_heads: int,
    n_layers: int,
    flash_attention: bool = True,
    checkpointing: bool = False,
) -> float:
    """Activation memory of the transformer blocks in 16-bit training.

    Per layer s x b x h x (34 + 5 a s / h) bytes (Korthikanti et al. 2022, "Reducing
    Activation Recomputation in Large Transformer Models", eq. 1, no tensor parallelism).
    FlashAttention does not store the s x s score matrices, so the 5 a s / h term drops.
    Full checkpointing keeps only each layer's input (2 s b h bytes) plus one layer's full
    activations during its recomputation. Excludes logits (s x b x vocab) and the MLP
    width beyond 4h assumed by the formula.
    """
    sbh = seq_len * micro_batch * hidden
    per_layer = sbh * (34 + (0 if flash_attention else 5 * n_heads * seq_len / hidden))
    if checkpointing:
        return 2 * sbh * n_layers + per_layer
    return per_layer * n_layers


def full_finetune_memory(
    params: float, activations: float, *, fp32_grads: bool = False, eight_bit_adam: bool = False
) -> FinetuneMemory:
    """Mixed-precision AdamW: weights 2 + 4 (bf16 + fp32 master), grads 2 (4 with
    fp32_grads), optimizer 8 (2 with 8-bit Adam) bytes per parameter."""
    return FinetuneMemory(
        weights_bytes=params * (2 + 4),
        gradients_bytes=params * (4 if fp32_grads else 2),
        optimizer_bytes=params * (2 if eight_bit_adam else 8),
        activations_bytes=activations,
        adapter_params=0,
    )


def lora_memory(
    params: float, adapter_params: int, activations: float, *, base_bits_per_param: float = 16.0
) -> FinetuneMemory:
    """Frozen base at base_bits_per_param (16 for LoRA on bf16, NF4_DQ_BITS_PER_PARAM for
    QLoRA) + the adapter trained with AdamW in fp32: 4 (weight) + 4 (grad) + 8 (m, v) bytes
    per adapter parameter. No gradients for the frozen base."""
    return FinetuneMemory(
        weights_bytes=params * base_bits_per_param / 8 + adapter_params * 4,
        gradients_bytes=adapter_params * 4,
        optimizer_bytes=adapter_params * 8,
        activations_bytes=activations,
        adapter_params=adapter_params,
    )


def qlora_memory(params: float, adapter_params: int, activations: float) -> FinetuneMemory:
    """LoRA on an NF4 double-quantized base (4.127 bits per parameter), bf16 compute."""
    return lora_memory(
        params, adapter_params, activations, base_bits_per_param=NF4_DQ_BITS_PER_PARAM
    )


def model_activation_bytes(
    model: Any,
    *,
    seq_len: int,
    micro_batch: int,
    flash_attention: bool = True,
    checkpointing: bool = False,
) -> float:
    """activation_bytes for a ModelSpec-like object (.hidden_size, .n_heads, .n_layers)."""
    return activation_bytes(
        seq_len=seq_len,
        micro_batch=micro_batch,
        hidden=model.hidden_size,
        n_heads=model.n_heads,
        n_layers=model.n_layers,
        flash_attention=flash_attention,
        checkpointing=checkpointing,
    )


def model_lora_params(model: Any, rank: int, targets: tuple[str, ...] = LORA_TARGETS) -> int:
    """lora_adapter_params for a ModelSpec-like object with Llama-style blocks (dense MLP of
    .intermediate_size; MoE experts are not targeted)."""
    shapes = llama_linear_shapes(
        model.hidden_size, model.intermediate_size, model.n_heads, model.n_kv_heads, model.head_dim
    )
    return lora_adapter_params(rank, shapes, model.n_layers, targets)
