"""config.json importer: the estimator's parser decides what is readable."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from catalog.models import LLMModel
from catalog.services import CatalogError
from catalog.services.configs import config_parse_text, model_import_config

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
LLAMA_8B = ROOT / "estimator" / "data" / "validation" / "configs"
LLAMA_8B_FILE = LLAMA_8B / "meta-llama__Llama-3.1-8B-Instruct.json"


def test_a_config_creates_a_model_with_the_counted_parameters() -> None:
    config = json.loads(LLAMA_8B_FILE.read_text())
    result = model_import_config(config=config, hf_repo="meta-llama/Llama-3.1-8B-Instruct")
    model = result.model
    assert result.created
    assert model.slug == "llama-3-1-8b-instruct"
    # 8,030,261,248: the estimator's tensor count for Llama 3.1 8B (untied head).
    assert model.params_total == model.params_active == 8_030_261_248
    assert (model.architecture, model.attention, model.model_type) == ("dense", "gqa", "llama")
    assert model.needs_review


def test_importing_again_updates_the_same_model() -> None:
    config = json.loads(LLAMA_8B_FILE.read_text())
    model_import_config(config=config, hf_repo="meta-llama/Llama-3.1-8B-Instruct")
    config["max_position_embeddings"] = 8192
    again = model_import_config(config=config, slug="llama-3-1-8b-instruct")
    assert not again.created
    assert "config" in again.changed
    assert LLMModel.objects.count() == 1


def test_a_config_without_its_layer_count_is_refused_and_writes_nothing() -> None:
    config = {"model_type": "mystery", "hidden_size": 1024, "num_attention_heads": 8}
    with pytest.raises(CatalogError, match="num_hidden_layers"):
        model_import_config(config=config, hf_repo="someone/mystery")
    assert LLMModel.objects.count() == 0


def test_text_that_is_not_json_is_refused_with_a_message() -> None:
    with pytest.raises(CatalogError, match="Not valid JSON"):
        config_parse_text(text="{not json")
    with pytest.raises(CatalogError, match="JSON object"):
        config_parse_text(text="[1, 2]")


def test_bare_infinity_in_a_published_config_is_kept_as_text() -> None:
    assert config_parse_text(text='{"time_step_limit": [0.0, Infinity]}') == {
        "time_step_limit": [0.0, "Infinity"]
    }


def test_the_command_names_the_repo_from_the_file_name_and_prints_the_change() -> None:
    out = io.StringIO()
    call_command("import_config", str(LLAMA_8B_FILE), stdout=out)
    assert "created model llama-3-1-8b-instruct" in out.getvalue()
    assert LLMModel.objects.get().hf_repo == "meta-llama/Llama-3.1-8B-Instruct"


def test_the_command_exits_non_zero_on_a_bad_config(tmp_path: Path) -> None:
    path = tmp_path / "someone__mystery.json"
    path.write_text(json.dumps({"model_type": "mystery", "hidden_size": 64}))
    with pytest.raises(CommandError, match="num_hidden_layers"):
        call_command("import_config", str(path))
    assert LLMModel.objects.count() == 0
