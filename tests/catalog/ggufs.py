"""Small real GGUF files written with gguf-py's GGUFWriter, for the importer tests."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
from gguf.constants import GGMLQuantizationType as Q
from gguf.quants import quant_shape_to_byte_shape

# (name, type, shape as numpy writes it: rows first, row length last)
TENSORS: list[tuple[str, Q, tuple[int, ...]]] = [
    ("token_embd.weight", Q.Q8_0, (64, 256)),
    ("blk.0.attn_norm.weight", Q.F32, (256,)),
    ("blk.0.attn_q.weight", Q.F16, (32, 256)),
    ("blk.0.ffn_down.weight", Q.Q4_K, (3, 256)),
    ("output.weight", Q.Q6_K, (2, 256)),
]
# Bytes per tensor, by hand from the block sizes (weights per block, bytes per block):
# Q8_0 64*256/32*34 = 17408; F32 256*4 = 1024; F16 32*256*2 = 16384;
# Q4_K 3*256/256*144 = 432; Q6_K 2*256/256*210 = 420.
EXPECTED_BYTES = {"Q8_0": 17408, "F32": 1024, "F16": 16384, "Q4_K": 432, "Q6_K": 420}


def write_gguf(path: Path, name: str = "Tiny Llama", file_type: int | None = None) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name)
    if file_type is not None:
        writer.add_file_type(file_type)
    writer.add_block_count(1)
    writer.add_context_length(4096)
    # An array of strings, like the tokenizer: the reader must skip it.
    writer.add_token_list(["<s>", "</s>", "hello", "world"])
    for tensor_name, qtype, shape in TENSORS:
        if qtype == Q.F32:
            data = np.zeros(shape, dtype=np.float32)
            writer.add_tensor(tensor_name, data)
        elif qtype == Q.F16:
            writer.add_tensor(tensor_name, np.zeros(shape, dtype=np.float16))
        else:
            raw = np.zeros(quant_shape_to_byte_shape(shape, qtype), dtype=np.uint8)
            writer.add_tensor(tensor_name, raw, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_gguf_declaring(path: Path, n_bytes: int, file_size: int) -> Path:
    """A GGUF whose one F32 tensor claims n_bytes while the file holds file_size bytes."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor_info("huge.weight", [n_bytes // 4], np.dtype(np.float32), n_bytes)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    with path.open("ab") as fh:
        fh.write(b"\0" * (file_size - path.stat().st_size))
    return path
