"""Recommendations (best quant, best devices, "make it fit"): the documented public name
of estimator.api.recommend, where they live beside the estimate they call."""

from __future__ import annotations

from estimator.api.recommend import (
    DEFAULT_MIN_BITS,
    GGUF_LADDER,
    HF_LADDER,
    DeviceChoice,
    PlanStep,
    QuantChoice,
    best_devices,
    best_quant,
    device_options,
    make_it_fit,
    quant_options,
    recommendations,
)

__all__ = [
    "DEFAULT_MIN_BITS",
    "GGUF_LADDER",
    "HF_LADDER",
    "DeviceChoice",
    "PlanStep",
    "QuantChoice",
    "best_devices",
    "best_quant",
    "device_options",
    "make_it_fit",
    "quant_options",
    "recommendations",
]
