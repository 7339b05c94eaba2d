"""The entry points: core estimate plus the optional sections (cost, finetune, recommend)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from estimator.api import cache
from estimator.api.extras import cost_section, finetune_section
from estimator.api.fields import RequestError
from estimator.api.parse import parse_request
from estimator.api.recommend import recommendations
from estimator.api.run import run_estimate as run_core
from estimator.api.schema import Request, Result
from estimator.api.serialize import result_to_dict


def run_estimate(request: Request) -> Result:
    """The full result of a validated request: core figures, then cost / finetune /
    recommendations when the request asks for them."""
    result = run_core(request)
    model = cache.model_spec(request.model.hf_config_json)
    if request.pricing is not None:
        result = replace(result, cost=cost_section(request.pricing, result))
    if request.finetune is not None:
        result = replace(
            result,
            finetune=finetune_section(
                request.finetune, model, request, result.usable_bytes_per_device
            ),
        )
    if request.recommend:
        result = replace(
            result, recommendations=recommendations(request, result, run_core, model.n_layers)
        )
    return result


def estimate(request: Any) -> dict[str, Any]:
    """JSON request dict -> JSON result dict; raises RequestError naming the bad field."""
    return result_to_dict(run_estimate(parse_request(request)))


def estimate_or_error(request: Any) -> dict[str, Any]:
    """Like `estimate`, but a bad request gives {"error": {"field", "message"}}."""
    try:
        return estimate(request)
    except RequestError as exc:
        return {"error": {"field": exc.field, "message": exc.message}}
