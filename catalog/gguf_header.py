"""Read a GGUF file's header (metadata and tensor infos) from a binary stream.

Works on a whole file or on its first few megabytes: tensor sizes come from each tensor's
type and shape (gguf.constants.GGML_QUANT_SIZES), never from reading tensor data, so a
40 GB file costs a few MB of reads. Arrays in the metadata (the tokenizer, most of the
header) are skipped, not loaded: numbers in one seek, strings by their lengths alone.
A hostile header is refused from the counts it declares (the limits below).

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

from django.utils import formats
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

# Sanity bounds: far above any real model (about 50 keys, up to a few thousand tensors, a
# tokenizer of up to ~260k tokens and ~450k merges), low enough that a hostile header is
# refused from the counts it declares, before the parser walks them.
MAX_TENSORS = 100_000
MAX_KV = 10_000
MAX_DIMS = 8
MAX_STRING_BYTES = 64 * 1024 * 1024
# Strings (or arrays) in one array: a tokenizer's tokens or merges.
MAX_ARRAY_ITEMS = 1 << 20
# The parse's work in all: keys, tensors, and the strings and arrays inside arrays. Each is a
# step of Python; arrays of numbers are skipped in one seek and do not count.
MAX_ITEMS = 1 << 21
# Arrays inside arrays: GGUF allows them, no model file has one (llama.cpp reads none), and
# each costs a step of its own, so a few are allowed, shallow.
MAX_INNER_ARRAYS = 1 << 16
MAX_ARRAY_DEPTH = 4
# The reader's window on the stream: one read per megabyte, not two per field.
CHUNK_BYTES = 1 << 20

# ggml types gguf-py no longer lists: the ARM repacks of Q4_0 (ggml/include/ggml.h
# "GGML_TYPE_Q4_0_4_4 = 31, support has been removed from gguf files", Q4_0_4_8 = 32,
# Q4_0_8_8 = 33), found in files made before. Q4_0's blocks (32 weights in 18 bytes)
# interleaved 4 or 8 rows at a time: Q4_0's sizes, under their own names.
REPACK_TYPES: dict[int, str] = {31: "Q4_0_4_4", 32: "Q4_0_4_8", 33: "Q4_0_8_8"}
# Their file types (include/llama.h "LLAMA_FTYPE_MOSTLY_Q4_0_4_4 = 33, // removed from gguf
# files, use Q4_0 and runtime repack", _4_8 = 34, _8_8 = 35; gguf-py LlamaFileType has them
# as comments only).
REPACK_FILE_TYPES: dict[int, str] = {33: "Q4_0_4_4", 34: "Q4_0_4_8", 35: "Q4_0_8_8"}

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_STRING = int(GGUFValueType.STRING)
_ARRAY = int(GGUFValueType.ARRAY)
_SCALARS: dict[int, struct.Struct] = {
    int(kind): struct.Struct(fmt)
    for kind, fmt in (
        (GGUFValueType.UINT8, "<B"),
        (GGUFValueType.INT8, "<b"),
        (GGUFValueType.UINT16, "<H"),
        (GGUFValueType.INT16, "<h"),
        (GGUFValueType.UINT32, "<I"),
        (GGUFValueType.INT32, "<i"),
        (GGUFValueType.FLOAT32, "<f"),
        (GGUFValueType.BOOL, "<?"),
        (GGUFValueType.UINT64, "<Q"),
        (GGUFValueType.INT64, "<q"),
        (GGUFValueType.FLOAT64, "<d"),
    )
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
        holding the most bytes among matrices. An ARM repack of Q4_0 keeps its name
        (Q4_0_4_4, REPACK_FILE_TYPES); the estimator sizes it as Q4_0."""
        value = self.metadata.get("general.file_type")
        if isinstance(value, int) and value in REPACK_FILE_TYPES:
            return REPACK_FILE_TYPES[value]
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


def _n(count: int) -> str:
    return formats.number_format(count, force_grouping=True)


