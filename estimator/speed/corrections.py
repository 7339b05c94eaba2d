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
from collections.abc import Mapping
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


def effect_keys(
    engine: str,
    backend: str,
    family: str,
    vendor: str,
    weights_name: str,
    *,
    moe: bool = False,
    era: str = "",
) -> dict[str, str]:
    """The key each correction level looks up (calibration.json "corrections"; the fit in
    calibration/effects.py builds its keys here too): "family"; for llama.cpp-family
    engines also "kind" "<backend>/<weights kind>", "vendor" "<vendor>/<backend>" and,
    when `era` is given ("current" | "legacy"), "era" "<backend>/<era>+<dense | moe>"."""
    keys = {"family": family}
    if normalize_engine(engine) == "llama.cpp":
        back = normalize_backend(backend)
        keys["kind"] = f"{back}/{weights_kind(weights_name)}"
        keys["vendor"] = f"{vendor}/{back}"
        if era:
            keys["era"] = f"{back}/{era}+{'moe' if moe else 'dense'}"
    return keys


def log_correction(effects: Mapping[str, Mapping[str, float]], keys: Mapping[str, str]) -> float:
    """The sum of the effects `keys` (effect_keys) name; a key without an effect adds 0."""
    return sum(effects.get(level, {}).get(key, 0.0) for level, key in keys.items())


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
    docstring), at today's builds; 1 for the serving engines (the effects are fitted on
    the local engines' rows only), older or rare families and devices without a family."""
    family = family_of(device)
    if not family or not is_current(family) or not is_local_engine(engine):
        return 1.0
    keys = effect_keys(engine, backend, family, device.vendor, weights_name, moe=moe, era="current")
    return math.exp(log_correction(speed_corrections(kind), keys))


def family_range(kind: str, device: Device, engine: str) -> FamilyRange | None:
    """The range of `kind` ("decode" | "prefill") speeds on the device's family; None for
    the serving engines, a device without a family, or a calibration file without family
    ranges (the group's bounds apply then)."""
    ranges = family_ranges(kind)
    family = family_of(device)
    if not ranges or not family or not is_local_engine(engine):
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
