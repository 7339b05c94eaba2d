"""What the estimator reads of a catalog model: its parsed config.json, the fields derived
from it, the size of a weights format and the longest context a page may offer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from catalog.models import Architecture, LLMModel
from estimator.api import RequestError, model_input
from estimator.api import cache as estimator_cache
from estimator.model import ModelSpec, parse_hf_config
from estimator.model.fields import MAX_LAYERS
from estimator.model.generic import LAYER_KEYS, PATTERN_KEYS
from estimator.weights import (
    EXTRA_GGUF_FILE_TYPES,
    GGUF_FILE_TYPES,
    HF_FORMATS,
    REPACK_BASE,
    WeightsFormat,
    weights_breakdown,
)


def spec_from_config(config: Mapping[str, Any]) -> ModelSpec:
    """Parse a config.json; raises estimator.model.ConfigError when it cannot."""
    return parse_hf_config(config)


def model_spec(model: LLMModel) -> ModelSpec:
    return spec_from_config(model.config)


def estimator_knows(fmt: str, quant: str) -> bool:
    """Whether the estimator sizes this format; an ARM repack of Q4_0 (Q4_0_4_4, Q4_0_4_8,
    Q4_0_8_8: estimator.weights.REPACK_BASE) keeps its name and is sized as Q4_0."""
    if fmt == "gguf":
        return quant in GGUF_FILE_TYPES or quant in EXTRA_GGUF_FILE_TYPES or quant in REPACK_BASE
    return fmt == "hf" and quant in HF_FORMATS


def computed_bytes(spec: ModelSpec, fmt: str, quant: str) -> int | None:
    """The estimator's size of the text model in this format; None for a format it lacks.

    Multimodal towers are excluded, as in weights_breakdown (a GGUF mmproj is its own file).
    """
    if not estimator_knows(fmt, quant):
        return None
    return weights_breakdown(spec, WeightsFormat(family=fmt, name=quant)).total_bytes


@lru_cache(maxsize=8192)
def computed_bytes_of_config_text(hf_config_json: str, fmt: str, quant: str) -> int | None:
    """computed_bytes for the config.json with this canonical text (model_input's
    hf_config_json, whose parse estimator.api.cache keeps), kept per process: a catalog
    load sizes every seed weights row each time it runs (1.8 s of a repeated load's 2.4,
    before; the test suite loads the catalog in some fifty test classes)."""
    return computed_bytes(estimator_cache.model_spec(hf_config_json), fmt, quant)


def _attention(spec: ModelSpec) -> str:
    if spec.mla is not None:
        base = "mla"
    elif spec.n_kv_heads == spec.n_heads:
        base = "mha"
    elif spec.n_kv_heads == 1:
        base = "mqa"
    else:
        base = "gqa"
    extra = sorted({layer.attention for layer in spec.layers} - {"full", "mla"})
    return "+".join([base, *extra])


def spec_fields(spec: ModelSpec) -> dict[str, int | str]:
    """LLMModel fields the estimator derives from a config.json, by field name."""
    kinds = {layer.attention for layer in spec.layers}
    if "linear" in kinds:
        architecture = Architecture.HYBRID
    elif spec.mla is not None and spec.is_moe:
        architecture = Architecture.MLA
    elif spec.is_moe:
        architecture = Architecture.MOE
    else:
        architecture = Architecture.DENSE
    return {
        "params_total": spec.params_total,
        "params_active": spec.params_active,
        "architecture": str(architecture),
        "attention": _attention(spec),
        "model_type": spec.model_type,
    }


@dataclass(frozen=True)
class RopeContext:
    """How a model reaches its longest context: native_tokens is what config.json allows
    without RoPE extension (its own scaling's original length, else
    max_position_embeddings), max_tokens the longest context offered, scaling_type the
    config's RoPE scaling type ("" when only the model card states the extension)."""

    native_tokens: int
    max_tokens: int
    scaling_type: str


def _parsed(model: LLMModel) -> ModelSpec | None:
    """The estimator's spec of the model's config.json, None when it cannot parse it."""
    try:
        return estimator_cache.model_spec(model_input(model.config).hf_config_json)
    except RequestError:
        return None


def published_context_tokens(model: LLMModel) -> int | None:
    """The longest context the catalog publishes for the model: its max_context_tokens,
    or the longer length its model card states with RoPE scaling."""
    stated = max(model.max_context_tokens or 0, model.rope_scaling_max_context_tokens or 0)
    return stated or None


def _limit(model: LLMModel, spec: ModelSpec) -> int:
    """spec.allowed_context_tokens with the card's RoPE length, capped by the published
    context (published_context_tokens)."""
    limit = spec.allowed_context_tokens(model.rope_scaling_max_context_tokens)
    published = published_context_tokens(model)
    return min(limit, published) if published else limit


def model_context_limit(model: LLMModel) -> int | None:
    """The longest context to offer for this model: its config's maximum (RoPE scaling in
    config.json included), or a longer one its model card states with RoPE scaling
    (rope_scaling_max_context_tokens: Qwen3-8B 131,072 with YaRN against config.json's
    40,960), capped by the published context where the catalog has one, since a sibling or
    stand-in config can allow more than the model does (Llama 3 8B: 8,192 against Llama
    3.1's 131,072). None when the estimator cannot parse the config."""
    spec = _parsed(model)
    return None if spec is None else _limit(model, spec)


def rope_context(model: LLMModel) -> RopeContext | None:
    """Where RoPE scaling takes over on the page, None when the offered context never
    needs it (or the config cannot be parsed): a context above native_tokens runs on
    the scaling of config.json or of the model card."""
    spec = _parsed(model)
    if spec is None:
        return None
    limit = _limit(model, spec)
    native = spec.native_context_tokens if spec.rope_scaling else spec.max_context_tokens
    if limit <= spec.max_context_tokens:
        return None
    return RopeContext(native, limit, spec.rope_scaling_type or "")


@dataclass(frozen=True)
class LayerCounts:
    """What the configurator's offload settings are checked against: the config's
    repeating layers (num_hidden_layers) and whether it has routed experts."""

    layers: int
    moe: bool


def layer_counts(model: LLMModel) -> LayerCounts | None:
    """The model's layers and experts; None when the config cannot be parsed."""
    spec = _parsed(model)
    return None if spec is None else LayerCounts(spec.n_layers, spec.n_experts > 0)


DEFAULT_LAYERS = 32  # transformers' LlamaConfig, the parser's default architecture
# Where a config states its depth: the text model's layer keys (top level or nested, as
# multimodal configs nest it), per-layer patterns, and a vision tower's depth.
_NESTED = ("text_config", "llm_config", "language_config", "thinker_config", "vision_config")
_DEPTH_KEYS = (*LAYER_KEYS, "depth")


def stated_layers(config: Any) -> int:
    """The most layers a config.json states anywhere, read without parsing it (the API's
    work budget prices a request before running it): 1 to MAX_LAYERS, the Llama default
    of 32 when it states none. A number the parser would refuse counts as MAX_LAYERS."""
    if not isinstance(config, Mapping):
        return DEFAULT_LAYERS
    scopes = [config, *(config[k] for k in _NESTED if isinstance(config.get(k), Mapping))]
    counts = [DEFAULT_LAYERS]
    for scope in scopes:
        for key in _DEPTH_KEYS:
            value = scope.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                counts.append(int(min(value, MAX_LAYERS)) if math.isfinite(value) else MAX_LAYERS)
        for key in PATTERN_KEYS:
            value = scope.get(key)
            if isinstance(value, list | str):
                counts.append(len(value))
    return max(1, min(max(counts), MAX_LAYERS))
