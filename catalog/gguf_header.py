"""Read a GGUF file's header (metadata and tensor infos) from a binary stream.

Works on a whole file or on its first few megabytes: tensor sizes come from each tensor's
type and shape (gguf.constants.GGML_QUANT_SIZES), never from reading tensor data, so a
40 GB file costs a few MB of reads. Arrays in the metadata (the tokenizer, most of the
header) are skipped with seeks, not loaded.

Layout (GGUF v2/v3, ggml docs/gguf.md): magic, version, tensor count, key/value count,
key/values, tensor infos (name, dims, type, offset), padding to the alignment, data.
The exact file size is data offset + the end of the last tensor padded to the alignment,
as both gguf-py's GGUFWriter and ggml's gguf writer pad after every tensor.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass
from typing import IO, Any

from django.utils.translation import gettext as _
from gguf.constants import (
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    GGMLQuantizationType,
    GGUFValueType,
    LlamaFileType,
)

from catalog.services.common import CatalogError

# Sanity bounds: far above any real model, low enough to stop a hostile header early.
MAX_TENSORS = 1_000_000
MAX_KV = 100_000
MAX_DIMS = 8
MAX_STRING_BYTES = 64 * 1024 * 1024

_SCALARS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.BOOL: "<?",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
}


class GGUFError(CatalogError):
    """Not a GGUF file, truncated, or declaring impossible tensors."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    type_name: str
    shape: tuple[int, ...]
    offset: int
    n_bytes: int


@dataclass(frozen=True)
class GGUFHeader:
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def file_bytes(self) -> int:
        """Exact size of the whole file: data offset + last tensor end, padded."""
        end = max((t.offset + _pad(t.n_bytes, self.alignment) for t in self.tensors), default=0)
        return self.data_offset + end

    @property
    def data_end(self) -> int:
        """Where the last tensor's bytes end (without trailing padding)."""
        return self.data_offset + max((t.offset + t.n_bytes for t in self.tensors), default=0)

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    @property
    def tensor_summary(self) -> dict[str, dict[str, int]]:
        """{type: {"count": tensors, "bytes": bytes}}, largest share first."""
        counts: Counter[str] = Counter()
        sizes: Counter[str] = Counter()
        for t in self.tensors:
            counts[t.type_name] += 1
            sizes[t.type_name] += t.n_bytes
        return {k: {"count": counts[k], "bytes": sizes[k]} for k, _n in sizes.most_common()}

    @property
    def file_type(self) -> str:
        """llama.cpp's file type (Q4_K_M ...); without general.file_type, the tensor type
        holding the most bytes among matrices."""
        value = self.metadata.get("general.file_type")
        if isinstance(value, int):
            try:
                return LlamaFileType(value).name.removeprefix("MOSTLY_").removeprefix("ALL_")
            except ValueError:
                pass
        matrices: Counter[str] = Counter()
        for t in self.tensors:
            if len(t.shape) >= 2:
                matrices[t.type_name] += t.n_bytes
        return matrices.most_common(1)[0][0] if matrices else "F32"


def _pad(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


class _Reader:
    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        stream.seek(0, 2)
        self.size = stream.tell()
        stream.seek(0)

    def take(self, n: int) -> bytes:
        data = self.stream.read(n)
        if len(data) != n:
            raise GGUFError(
                _("The GGUF header is truncated: it ends at byte %(at)s.") % {"at": self.size}
            )
        return data

    def skip(self, n: int) -> None:
        if self.stream.tell() + n > self.size:
            raise GGUFError(
                _("The GGUF header is truncated: it ends at byte %(at)s.") % {"at": self.size}
            )
        self.stream.seek(n, 1)

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.unpack("<Q")
        if n > MAX_STRING_BYTES:
            raise GGUFError(_("The GGUF header declares a %(n)s-byte string.") % {"n": n})
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, vtype: int) -> Any:
        """A scalar or string; arrays are skipped and come back as None."""
        try:
            kind = GGUFValueType(vtype)
        except ValueError:
            raise GGUFError(_("Unknown GGUF value type %(t)s.") % {"t": vtype}) from None
        if kind == GGUFValueType.STRING:
            return self.string()
        if kind == GGUFValueType.ARRAY:
            self._skip_array()
            return None
        return self.unpack(_SCALARS[kind])

    def _skip_array(self) -> None:
        item_type, count = self.unpack("<I"), self.unpack("<Q")
        if item_type in (GGUFValueType.STRING, GGUFValueType.ARRAY):
            for _i in range(count):
                self.value(item_type)
            return
        try:
            width = struct.calcsize(_SCALARS[GGUFValueType(item_type)])
        except (ValueError, KeyError):
            raise GGUFError(_("Unknown GGUF value type %(t)s.") % {"t": item_type}) from None
        self.skip(width * count)


def _tensor_info(reader: _Reader) -> TensorInfo:
    name = reader.string()
    n_dims = reader.unpack("<I")
    if not 0 < n_dims <= MAX_DIMS:
        raise GGUFError(_("Tensor %(name)s has %(n)s dimensions.") % {"name": name, "n": n_dims})
    dims = tuple(reader.unpack("<Q") for _d in range(n_dims))
    raw_type, offset = reader.unpack("<I"), reader.unpack("<Q")
    try:
        qtype = GGMLQuantizationType(raw_type)
        block, type_size = GGML_QUANT_SIZES[qtype]
    except (ValueError, KeyError):
        raise GGUFError(
            _("Tensor %(name)s has unknown type %(t)s.") % {"name": name, "t": raw_type}
        ) from None
    if dims[0] % block:
        raise GGUFError(
            _("Tensor %(name)s: row length %(n)s is not a multiple of the block size.")
            % {"name": name, "n": dims[0]}
        )
    elements = 1
    for d in dims:
        elements *= d
    # ggml stores ne[0] first; show the shape with the row length last, like the estimator.
    return TensorInfo(name, qtype.name, dims[::-1], offset, elements // block * type_size)


def read_header(stream: IO[bytes]) -> GGUFHeader:
    """Parse the header from a seekable binary stream positioned anywhere."""
    reader = _Reader(stream)
    head = stream.read(4)
    if len(head) < 4 or struct.unpack("<I", head)[0] != GGUF_MAGIC:
        raise GGUFError(_("This is not a GGUF file (it does not start with “GGUF”)."))
    version = reader.unpack("<I")
    if version not in (2, 3):
        raise GGUFError(_("GGUF version %(v)s is not supported (2 and 3 are).") % {"v": version})
    n_tensors, n_kv = reader.unpack("<Q"), reader.unpack("<Q")
    if n_tensors > MAX_TENSORS or n_kv > MAX_KV:
        raise GGUFError(_("The GGUF header declares implausible counts."))
    metadata: dict[str, Any] = {}
    for _i in range(n_kv):
        key = reader.string()
        value = reader.value(reader.unpack("<I"))
        if value is not None:
            metadata[key] = value
    tensors = tuple(_tensor_info(reader) for _i in range(n_tensors))
    alignment = metadata.get("general.alignment", GGUF_DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise GGUFError(_("general.alignment must be a power of two."))
    return GGUFHeader(version, metadata, tensors, alignment, _pad(stream.tell(), alignment))


def check_fits(header: GGUFHeader, file_size: int) -> None:
    """Refuse a header whose tensors end past the end of the real file."""
    if header.data_end > file_size:
        raise GGUFError(
            _(
                "The GGUF file declares tensors up to byte %(end)s, but the file has "
                "%(size)s bytes: it is truncated or corrupt."
            )
            % {"end": header.data_end, "size": file_size}
        )
