"""Whether published measurements back a result's speeds: the calibration group of the
engine on this backend and vendor, and the device's hardware family
(speed.corrections.family_range)."""

from __future__ import annotations

from typing import Any

from estimator import serving, speed
from estimator.api.schema import Request
from estimator.api.speeds import Speeds
from estimator.model import ModelSpec


def _speed_group(request: Request, model: ModelSpec, speeds: Speeds) -> tuple[str, str, str, bool]:
    """(engine, backend, device class, MoE): the calibration group key of the speeds."""
    backend = speed.normalize_backend(request.engine.backend)
    return (request.engine.name, backend, speeds.device.device_class, model.n_experts > 0)


def uncalibrated_notes(
    group: tuple[str, str, str, bool],
    calibrated: bool,
    factors_group: str | None = None,
    vendor: str = "",
) -> tuple[str, ...]:
    """Say when no published measurement covers this engine on this backend on `vendor`'s
    hardware (`calibrated` is speed.measured_group of `group`, or
    serving.serving_calibrated): the speed then uses factors (calibration.json or
    serving_calibration.json, named by `factors_group`) fitted on other hardware."""
    if calibrated:
        return ()
    factors = speed.resolve_factors(*group)
    name = factors_group or factors.group
    if factors_group is None and f"/{group[1]}" in factors.group:  # backend measured elsewhere
        return (
            f"no published speed measurements for {group[0]} on {group[1]} with {vendor} "
            f"hardware: speeds use the {name!r} group's factors, measured on "
            f"{', '.join(factors.measured_vendors) or 'other'} hardware",
        )
    return (
        f"no published speed measurements for {group[0]} on {group[1]}: "
        f"speeds use the {name!r} group's factors",
    )


def speed_calibration(
    request: Request, model: ModelSpec, speeds: Speeds, family: dict[str, Any] | None
) -> tuple[bool, tuple[str, ...]]:
    """(Result.speed_calibrated, its warning): whether published measurements back the
    speeds (serving.serving_calibrated where the batched serving model answers, else
    speed.measured_group of the calibration group and the device's vendor) and
    uncalibrated_notes' note when not; a local engine on a hardware family without
    measurements of its own (`family`, speed_family_section's) is not calibrated either."""
    group = _speed_group(request, model, speeds)
    if speeds.serving_inputs is not None:  # the batched serving model's own calibration
        calibrated = serving.serving_calibrated(request.engine.name, request.engine.backend)
    else:
        calibrated = speed.measured_group(*group, vendor=request.device.vendor)
    factors_group = speeds.serving_inputs.factors.group if speeds.serving_inputs else None
    notes = uncalibrated_notes(group, calibrated, factors_group, request.device.vendor)
    if calibrated and family is not None and not family["calibrated"]:
        calibrated = False
        notes = (
            f"no published speed measurements of {family['label']}: speeds use the "
            "corrections of other hardware, with the pooled range widened",
        )
    return calibrated, notes


def speed_family_section(request: Request, speeds: Speeds) -> dict[str, Any] | None:
    """The hardware family whose measurements set the speed corrections and ranges of the
    local engines (speed.corrections): its key, name, the measurements behind its decode
    and prefill ranges, those ranges' ratio bounds, and whether it is calibrated (has
    measurements of its own) and current hardware. None for the serving engines, whose
    batched model has its own calibration."""
    if speeds.serving_inputs is not None:
        return None
    decode = speed.family_range("decode", speeds.device, request.engine.name)
    if decode is None:
        return None
    prefill = speed.family_range("prefill", speeds.device, request.engine.name)
    return {
        "family": decode.family,
        "label": decode.label,
        "current_hardware": speed.is_current(decode.family),
        "calibrated": decode.calibrated,
        "decode_measurements": decode.rows,
        "decode_ratio_low": decode.ratio_low,
        "decode_ratio_high": decode.ratio_high,
        "prefill_measurements": prefill.rows if prefill else 0,
        "prefill_ratio_low": prefill.ratio_low if prefill else None,
        "prefill_ratio_high": prefill.ratio_high if prefill else None,
    }
