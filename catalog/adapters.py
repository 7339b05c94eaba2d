"""The one place where ORM rows meet the estimator: rows in, estimator specs out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catalog.models import Architecture, LLMModel, ModelWeights
from estimator.model import ModelSpec, parse_hf_config
from estimator.weights import (
    EXTRA_GGUF_FILE_TYPES,
    GGUF_FILE_TYPES,
    HF_FORMATS,
    WeightsFormat,
    weights_breakdown,
)


def spec_from_config(config: Mapping[str, Any]) -> ModelSpec:
    """Parse a config.json; raises estimator.model.ConfigError when it cannot."""
    return parse_hf_config(config)


def model_spec(model: LLMModel) -> ModelSpec:
    return spec_from_config(model.config)


def estimator_knows(fmt: str, quant: str) -> bool:
    if fmt == "gguf":
        return quant in GGUF_FILE_TYPES or quant in EXTRA_GGUF_FILE_TYPES
    return fmt == "hf" and quant in HF_FORMATS


def weights_format(weights: ModelWeights) -> WeightsFormat:
    return WeightsFormat(family=weights.format, name=weights.quant, file_bytes=weights.file_bytes)


def computed_bytes(spec: ModelSpec, fmt: str, quant: str) -> int | None:
    """The estimator's size of the text model in this format; None for a format it lacks.

    Multimodal towers are excluded, as in weights_breakdown (a GGUF mmproj is its own file).
    """
    if not estimator_knows(fmt, quant):
        return None
    return weights_breakdown(spec, WeightsFormat(family=fmt, name=quant)).total_bytes


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


def spec_fields(spec: ModelSpec) -> dict[str, Any]:
    """Model fields the estimator derives from a config.json."""
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
