"""The public estimator contract: a JSON request in, a JSON result out.

    estimate(request_dict) -> result_dict        (raises RequestError)
    estimate_or_error(request_dict) -> dict      ({"error": {...}} instead of raising)
    parse_request(dict) -> Request; run_estimate(Request) -> Result; result_to_dict(Result)
    check_request(Request) -> Request   (parse_request's cross-field checks, for code)
    sweep(Request, devices, quants) -> list[SweepRow]   (catalog tables, cached per model)

Everything is pure: no I/O, no globals beyond caches keyed on immutable inputs.
"""

from __future__ import annotations

from estimator.api.fields import RequestError
from estimator.api.parse import (
    check_request,
    default_backend,
    model_input,
    parse_request,
)
from estimator.api.schema import (
    Device,
    Engine,
    Explanation,
    FinetuneSpec,
    Fit,
    ModelInput,
    Offload,
    Pricing,
    Request,
    Result,
    WeightsSpec,
    Workload,
)
from estimator.api.serialize import request_to_dict, result_to_dict
from estimator.api.service import estimate, estimate_or_error, run_estimate
from estimator.api.sweep import SweepRow, sweep

__all__ = [
    "Device",
    "Engine",
    "Explanation",
    "FinetuneSpec",
    "Fit",
    "ModelInput",
    "Offload",
    "Pricing",
    "Request",
    "RequestError",
    "Result",
    "SweepRow",
    "WeightsSpec",
    "Workload",
    "check_request",
    "default_backend",
    "estimate",
    "estimate_or_error",
    "model_input",
    "parse_request",
    "request_to_dict",
    "result_to_dict",
    "run_estimate",
    "sweep",
]
