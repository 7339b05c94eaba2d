"""The GGUF importer: exact sizes from whole files and from header bytes; bad files refused."""

from __future__ import annotations

import io
from pathlib import Path

import gguf
import pytest
from django.core.management import CommandError, call_command

from catalog.gguf_header import read_header
from catalog.models import LLMModel, ModelWeights
from catalog.services import CatalogError
from catalog.services.gguf import weights_import_gguf
from tests.catalog.ggufs import EXPECTED_BYTES, write_gguf, write_gguf_declaring

pytestmark = pytest.mark.django_db


@pytest.fixture
def model() -> LLMModel:
    return LLMModel.objects.create(name="Tiny Llama", slug="tiny-llama", hf_repo="t/tiny")


@pytest.fixture
def gguf_path(tmp_path: Path) -> Path:
    return write_gguf(tmp_path / "tiny-Q8_0.gguf", file_type=gguf.LlamaFileType.MOSTLY_Q8_0)


def _counts() -> tuple[int, int]:
    return LLMModel.objects.count(), ModelWeights.objects.count()


def test_the_header_gives_every_tensor_type_and_its_exact_bytes(gguf_path: Path) -> None:
    with gguf_path.open("rb") as fh:
        header = read_header(fh)
    assert {k: v["bytes"] for k, v in header.tensor_summary.items()} == EXPECTED_BYTES
    assert header.architecture == "llama"
    assert header.file_type == "Q8_0"
    # The exact file size: what the writer produced, byte for byte.
    assert header.file_bytes == gguf_path.stat().st_size


def test_tensor_sizes_agree_with_gguf_py_reader(gguf_path: Path) -> None:
    reader = gguf.GGUFReader(str(gguf_path))
    with gguf_path.open("rb") as fh:
        header = read_header(fh)
    assert [(t.name, t.n_bytes) for t in header.tensors] == [
        (t.name, int(t.n_bytes)) for t in reader.tensors
    ]


def test_a_whole_file_becomes_weights_with_the_exact_size(model: LLMModel, gguf_path: Path) -> None:
    with gguf_path.open("rb") as fh:
        result = weights_import_gguf(
            stream=fh,
            file_name=gguf_path.name,
            file_size=gguf_path.stat().st_size,
            model_slug=model.slug,
        )
    weights = ModelWeights.objects.get()
    assert result.created
    assert (weights.model, weights.format, weights.quant) == (model, "gguf", "Q8_0")
    assert weights.file_bytes == gguf_path.stat().st_size == 36320
    assert weights.tensor_summary["Q4_K"] == {"count": 1, "bytes": 432}
    assert weights.gguf_arch == "llama"


def test_the_header_bytes_alone_give_the_same_exact_size(model: LLMModel, gguf_path: Path) -> None:
    data = gguf_path.read_bytes()
    header_only = io.BytesIO(data[: read_header(io.BytesIO(data)).data_offset])
    assert len(header_only.getvalue()) < len(data) // 10
    weights_import_gguf(
        stream=header_only, file_name="tiny.gguf", file_size=None, model_slug=model.slug
    )
    assert ModelWeights.objects.get().file_bytes == len(data)


def test_without_a_slug_the_model_is_found_by_the_name_in_the_file(
    model: LLMModel, gguf_path: Path
) -> None:
    with gguf_path.open("rb") as fh:
        result = weights_import_gguf(stream=fh, file_name="x.gguf", file_size=None)
    assert result.weights.model == model


def test_importing_the_same_file_twice_updates_one_row(model: LLMModel, gguf_path: Path) -> None:
    for _round in range(2):
        call_command("import_gguf", str(gguf_path), "--model", model.slug, stdout=io.StringIO())
    assert ModelWeights.objects.count() == 1


def test_the_command_prints_what_it_created(model: LLMModel, gguf_path: Path) -> None:
    out = io.StringIO()
    call_command("import_gguf", str(gguf_path), "--model", model.slug, stdout=out)
    assert "created tiny-llama Q8_0" in out.getvalue()
    assert "Q4_K: 1 tensors, 432 bytes" in out.getvalue()


@pytest.mark.usefixtures("model")
class TestBadUploads:
    def _refused(self, stream: io.BytesIO, file_size: int | None, match: str) -> None:
        before = _counts()
        with pytest.raises(CatalogError, match=match):
            weights_import_gguf(
                stream=stream, file_name="bad.gguf", file_size=file_size, model_slug="tiny-llama"
            )
        assert _counts() == before

    def test_a_text_file_is_refused(self) -> None:
        self._refused(io.BytesIO(b"just some notes\n" * 10), 160, "not a GGUF file")

    def test_a_gguf_cut_inside_its_header_is_refused(self, gguf_path: Path) -> None:
        self._refused(io.BytesIO(gguf_path.read_bytes()[:100]), None, "truncated")

    def test_a_gguf_cut_inside_its_tensor_data_is_refused(self, gguf_path: Path) -> None:
        cut = gguf_path.read_bytes()[:20000]
        self._refused(io.BytesIO(cut), len(cut), "declares tensors up to byte")

    def test_a_2_gb_tensor_in_a_1_kb_file_is_refused(self, tmp_path: Path) -> None:
        path = write_gguf_declaring(tmp_path / "liar.gguf", n_bytes=2**31, file_size=1024)
        assert path.stat().st_size == 1024
        self._refused(io.BytesIO(path.read_bytes()), 1024, "declares tensors up to byte")

    def test_the_command_exits_non_zero_with_the_error(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.gguf"
        path.write_text("hello")
        with pytest.raises(CommandError, match="not a GGUF file"):
            call_command("import_gguf", str(path), "--model", "tiny-llama")
        assert _counts() == (1, 0)
