"""One engine table (estimator.engines): the configurator's form, its API schema, the launch
commands and the catalog's support matrix all list the engines it lists, and the site
renders the estimator's launch texts in the reader's language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog import hardware
from estimator import launch
from estimator.engines import (
    BACKENDS,
    ENGINE_TABLE,
    ENGINES,
    KV_DTYPES,
    engine_by_slug,
    engine_capability,
    quantized_kv_types,
)
from sizing_site.configurator import commands
from sizing_site.configurator.api_schema import SETUP_PROPERTIES
from sizing_site.configurator.fields import OFFLOAD_FIELDS
from sizing_site.configurator.forms import ENGINE_CHOICES, KV_CHOICES
from tests.estimator.test_launch import GLM_AIR

DATA = Path(__file__).resolve().parents[2] / "catalog" / "data"


def _seed(name: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return rows


def test_the_form_the_api_schema_and_the_launch_commands_list_the_tables_engines() -> None:
    assert ENGINES == ("llama.cpp", "ollama", "vllm", "sglang", "tensorrt-llm", "mlx")
    assert [(c.name, c.label) for c in ENGINE_TABLE] == ENGINE_CHOICES
    assert SETUP_PROPERTIES["engine"]["enum"] == list(ENGINES)
    assert tuple(launch.launch_commands(GLM_AIR)) == ENGINES
    assert tuple(OFFLOAD_FIELDS) == ENGINES
    assert [value for value, _label in KV_CHOICES] == list(KV_DTYPES)
    assert SETUP_PROPERTIES["kv"]["enum"] == list(KV_DTYPES)


def test_the_support_matrix_names_the_tables_engines_and_backends() -> None:
    # catalog/data/engine_support.json keeps which hardware runs a backend; the engines it
    # names are the table's (by catalog slug) and every backend is one the engine has.
    rows = _seed("engine_support.json")
    assert {hardware.engine_name(str(row["engine"])) for row in rows} == set(ENGINES)
    for row in rows:
        capability = engine_by_slug(str(row["engine"]))
        assert capability is not None and row["backend"] in capability.backends, row
    assert [str(row["slug"]) for row in _seed("engines.json")] == [c.slug for c in ENGINE_TABLE]
    assert sorted(hardware.ENGINE_PREFERENCE) == sorted(ENGINES)


def test_the_table_is_consistent_with_itself() -> None:
    for capability in ENGINE_TABLE:
        assert set(capability.launch_backends) <= set(capability.backends) <= set(BACKENDS)
        assert capability.family in ("llama", "server")
        assert {kv for kv, _ in capability.kv_cli} <= set(capability.kv_cache_types)
        assert set(quantized_kv_types(capability.name)) <= set(KV_DTYPES)
    assert quantized_kv_types("llama.cpp") == ("q8_0", "q4_0")
    assert quantized_kv_types("vllm") == ("fp8",)
    with pytest.raises(ValueError, match="unknown engine 'exllama'"):
        engine_capability("exllama")


def test_the_site_translates_the_template_before_it_fills_it_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(commands, "gettext", lambda text: text.replace("has no", "HAS NO"))
    reason = commands.refusal(
        engine="tensorrt-llm", weights_format="hf", quant="bf16", backend="rocm", kv="f16"
    )
    assert reason == "TensorRT-LLM HAS NO rocm backend; it runs on cuda."
    shown = commands.shown(launch.launch_commands(GLM_AIR)["vllm"])
    assert shown.text is None and shown.refused is not None and "vLLM" in shown.refused
