"""Recommendations (best quant, best devices, "make it fit"): the documented public name
of estimator.api.recommend, where they live beside the estimate they call, and of the
result types they return (estimator.api.schema: the "recommendations" section's)."""

from __future__ import annotations

from estimator.api.recommend import (
    DEFAULT_MIN_BITS,
    DEFAULT_MIN_TIER,
    GGUF_LADDER,
    HF_LADDER,
    BestDevices,
    DeviceChoice,
    best_devices,
    best_quant,
    device_options,
    make_it_fit,
    quant_options,
    recommendations,
    within_floor,
)
from estimator.api.schema import PlanStep, QuantChoice, Recommendations

__all__ = [
    "DEFAULT_MIN_BITS",
    "DEFAULT_MIN_TIER",
    "GGUF_LADDER",
    "HF_LADDER",
    "BestDevices",
    "DeviceChoice",
    "PlanStep",
    "QuantChoice",
    "Recommendations",
    "best_devices",
    "best_quant",
    "device_options",
    "make_it_fit",
    "quant_options",
    "recommendations",
    "within_floor",
]
