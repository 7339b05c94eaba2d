"""A tiny real GGUF (gguf-py's GGUFWriter) with llama.cpp's size metadata."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
from gguf.constants import GGMLQuantizationType as Q
from gguf.quants import quant_shape_to_byte_shape

# 2 blocks of width 256, FFN 512, 4 query heads and 2 KV heads (of 256/4 = 64), a 64-token
# vocabulary (the token embedding's rows), no output.weight: tied embeddings.
LAYERS, WIDTH, FFN, HEADS, KV_HEADS, VOCAB = 2, 256, 512, 4, 2, 64
# Counted as the estimator counts a Llama:
#   per layer: q 256*256 = 65,536; k and v 256*128 = 32,768 each; o 65,536;
#              MLP 3*256*512 = 393,216; 2 RMSNorms 512 -> 590,336; x 2 = 1,180,672
#   embeddings (tied) 64*256 = 16,384; final norm 256 -> total 1,197,312
PARAMS = 1_197_312
# Tensors written: token_embd Q8_0 64*256/32*34 = 17,408 bytes, attn_q F16 256*256*2 =
# 131,072 bytes.
Q4_K_M = 15  # llama.cpp's LlamaFileType.MOSTLY_Q4_K_M


def write_llama_gguf(path: Path) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("Tiny own Llama")
    writer.add_file_type(Q4_K_M)
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(WIDTH)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_context_length(4096)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_token_list([f"t{i}" for i in range(VOCAB)])
    raw = np.zeros(quant_shape_to_byte_shape((VOCAB, WIDTH), Q.Q8_0), dtype=np.uint8)
    writer.add_tensor("token_embd.weight", raw, raw_dtype=Q.Q8_0)
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((WIDTH, WIDTH), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# A Qwen3-MoE header: 4 experts of width 128, 2 used per token, heads of 64.
#   per layer: attention q 65,536 + k 32,768 + v 32,768 + o 65,536 = 196,608; q/k norms
#              2*64 = 128; 2 RMSNorms 512; router 256*4 = 1,024; experts 4*3*256*128 =
#              393,216 -> 591,488; x 2 = 1,182,976; + embeddings 16,384 + final norm 256
#   total 1,199,616; active: 2 experts (196,608) instead of 4 -> 394,880 a layer,
#   x 2 = 789,760 + 16,640 = 806,400
MOE_PARAMS, MOE_ACTIVE = 1_199_616, 806_400


def write_qwen3moe_gguf(path: Path) -> Path:
    writer = gguf.GGUFWriter(str(path), "qwen3moe")
    writer.add_name("Tiny own MoE")
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(WIDTH)
    writer.add_feed_forward_length(FFN)
    writer.add_expert_feed_forward_length(128)
    writer.add_expert_count(4)
    writer.add_expert_used_count(2)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_key_length(64)
    writer.add_context_length(32768)
    raw = np.zeros(quant_shape_to_byte_shape((VOCAB, WIDTH), Q.Q8_0), dtype=np.uint8)
    writer.add_tensor("token_embd.weight", raw, raw_dtype=Q.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def hostile_llama_gguf(path: Path, *, block_count: object, eps: float = 1e-5) -> Path:
    """The tiny Llama's metadata with a hostile layer count (a uint64 2^40, a float
    infinity or NaN) or epsilon, as a crafted file could carry them."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_file_type(Q4_K_M)
    if isinstance(block_count, float):
        writer.add_float32("llama.block_count", block_count)
    else:
        writer.add_uint64("llama.block_count", int(block_count))  # type: ignore[call-overload]
    writer.add_embedding_length(WIDTH)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_float32("llama.attention.layer_norm_rms_epsilon", eps)
    raw = np.zeros(quant_shape_to_byte_shape((VOCAB, WIDTH), Q.Q8_0), dtype=np.uint8)
    writer.add_tensor("token_embd.weight", raw, raw_dtype=Q.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
