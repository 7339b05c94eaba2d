"""Fitted speed factors: `load_calibration()` reads data/calibration.json (cached);
`python -m estimator.calibration` refits it from data/validation/throughput.csv."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from estimator.speed import SpeedFactors, group_candidates

CALIBRATION_JSON = Path(__file__).resolve().parent.parent / "data" / "calibration.json"

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
_OPTIONAL_FIELDS = ("prefill_s_per_param", "prefill_f16_factor", "prefill_bf16_factor")


@lru_cache(maxsize=1)
def load_calibration() -> dict[str, Any]:
    """The committed calibration.json as a dict (read once per process)."""
    with CALIBRATION_JSON.open() as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def factors_for(engine: str, backend: str, device_class: str, moe: bool = False) -> SpeedFactors:
    """Factors of the most specific calibrated group (speed.group_candidates order)."""
    groups = load_calibration()["groups"]
    key = next(k for k in group_candidates(engine, backend, device_class, moe) if k in groups)
    entry = groups[key]
    optional = {name: float(entry[name]) for name in _OPTIONAL_FIELDS if name in entry}
    return SpeedFactors(
        group=key, **{name: float(entry[name]) for name in _FACTOR_FIELDS}, **optional
    )