class _Reader:
    """The header's fields, read through a window of CHUNK_BYTES on the stream, with the
    parse's work counted (MAX_ITEMS, MAX_INNER_ARRAYS) before it is done."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        stream.seek(0, 2)
        self.size = stream.tell()
        self.start = 0  # the stream offset of buf[0]
        self.buf = b""
        self.pos = 0
        self.items_left = MAX_ITEMS
        self.inner_arrays_left = MAX_INNER_ARRAYS
        self.key = ""  # the key being read, for messages

    def tell(self) -> int:
        return self.start + self.pos

    def _truncated(self) -> GGUFError:
        return GGUFError(
            _("The GGUF header is truncated: it ends at byte %(at)s.") % {"at": self.size}
        )

    def _fill(self, n: int) -> None:
        """Move the window to the current position, with at least n bytes in it."""
        if self.tell() + n > self.size:
            raise self._truncated()
        self.start += self.pos
        self.stream.seek(self.start)
        self.buf, self.pos = self.stream.read(max(n, CHUNK_BYTES)), 0
        if len(self.buf) < n:
            raise self._truncated()

    def take(self, n: int) -> bytes:
        if len(self.buf) - self.pos < n:
            self._fill(n)
        data = self.buf[self.pos : self.pos + n]
        self.pos += n
        return data

    def skip(self, n: int) -> None:
        if len(self.buf) - self.pos >= n:
            self.pos += n
            return
        if self.tell() + n > self.size:
            raise self._truncated()
        self.start, self.buf, self.pos = self.tell() + n, b"", 0

    def unpack(self, fmt: struct.Struct) -> Any:
        if len(self.buf) - self.pos < fmt.size:
            self._fill(fmt.size)
        value = fmt.unpack_from(self.buf, self.pos)[0]
        self.pos += fmt.size
        return value

    def charge(self, count: int) -> None:
        """Count `count` more items of work before doing it: a header that declares more
        than MAX_ITEMS in all is refused without walking them."""
        self.items_left -= count
        if self.items_left < 0:
            raise GGUFError(
                _("The GGUF header holds more than %(most)s keys, tensors and array items.")
                % {"most": _n(MAX_ITEMS)}
            )

    def string(self) -> str:
        n = self.unpack(_U64)
        if n > MAX_STRING_BYTES:
            raise GGUFError(_("The GGUF header declares a %(n)s-byte string.") % {"n": n})
        text = self.take(n).decode("utf-8", errors="replace")
        if "\x00" in text:  # PostgreSQL stores no NUL in text
            raise GGUFError(_("The GGUF header has a string with a NUL character."))
        return text

    def value(self, vtype: int) -> Any:
        """A scalar or string; arrays are skipped and come back as None."""
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            self.skip_array(depth=1)
            return None
        return self.unpack(self._scalar(vtype))

    def _scalar(self, vtype: int) -> struct.Struct:
        fmt = _SCALARS.get(vtype)
        if fmt is None:
            raise GGUFError(_("Unknown GGUF value type %(t)s.") % {"t": vtype})
        return fmt

    def skip_array(self, depth: int) -> None:
        """Skip an array: numbers in one seek; strings and arrays one by one, their count
        checked first."""
        if depth > MAX_ARRAY_DEPTH:
            raise GGUFError(
                _("The GGUF key %(key)s nests arrays more than %(most)s deep.")
                % {"key": self.key[:80], "most": MAX_ARRAY_DEPTH}
            )
        item_type, count = self.unpack(_U32), self.unpack(_U64)
        if item_type not in (_STRING, _ARRAY):
            self.skip(self._scalar(item_type).size * count)
            return
        if count > MAX_ARRAY_ITEMS:
            raise GGUFError(
                _("The GGUF key %(key)s holds %(n)s items in one array; at most %(most)s.")
                % {"key": self.key[:80], "n": _n(count), "most": _n(MAX_ARRAY_ITEMS)}
            )
        self.charge(count)
        if item_type == _STRING:
            self._skip_strings(count)
            return
        self.inner_arrays_left -= count
        if self.inner_arrays_left < 0:
            raise GGUFError(
                _("The GGUF header holds more than %(most)s arrays inside arrays.")
                % {"most": _n(MAX_INNER_ARRAYS)}
            )
        for _i in range(count):
            self.skip_array(depth + 1)

    def _skip_strings(self, count: int) -> None:
        """Skip `count` strings (a tokenizer has hundreds of thousands): the loop reads the
        window directly, as a method call per string would double the parse's time."""
        unpack = _U64.unpack_from
        buf, pos = self.buf, self.pos
        for _i in range(count):
            if len(buf) - pos < 8:
                self.pos = pos
                self._fill(8)
                buf, pos = self.buf, self.pos
            n = unpack(buf, pos)[0]
            pos += 8 + n
            if pos > len(buf):  # the string runs past the window
                self.pos = pos - n
                self.skip(n)
                buf, pos = self.buf, self.pos
        self.pos = pos


