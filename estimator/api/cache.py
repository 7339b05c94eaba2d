"""Per-model and per-quant work, computed once and reused across requests.

The tensor inventory and the per-tensor quant choice are the expensive parts of an
estimate; everything that depends on the device is cheap. Keys are the canonical
config.json text and the frozen `WeightsSpec`, so a sweep over 1,000 devices pays for the
inventory once and for each quant once.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache

from estimator.api.fields import RequestError
from estimator.api.schema import WeightsSpec
from estimator.model import ConfigError, ModelSpec, parse_hf_config
from estimator.weights import (
    GGUF_FILE_TYPES,
    WeightsBreakdown,
    WeightsFormat,
    weights_breakdown,
)


@lru_cache(maxsize=256)
def model_spec(hf_config_json: str) -> ModelSpec:
    """parse_hf_config on the canonical config text; ConfigError becomes a RequestError."""
    try:
        return parse_hf_config(json.loads(hf_config_json))
    except ConfigError as exc:
        raise RequestError(f"model.hf_config.{exc.field}", exc.message) from exc


def weights_format(spec: WeightsSpec) -> WeightsFormat:
    """The weights module's format for a request's weights section."""
    return WeightsFormat(
        family=spec.format,
        name=spec.name,
        group_size=spec.group_size,
        imatrix=spec.imatrix,
        file_bytes=spec.file_bytes,
    )


@lru_cache(maxsize=256)
def closest_gguf_type(hf_config_json: str, file_bytes: int, imatrix: bool) -> str:
    """The GGUF file type whose computed size is nearest a measured file size: its
    per-tensor types are then scaled to the measured total (a GGUF given by size only)."""
    model = model_spec(hf_config_json)
    sizes = {}
    for name in GGUF_FILE_TYPES:
        try:
            sizes[name] = weights_breakdown(model, WeightsFormat("gguf", name, imatrix=imatrix))
        except ValueError:
            continue
    return min(sizes, key=lambda name: abs(sizes[name].total_bytes - file_bytes))


def resolved(hf_config_json: str, spec: WeightsSpec) -> WeightsSpec:
    """A GGUF spec with only file_bytes gets the closest file type's tensor mix."""
    if spec.format == "gguf" and spec.quant is None and spec.file_bytes is not None:
        quant = closest_gguf_type(hf_config_json, spec.file_bytes, spec.imatrix)
        return WeightsSpec("gguf", quant=quant, file_bytes=spec.file_bytes, imatrix=spec.imatrix)
    return spec


@lru_cache(maxsize=4096)
def weights(hf_config_json: str, spec: WeightsSpec) -> WeightsBreakdown:
    """weights_breakdown for one model and one weights spec; bad quants name their field."""
    model = model_spec(hf_config_json)
    try:
        return _compact(
            model, weights_breakdown(model, weights_format(resolved(hf_config_json, spec)))
        )
    except (KeyError, ValueError) as exc:
        field = "weights.quant" if spec.format == "gguf" else "weights.dtype"
        if spec.file_bytes is not None and spec.quant is None:
            field = "weights.file_bytes"
        raise RequestError(field, str(exc).strip("'\"")) from exc


def _compact(model: ModelSpec, wb: WeightsBreakdown) -> WeightsBreakdown:
    """The breakdown as estimates read it, for keeping thousands of them: no per-tensor
    types (nothing past weights_breakdown reads them) and the per-tensor bytes of only
    the tensors an estimate looks up, the routed experts (run.first_layers_expert_bytes,
    --n-cpu-moe) and token_embd (run.pipeline_stage_bytes). A whole breakdown holds two
    entries per tensor, some 60 KB for an 8B model: a card page sizes every model in every
    format, and 4,096 whole ones kept a gunicorn worker at over 250 MB. Every total is
    the whole breakdown's."""
    if wb.tensor_bytes is None:
        return replace(wb, tensor_types={})
    kept = {t.name for t in model.text_tensors if t.kind == "expert"} | {"token_embd"}
    sizes = {name: size for name, size in wb.tensor_bytes.items() if name in kept}
    return replace(wb, tensor_types={}, tensor_bytes=sizes)
