"""parse_hf_config: worked examples, published parameter counts, unreadable configs."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from estimator.model import ConfigError, ModelSpec, parse_hf_config

DATA = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation"
CONFIGS = DATA / "configs"


def load_config(name: str) -> dict[str, Any]:
    with (CONFIGS / f"{name}.json").open() as f:
        result: dict[str, Any] = json.load(f)
    return result


def csv_rows() -> dict[str, dict[str, str]]:
    with (DATA / "model_configs.csv").open() as f:
        return {row["model"]: row for row in csv.DictReader(f)}


# Verbatim config fixture -> model_configs.csv row it must reproduce.
VERBATIM = {
    "meta-llama__Llama-3.1-8B-Instruct": "Llama-3.1-8B",
    "meta-llama__Llama-3.1-70B-Instruct": "Llama-3.1-70B",
    "meta-llama__Llama-3.2-3B": "Llama-3.2-3B",
    "Qwen__Qwen2.5-7B-Instruct": "Qwen2.5-7B-Instruct",
    "Qwen__Qwen2.5-72B-Instruct": "Qwen2.5-72B-Instruct",
    "Qwen__Qwen3-0.6B": "Qwen3-0.6B",
    "Qwen__Qwen3-8B": "Qwen3-8B",
    "Qwen__Qwen3-32B": "Qwen3-32B",
    "Qwen__Qwen3-30B-A3B": "Qwen3-30B-A3B",
    "Qwen__Qwen3-235B-A22B": "Qwen3-235B-A22B",
    "deepseek-ai__DeepSeek-V3": "DeepSeek-V3",
    "deepseek-ai__DeepSeek-R1": "DeepSeek-R1",
    "moonshotai__Kimi-K2-Instruct": "Kimi-K2-Instruct",
    "openai__gpt-oss-20b": "gpt-oss-20b",
    "openai__gpt-oss-120b": "gpt-oss-120b",
    "google__gemma-2-9b-it": "Gemma-2-9B-it",
    "microsoft__phi-4": "Phi-4",
    "mistralai__Mistral-7B-Instruct-v0.3": "Mistral-7B-Instruct-v0.3",
    "mistralai__Mixtral-8x7B-Instruct-v0.1": "Mixtral-8x7B-Instruct-v0.1",
}


@pytest.mark.parametrize("fixture,row_name", sorted(VERBATIM.items()))
def test_it_reproduces_published_param_counts_from_verbatim_configs(
    fixture: str, row_name: str
) -> None:
    row = csv_rows()[row_name]
    spec = parse_hf_config(load_config(fixture))
    assert spec.params_total == int(row["params_total_computed"])
    assert spec.params_active == int(row["params_active_computed"])


def test_it_counts_llama_3_1_8b_exactly() -> None:
    # 32 x (4096*4096*2 [q, o] + 4096*1024*2 [k, v] + 3*4096*14336 [gate, up, down]
    #       + 2*4096 [two norms]) + 2*128256*4096 [embd, output] + 4096 [final norm]
    # = 32 x 218,112,000 + 1,050,673,152 + 4096 = 8,030,261,248
    spec = parse_hf_config(load_config("meta-llama__Llama-3.1-8B-Instruct"))
    expected = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096)
    expected += 2 * 128256 * 4096 + 4096
    assert expected == 8_030_261_248
    assert spec.params_total == expected
    assert spec.gguf_arch == "llama"
    assert not spec.is_fallback
    assert [t.name for t in spec.tensors[:3]] == ["token_embd", "output_norm", "output"]


def test_it_reads_an_unknown_model_type_with_the_fallback_parser() -> None:
    spec = parse_hf_config({"model_type": "brand_new", "hidden_size": 1024,
                            "num_attention_heads": 8, "num_hidden_layers": 4})
    assert spec.is_fallback
    assert any("fallback" in note for note in spec.notes)
    assert spec.intermediate_size == 4096


@pytest.mark.parametrize("bad,field", [
    ({"num_hidden_layers": 0}, "num_hidden_layers"),
    ({"hidden_size": -1}, "hidden_size"),
    ({"hidden_size": "4096"}, "hidden_size"),
    ({"hidden_size": math.nan}, "hidden_size"),
    ({"num_key_value_heads": 5}, "num_key_value_heads"),
    ({"model_type": 3}, "model_type"),
])
def test_it_rejects_unreadable_configs_naming_the_field(bad: dict[str, Any], field: str) -> None:
    config = load_config("meta-llama__Llama-3.1-8B-Instruct") | bad
    with pytest.raises(ConfigError) as err:
        parse_hf_config(config)
    assert err.value.field == field
    assert isinstance(err.value, ValueError)


def test_it_needs_layers_for_an_unknown_model_type() -> None:
    with pytest.raises(ConfigError):
        parse_hf_config({"model_type": "brand_new", "hidden_size": 1024})


def test_it_counts_every_tensor_element_once(spec: ModelSpec | None = None) -> None:
    spec = parse_hf_config(load_config("Qwen__Qwen3-30B-A3B"))
    names = [t.name for t in spec.tensors]
    assert len(names) == len(set(names))
    assert all(t.n_elements == math.prod(t.shape) for t in spec.tensors)
