"""The fitted hardware-family and weights-kind corrections of a speed, and its range.

    tokens/s = group model x exp(family effect + weights-kind effect + vendor effect)

family effect: the device's family (speed.families.device_family) on current hardware;
weights-kind effect: "<backend>/<weights kind>" for llama.cpp-family engines (e.g. BF16
on Vulkan, Q4_0 on Metal); vendor effect: "<vendor>/<backend>" for the same engines
(AMD cards under Vulkan); era effect (prefill): "<backend>/current+<dense|moe>", today's builds
against the rows of builds without flash attention in prompt processing, which
otherwise set the level (calibration/rows.py prefill_era). Each is a shrunk median of
log(measured / predicted) over the rows of its group (estimator/calibration/effects.py,
calibration.json "corrections"); a group without enough rows has none. Older or rare
families take the old-generation factor instead (speed.architecture_factor).

Range: estimate x the family's whole-device hold-out ratio quantiles
(calibration.json "family_ranges"); a current family without rows is "uncalibrated" and
takes the current pool's ratios widened by UNCALIBRATED_WIDENING, an older or rare one
the older pool's (already widened by the fit, calibration/effects.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.factors import family_ranges, speed_corrections
from estimator.speed.devices import Device
from estimator.speed.families import FAMILIES, device_family, is_current, weights_kind
from estimator.speed.groups import normalize_backend, normalize_engine

LOCAL_ENGINES = ("llama.cpp", "mlx", "exllamav2", "mlc")
# Bounds of a family without measurements: the pooled ratios, each 25 % further out.
UNCALIBRATED_WIDENING = 1.25


@dataclass(frozen=True)
class FamilyRange:
    """The range a speed of one family gets: ratio bounds, rows behind them, and whether
    the family has measurements of its own."""

    family: str
    label: str
    ratio_low: float
    ratio_high: float
    rows: int
    calibrated: bool


def is_local_engine(engine: str) -> bool:
    """Whether an engine runs one user on one machine (llama.cpp family, MLX, ExLlamaV2,
    MLC): its speeds take the family corrections and ranges."""
    return normalize_engine(engine) in LOCAL_ENGINES


def family_of(device: Device) -> str:
    """The device's family: the one it carries, else from its architecture; "" for a
    device built without either (hand-made inputs), which gets no correction and the
    group's bounds."""
    if device.family or device.architecture:
        return device.family or device_family("", device.architecture)
    return ""


def speed_multiplier(
    kind: str,
    engine: str,
    backend: str,
    device: Device,
    weights_name: str = "",
    *,
    moe: bool = False,
) -> float:
    """exp(family + weights-kind + vendor (+ prefill era) effects) of tokens/s (module
    docstring); 1 for the serving engines (the effects are fitted on the local engines'
    rows only), older or rare families and devices without a family; a group without a
    fitted effect adds 0."""
    family = family_of(device)
    if not family or not is_current(family) or not is_local_engine(engine):
        return 1.0
    effects = speed_corrections(kind)
    log = effects.get("family", {}).get(family, 0.0)
    eng, back = normalize_engine(engine), normalize_backend(backend)
    if eng == "llama.cpp":
        log += effects.get("kind", {}).get(f"{back}/{weights_kind(weights_name)}", 0.0)
        log += effects.get("vendor", {}).get(f"{device.vendor}/{back}", 0.0)
        era = f"{back}/current+{'moe' if moe else 'dense'}"  # today's builds
        log += effects.get("era", {}).get(era, 0.0)
    return math.exp(log)


def family_range(kind: str, device: Device) -> FamilyRange | None:
    """The range of `kind` ("decode" | "prefill") speeds on the device's family; None in
    a calibration file without family ranges (the group's bounds apply then)."""
    ranges = family_ranges(kind)
    family = family_of(device)
    if not ranges or not family:
        return None
    label = FAMILIES.get(family, FAMILIES["other"])
    entry = ranges.get(family)
    if entry:
        return FamilyRange(
            family, label, entry["ratio_low"], entry["ratio_high"], int(entry["rows"]), True
        )
    if not is_current(family):  # already widened (effects.OLDER_WIDENING)
        pool = ranges.get("older_or_rare", {})
        return FamilyRange(family, label, pool["ratio_low"], pool["ratio_high"], 0, False)
    pool = ranges.get("current", {})
    return FamilyRange(
        family,
        label,
        pool["ratio_low"] / UNCALIBRATED_WIDENING,
        pool["ratio_high"] * UNCALIBRATED_WIDENING,
        0,
        False,
    )
