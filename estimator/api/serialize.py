"""Dataclasses <-> JSON-ready dicts for the public contract.

`result_to_dict` emits only JSON types (dict, list, str, int, float, bool, None) so
`json.loads(json.dumps(d)) == d`; `request_to_dict` writes every field of a parsed
request, so parsing it again gives the same `Request`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from estimator.api.schema import Request, Result
from estimator.units import Range


def _plain(value: Any) -> Any:
    if isinstance(value, Range):
        return {
            "estimate": _plain(value.estimate),
            "low": _plain(value.low),
            "high": _plain(value.high),
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no Infinity; "unbounded" (e.g. a speed limited by nothing) becomes null.
        return None
    return value


def result_to_dict(result: Result) -> dict[str, Any]:
    """The result as JSON types; optional sections (cost, finetune, ...) only when present."""
    out: dict[str, Any] = _plain(result)
    optional_fields = (
        "cost",
        "finetune",
        "recommendations",
        "id",
        "serving",
        "compute_rate",
        "speed_family",
    )
    for optional in optional_fields:
        if out.get(optional) is None:
            out.pop(optional, None)
    return out


def request_to_dict(request: Request) -> dict[str, Any]:
    """A request dict that parses back to `request` (defaults written out explicitly)."""
    out: dict[str, Any] = {"model": {"hf_config": json.loads(request.model.hf_config_json)}}
    if request.model.max_context_tokens is not None:
        out["model"]["max_context_tokens"] = request.model.max_context_tokens
    weights = _plain(request.weights)
    out["weights"] = {k: v for k, v in weights.items() if v is not None}
    if request.weights.format == "gguf":
        out["weights"].pop("group_size", None)
    else:
        out["weights"].pop("imatrix", None)
    out["device"] = {k: v for k, v in _plain(request.device).items() if v is not None}
    if not request.device.fp16_imputed:  # written only when set, like the Nones above
        out["device"].pop("fp16_imputed")
    out["engine"] = {k: v for k, v in _plain(request.engine).items() if v is not None}
    workload = _plain(request.workload)
    offload = workload["offload"]
    workload["offload"] = {k: v for k, v in offload.items() if v is not None}
    out["workload"] = workload
    if request.pricing is not None:
        out["pricing"] = {k: v for k, v in _plain(request.pricing).items() if v is not None}
    if request.finetune is not None:
        out["finetune"] = _plain(request.finetune)
    out["recommend"] = request.recommend
    if request.serving_targets is not None:
        out["serving"] = _plain(request.serving_targets)
    if request.id is not None:
        out["id"] = request.id
    return out
