"""Calibrated speed factors, read as data: `data/calibration.json` (written by
`python -m estimator.calibration`) is loaded once per process; nothing here imports the
calibration or validation tooling, so pages never load them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

CALIBRATION_JSON = Path(__file__).resolve().parent / "data" / "calibration.json"

_FACTOR_FIELDS = (
    "bandwidth_share",
    "decode_overhead_s",
    "moe_decode_overhead_s",
    "decode_mfu",
    "prefill_mfu",
    "decode_ratio_low",
    "decode_ratio_high",
    "prefill_ratio_low",
    "prefill_ratio_high",
)
# Added later; entries without them keep SpeedFactors' defaults.
_OPTIONAL_FIELDS = (
    "prefill_s_per_param",
    "prefill_f16_factor",
    "prefill_bf16_factor",
    "ttft_floor_s",
    "ttft_floor_moe_s",
)


@dataclass(frozen=True)
class SpeedFactors:
    """Fitted efficiency factors of one engine/backend/device-class group.

    The ratio fields are quantiles of measured / predicted on held-out rows; a Range is
    (estimate x ratio_low, estimate, estimate x ratio_high).
    """

    group: str
    bandwidth_share: float
    decode_overhead_s: float
    moe_decode_overhead_s: float  # extra per step for MoE models (expert routing kernels)
    decode_mfu: float
    prefill_mfu: float
    decode_ratio_low: float
    decode_ratio_high: float
    prefill_ratio_low: float
    prefill_ratio_high: float
    prefill_s_per_param: float = 0.0  # per-token prefill time per active parameter (s)
    prefill_f16_factor: float = 1.0  # compute-time multiplier of F16 weights (llama.cpp)
    prefill_bf16_factor: float = 1.0  # compute-time multiplier of BF16 weights (llama.cpp)
    ttft_floor_s: float = 0.0  # fixed TTFT per request and 32 layers (speed.ttft_floor_seconds)
    ttft_floor_moe_s: float = 0.0  # the same for mixture-of-experts models
    # The vendors whose hardware the group's own rows were measured on (a group that names
    # a backend; speed.measured_group): its speeds are backed on theirs only.
    measured_vendors: tuple[str, ...] = ()


@lru_cache(maxsize=1)
def load_calibration() -> dict[str, Any]:
    """The committed calibration.json as a dict (read once per process)."""
    with CALIBRATION_JSON.open() as handle:
        data: dict[str, Any] = json.load(handle)
    return data


@cache
def group_factors(key: str) -> SpeedFactors:
    """The factors of one calibrated group (KeyError for a group the file lacks)."""
    entry = load_calibration()["groups"][key]
    optional = {name: float(entry[name]) for name in _OPTIONAL_FIELDS if name in entry}
    return SpeedFactors(
        group=key,
        **{name: float(entry[name]) for name in _FACTOR_FIELDS},
        **optional,
        measured_vendors=tuple(entry.get("measured_vendors", ())),
    )


@cache
def architecture_factors() -> dict[str, float]:
    """calibration.json's decode factors of old GPU classes (speed.arch_class -> factor,
    plus "old": all old classes pooled); empty in a file that predates them."""
    entries = load_calibration().get("architecture_factors", {})
    return {key: float(entry["factor"]) for key, entry in entries.items()}


def first_known(candidates: Iterable[str]) -> SpeedFactors:
    """The factors of the first candidate group the file has (speed.group_candidates
    ends with "default", which it always has)."""
    groups = load_calibration()["groups"]
    return group_factors(next(key for key in candidates if key in groups))


@cache
def speed_corrections(kind: str) -> dict[str, dict[str, float]]:
    """calibration.json's "corrections" of one kind ("decode" | "prefill"): log
    multipliers of tokens/s by "family", "kind" ("<backend>/<weights kind>") and
    "vendor" ("<vendor>/<backend>"); empty in a file that predates them."""
    entry = load_calibration().get("corrections", {}).get(kind, {})
    return {level: dict(values) for level, values in entry.items()}


def expert_stream_share() -> float:
    """calibration.json's "prefill_expert_stream_share": the share of peak bandwidth at
    which llama.cpp reads MoE experts (speed.expert_stream_seconds_per_token); 0 (no
    expert streaming term) in a file that predates it."""
    return float(load_calibration().get("prefill_expert_stream_share", 0.0))


def prefill_tflops_per_watt() -> float:
    """calibration.json's "prefill_tflops_per_watt": the fitted cap of an NVIDIA board's
    llama.cpp prefill rate per W of board power (speed.power_capped_tflops); 0 (no cap)
    in a file that predates it."""
    return float(load_calibration().get("prefill_tflops_per_watt", 0.0))


@cache
def family_ranges(kind: str) -> dict[str, dict[str, float]]:
    """calibration.json's "family_ranges" of one kind: per hardware family (and the
    "current" / "older_or_rare" pools) rows, devices, ratio_low and ratio_high."""
    return dict(load_calibration().get("family_ranges", {}).get(kind, {}))
