"""Hostile GGUF headers are refused with a message in well under a second: counts checked
as they are declared (before the parser walks them), the parse's work bounded in all, and
arrays nested too deep refused before Python's recursion limit. Real headers still parse.

The headers are built by hand, compactly: a count may claim millions of items that the
bytes never hold, as an attacker's file would, since the parser must refuse from the count."""

from __future__ import annotations

import io
import struct
import time

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation
from gguf.constants import GGUFValueType

from catalog.gguf_header import (
    MAX_ARRAY_ITEMS,
    MAX_INNER_ARRAYS,
    MAX_KV,
    MAX_TENSORS,
    GGUFError,
    read_header,
)
from catalog.models import LLMModel, ModelWeights
from tests.owncatalog.base import OwnCase

STRING, ARRAY, UINT8 = GGUFValueType.STRING, GGUFValueType.ARRAY, GGUFValueType.UINT8
EMPTY_STRING = struct.pack("<Q", 0)
EMPTY_ARRAY = struct.pack("<IQ", UINT8, 0)


def gguf(*kvs: bytes, n_tensors: int = 0, n_kv: int | None = None) -> bytes:
    count = len(kvs) if n_kv is None else n_kv
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, count) + b"".join(kvs)


def key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


def array(name: str, item_type: int, count: int, items: bytes = b"") -> bytes:
    return key(name) + struct.pack("<IIQ", ARRAY, item_type, count) + items


def string(name: str, value: bytes) -> bytes:
    return key(name) + struct.pack("<IQ", STRING, len(value)) + value


MiB = 1024 * 1024
# Each refused with its reason; the counts claim what 64 MB (or more) of bytes would hold.
HOSTILE = {
    "millions of empty strings": (
        gguf(array("tokenizer.ggml.tokens", STRING, 8 * MiB, EMPTY_STRING * 1024)),
        "holds 8,388,608 items in one array; at most 1,048,576.",
    ),
    "millions of empty arrays": (
        gguf(array("tokenizer.ggml.merges", ARRAY, 4 * MiB, EMPTY_ARRAY * 1024)),
        "holds 4,194,304 items in one array; at most 1,048,576.",
    ),
    "arrays nested 500 deep": (
        gguf(array("general.tags", ARRAY, 1, struct.pack("<IQ", ARRAY, 1) * 498 + EMPTY_ARRAY)),
        "The GGUF key general.tags nests arrays more than 4 deep.",
    ),
}


def _refused_quickly(data: bytes) -> str:
    started = time.perf_counter()
    with pytest.raises(GGUFError) as caught:
        read_header(io.BytesIO(data))
    assert time.perf_counter() - started < 1.0
    return caught.value.message


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_headers_are_refused_from_their_counts(name: str) -> None:
    data, reason = HOSTILE[name]
    assert len(data) < 64 * 1024
    assert reason in _refused_quickly(data)


def test_declared_key_and_tensor_counts_have_a_ceiling() -> None:
    assert "declares 1,000,000,000 keys" in _refused_quickly(gguf(n_kv=10**9))
    assert f"at most {MAX_KV:,} are read" in _refused_quickly(gguf(n_kv=MAX_KV + 1))
    assert f"at most {MAX_TENSORS:,} are read" in _refused_quickly(gguf(n_tensors=2**40))


def test_the_work_in_all_is_bounded_even_when_every_array_is_within_its_count() -> None:
    # Two tokenizer-sized arrays of real empty strings, 16 MB of them: each within
    # MAX_ARRAY_ITEMS, together past the parse's budget. The old parser walked both (3 s).
    tokens = array("a", STRING, MAX_ARRAY_ITEMS, EMPTY_STRING * MAX_ARRAY_ITEMS)
    merges = array("b", STRING, MAX_ARRAY_ITEMS, EMPTY_STRING * MAX_ARRAY_ITEMS)
    message = _refused_quickly(gguf(tokens, merges))
    assert "holds more than 2,097,152 keys, tensors and array items" in message
    # Arrays inside arrays (no model file has one) have a small budget of their own.
    inner = 2 * MAX_INNER_ARRAYS
    message = _refused_quickly(gguf(array("x", ARRAY, inner, EMPTY_ARRAY * inner)))
    assert "more than 65,536 arrays inside arrays" in message


def test_a_nul_in_a_kept_string_is_refused() -> None:
    assert "NUL" in _refused_quickly(gguf(string("general.name", b"Llama\x00")))


def test_a_llama_3_sized_tokenizer_is_read_well_within_the_bounds() -> None:
    # 128,256 tokens and 280,147 merges, as Llama 3's header holds (about 8 MB).
    tokens = [b"tok%d" % i for i in range(128_256)]
    merges = [b"m%d x%d" % (i, i) for i in range(280_147)]

    def strings(values: list[bytes]) -> bytes:
        return b"".join(struct.pack("<Q", len(v)) + v for v in values)

    data = gguf(
        string("general.architecture", b"llama"),
        array("tokenizer.ggml.tokens", STRING, len(tokens), strings(tokens)),
        array("tokenizer.ggml.merges", STRING, len(merges), strings(merges)),
        array("tokenizer.ggml.scores", GGUFValueType.FLOAT32, len(tokens), b"\0" * 4 * 128_256),
        string("general.name", b"After the tokenizer"),
    )
    started = time.perf_counter()
    header = read_header(io.BytesIO(data))
    assert time.perf_counter() - started < 1.0
    assert header.metadata == {
        "general.architecture": "llama",
        "general.name": "After the tokenizer",
    }
    assert header.data_offset == -(-len(data) // 32) * 32


class HostileUploads(OwnCase):
    """Both importers: the own-model page (editors) and the staff GGUF page."""

    def setUp(self) -> None:
        super().setUp()
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def _post(self, url: str, data: dict[str, object]) -> tuple[float, str]:
        started = time.perf_counter()
        response = self.client.post(url, data)
        elapsed = time.perf_counter() - started
        assert response.status_code == 400
        return elapsed, response.content.decode()

    def test_the_own_model_page_refuses_each_with_its_reason(self) -> None:
        self.client.force_login(self.dave)  # an editor of org A
        url = reverse("owncatalog:model-new", args=["org-a"])
        for name, (data, reason) in HOSTILE.items():
            for header_only in (False, True):
                fields: dict[str, object] = {
                    "name": "Hostile",
                    "gguf_file": SimpleUploadedFile("h.gguf", data),
                }
                if header_only:  # the page's script sends the header and the file's size
                    fields |= {"header_only": "on", "file_size": str(64 * MiB)}
                elapsed, page = self._post(url, fields)
                assert elapsed < 1.0, name
                assert reason in page, name
        assert not LLMModel.all_orgs.filter(organization=self.org_a).exists()

    def test_the_staff_importer_refuses_each_with_its_reason(self) -> None:
        staff = User.objects.create_user("s", "s@example.invalid", "pw-s-12345", is_staff=True)
        self.client.force_login(staff)
        url = reverse("catalog:gguf-upload")
        for name, (data, reason) in HOSTILE.items():
            elapsed, page = self._post(url, {"file": SimpleUploadedFile("h.gguf", data)})
            assert elapsed < 1.0, name
            assert reason in page, name
        assert not ModelWeights.objects.exists()
