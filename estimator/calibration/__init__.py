"""Development tooling: `python -m estimator.calibration` refits data/calibration.json
from data/validation/throughput.csv. The runtime reads that file through
`estimator.factors`, never through this package; the names below are re-exported for
the tooling and its tests."""

from __future__ import annotations

from estimator.factors import CALIBRATION_JSON, SpeedFactors, load_calibration
from estimator.speed import resolve_factors


def factors_for(engine: str, backend: str, device_class: str, moe: bool = False) -> SpeedFactors:
    """Factors of the most specific calibrated group (speed.resolve_factors)."""
    return resolve_factors(engine, backend, device_class, moe)


__all__ = ["CALIBRATION_JSON", "SpeedFactors", "factors_for", "load_calibration"]
