"""GGUF files of the ARM repacks of Q4_0 (ggml types 31-33, file types 33-35): read with
Q4_0's block sizes, imported under their own name and sized as Q4_0."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
from django.template import Context, Template
from django.utils import translation
from gguf.constants import GGMLQuantizationType as Q
from gguf.quants import quant_shape_to_byte_shape

from catalog import sizing
from catalog.gguf_header import GGUFError, read_header
from catalog.hub import gguf_quant
from catalog.models import LLMModel
from catalog.services.gguf import weights_import_gguf
from catalog.sizing import specs

pytestmark = pytest.mark.django_db

CONFIG = Path(__file__).resolve().parents[2] / "catalog" / "data" / "configs"
# (name, written as, shape: rows first, row length last). gguf-py 0.19 cannot write types
# 31-33 (its GGMLQuantizationType no longer lists them), so the file is written with Q4_0
# and the type ids of the repacked tensors are patched in the header afterwards; llama.cpp
# kept token_embd at Q4_0 in these files (llama_tensor_get_type).
TENSORS: list[tuple[str, Q, tuple[int, int]]] = [
    ("token_embd.weight", Q.Q4_0, (64, 256)),
    ("blk.0.attn_q.weight", Q.Q4_0, (256, 256)),
    ("blk.0.ffn_down.weight", Q.Q4_0, (8, 512)),
    ("output.weight", Q.Q6_K, (2, 256)),
]
REPACKED = ("blk.0.attn_q.weight", "blk.0.ffn_down.weight")
# Bytes by hand from Q4_0's blocks (32 weights in 18 bytes) and Q6_K's (256 in 210):
# token_embd 64*256/32*18 = 9,216; attn_q 256*256/32*18 = 36,864;
# ffn_down 8*512/32*18 = 2,304; output 2*256/256*210 = 420.
REPACK_BYTES = 36_864 + 2_304


def write_repack_gguf(path: Path, type_id: int, file_type: int | None) -> Path:
    """A tiny Llama GGUF whose REPACKED tensors carry ggml type `type_id`."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("Tiny ARM Llama")
    if file_type is not None:
        writer.add_file_type(file_type)
    writer.add_block_count(1)
    for name, qtype, shape in TENSORS:
        raw = np.zeros(quant_shape_to_byte_shape(shape, qtype), dtype=np.uint8)
        writer.add_tensor(name, raw, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    data = bytearray(path.read_bytes())
    for name in REPACKED:
        # tensor info: name (u64 length + bytes), n_dims u32, dims u64 each, type u32
        needle = struct.pack("<Q", len(name)) + name.encode()
        at = data.index(needle) + len(needle)
        n_dims = struct.unpack_from("<I", data, at)[0]
        struct.pack_into("<I", data, at + 4 + 8 * n_dims, type_id)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("type_id", "file_type", "name"),
    [(31, 33, "Q4_0_4_4"), (32, 34, "Q4_0_4_8"), (33, 35, "Q4_0_8_8")],
)
def test_repacked_tensors_have_q4_0s_bytes_under_their_own_name(
    tmp_path: Path, type_id: int, file_type: int, name: str
) -> None:
    path = write_repack_gguf(tmp_path / f"tiny-{name}.gguf", type_id, file_type)
    with path.open("rb") as fh:
        header = read_header(fh)
    assert header.file_type == name  # general.file_type 33, 34, 35
    assert header.tensor_summary == {
        name: {"count": 2, "bytes": REPACK_BYTES},  # 39,168
        "Q4_0": {"count": 1, "bytes": 9_216},
        "Q6_K": {"count": 1, "bytes": 420},
    }
    assert header.file_bytes == path.stat().st_size  # exact, as for any other type


def test_without_a_file_type_the_repack_holding_most_bytes_names_the_file(
    tmp_path: Path,
) -> None:
    path = write_repack_gguf(tmp_path / "tiny.gguf", 33, None)
    with path.open("rb") as fh:
        header = read_header(fh)
    assert header.file_type == "Q4_0_8_8"  # 39,168 bytes against Q4_0's 9,216


def test_another_removed_type_id_is_still_refused(tmp_path: Path) -> None:
    # 36 was IQ4_NL_4_4 (ggml.h: commented out); the reader sizes only the Q4_0 repacks.
    path = write_repack_gguf(tmp_path / "odd.gguf", 36, None)
    with path.open("rb") as fh, pytest.raises(GGUFError, match="unknown type 36"):
        read_header(fh)


def test_a_hub_file_name_gives_the_repack_which_the_estimator_sizes() -> None:
    # bartowski's file name for the catalog's one repack row (model_weights_c.csv).
    quant = gguf_quant("Mistral-Large-Instruct-2407-Q4_0_4_4")
    assert quant == "Q4_0_4_4" and specs.estimator_knows("gguf", quant)
    assert sizing.is_gguf(quant) and not specs.estimator_knows("gguf", "Q4_0_2_2")


def test_an_imported_repack_keeps_its_name_and_is_sized_as_q4_0(tmp_path: Path) -> None:
    config = json.loads(
        (CONFIG / "mistralai__Mistral-7B-Instruct-v0.3.json").read_text(encoding="utf-8")
    )
    model = LLMModel.objects.create(
        name="Mistral 7B ARM", slug="mistral-7b-arm", hf_repo="m/arm", config=config
    )
    path = write_repack_gguf(tmp_path / "tiny-Q4_0_4_8.gguf", 32, 34)
    result = weights_import_gguf(
        stream=io.BytesIO(path.read_bytes()),
        file_name=path.name,
        file_size=path.stat().st_size,
        model_slug=model.slug,
    )
    weights = result.weights
    assert weights.quant == "Q4_0_4_8"
    assert weights.file_bytes == path.stat().st_size
    # The model's layout at Q4_0 without the imatrix ffn_down guard (worked example in
    # tests/estimator/test_arm_repacks.py): 4,113,875,372 bytes.
    assert weights.computed_bytes == 4_113_875_372
    page = Template(
        "{% load catalog_quants %}{{ w.quant }} <small>{{ w.quant|sized_as }}</small>"
        "|{{ plain|sized_as }}|"
    )
    with translation.override("en"):
        text = page.render(Context({"w": weights, "plain": "Q4_0"}))
    assert text == "Q4_0_4_8 <small>sized as Q4_0 (ARM repack)</small>||"