def _tensor_type(raw_type: int) -> tuple[str, int, int] | None:
    """(name, weights per block, bytes per block) of a ggml type id; None if unknown.
    The ARM repacks of Q4_0 (REPACK_TYPES) have Q4_0's blocks."""
    if raw_type in REPACK_TYPES:
        block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType.Q4_0]
        return REPACK_TYPES[raw_type], block, type_size
    try:
        qtype = GGMLQuantizationType(raw_type)
        block, type_size = GGML_QUANT_SIZES[qtype]
    except (ValueError, KeyError):
        return None
    return qtype.name, block, type_size


def _tensor_info(reader: _Reader) -> TensorInfo:
    name = reader.string()
    n_dims = reader.unpack(_U32)
    if not 0 < n_dims <= MAX_DIMS:
        raise GGUFError(_("Tensor %(name)s has %(n)s dimensions.") % {"name": name, "n": n_dims})
    dims = tuple(reader.unpack(_U64) for _d in range(n_dims))
    raw_type, offset = reader.unpack(_U32), reader.unpack(_U64)
    known = _tensor_type(raw_type)
    if known is None:
        raise GGUFError(
            _("Tensor %(name)s has unknown type %(t)s.") % {"name": name, "t": raw_type}
        )
    type_name, block, type_size = known
    if dims[0] % block:
        raise GGUFError(
            _("Tensor %(name)s: row length %(n)s is not a multiple of the block size.")
            % {"name": name, "n": dims[0]}
        )
    elements = 1
    for d in dims:
        elements *= d
    # ggml stores ne[0] first; show the shape with the row length last, like the estimator.
    return TensorInfo(name, type_name, dims[::-1], offset, elements // block * type_size)


def read_header(stream: IO[bytes]) -> GGUFHeader:
    """Parse the header from a seekable binary stream positioned anywhere.

    The work is bounded before it is done: counts of keys, tensors and array items are
    checked against the limits above as they are declared, and arrays nest at most
    MAX_ARRAY_DEPTH deep, so a hostile header is refused in a fraction of a second."""
    reader = _Reader(stream)
    if reader.size < 4 or reader.unpack(_U32) != GGUF_MAGIC:
        raise GGUFError(_("This is not a GGUF file (it does not start with “GGUF”)."))
    version = reader.unpack(_U32)
    if version not in (2, 3):
        raise GGUFError(_("GGUF version %(v)s is not supported (2 and 3 are).") % {"v": version})
    n_tensors, n_kv = reader.unpack(_U64), reader.unpack(_U64)
    if n_tensors > MAX_TENSORS:
        raise GGUFError(
            _("The GGUF header declares %(n)s tensors; at most %(most)s are read.")
            % {"n": _n(n_tensors), "most": _n(MAX_TENSORS)}
        )
    if n_kv > MAX_KV:
        raise GGUFError(
            _("The GGUF header declares %(n)s keys; at most %(most)s are read.")
            % {"n": _n(n_kv), "most": _n(MAX_KV)}
        )
    reader.charge(n_kv + n_tensors)
    metadata: dict[str, Any] = {}
    for _i in range(n_kv):
        key = reader.key = reader.string()
        value = reader.value(reader.unpack(_U32))
        if value is not None:
            metadata[key] = value
    tensors = tuple(_tensor_info(reader) for _i in range(n_tensors))
    alignment = metadata.get("general.alignment", GGUF_DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise GGUFError(_("general.alignment must be a power of two."))
    return GGUFHeader(version, metadata, tensors, alignment, _pad(reader.tell(), alignment))


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
