"""Hardware-family, weights-kind, vendor and era corrections of the one-user speed
model, and its per-family ranges.

The group fit (fit.py, prefill.py) sets each engine / backend group's bandwidth share,
fixed cost and MFU. What it cannot see is how a memory technology and generation, a
weights type on a backend, a vendor on a shared backend or an older build departs from
its group; multiplicative corrections on the predicted tokens/s do:

    tokens/s = group prediction x exp(family + kind + vendor + era effect)

family: device family (speed.families.device_family) of current hardware; kind:
"<backend>/<weights kind>" (speed.families.weights_kind), e.g. "vulkan/bf16"; vendor:
"<vendor>/<backend>", e.g. "intel/vulkan"; era (prefill only): "<backend>/<current |
legacy>+<dense | moe>" (rows.prefill_era). Kind, vendor and era are llama.cpp rows only;
every level is fitted on the local engines' rows (batch 1 for decode) of current
hardware, by backfitting on the log residuals r = log(measured / predicted):

    effect(g) = median over g's rows of (r - the other levels' effects) x n_g / (n_g + k)

a median (one broken row cannot set a family) shrunk toward 0 (no correction) as if
k = EFFECT_SHRINK_ROWS rows at 0 were added; residuals are clipped at +-CLIP_LOG. A family
or vendor needs MIN_FAMILY_ROWS rows on MIN_FAMILY_DEVICES devices, a weights kind
MIN_KIND_ROWS rows, an era MIN_KIND_ROWS rows on MIN_FAMILY_DEVICES devices, else it has
no effect; a family without measurements is "uncalibrated" on pages. Older or rare
families (Pascal and older, Volta, GCN, other) keep the old-generation factor
(speed.architecture_factor) and get no effect here.

Ranges (_bounds): a current family's bounds are the FAMILY_QUANTILES of its whole-device
hold-out ratios measured / predicted, shrunk toward the current pool's by
FAMILY_SHRINK_ROWS pseudo-rows (fit.shrunk_bounds), so a dense family gets a narrow range
and a sparse one a wide range; older or rare hardware takes the current pool's bounds
widened OLDER_WIDENING each way.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from estimator.calibration.fit import quantile, shrunk_bounds
from estimator.calibration.rows import Measurement, prefill_era
from estimator.speed.corrections import LOCAL_ENGINES, effect_keys, log_correction
from estimator.speed.families import OLDER_OR_RARE, device_family, is_current

EFFECT_SHRINK_ROWS = 3.0
CLIP_LOG = 2.3  # |log residual| above this (a factor of ~10) counts as 10x
MIN_FAMILY_ROWS = 4
MIN_FAMILY_DEVICES = 2
MIN_KIND_ROWS = 4
BACKFIT_ROUNDS = 4
# Family ranges: wider quantiles than the group bounds (fit.BOUND_QUANTILES), so that
# about 85 % of an unseen device's measurements fall inside; a family's own quantiles
# count as many rows as it has against FAMILY_SHRINK_ROWS pseudo-rows of its pool.
FAMILY_QUANTILES = (0.05, 0.95)
FAMILY_SHRINK_ROWS = 20.0
# Older or rare hardware: at least the current pool's bounds widened this much each way
# (4 devices of three generations cannot tell an unseen old device's shortfall).
OLDER_WIDENING = 1.2


@dataclass(frozen=True)
class Effects:
    """Log multipliers of predicted tokens/s per correction level and key
    (speed.corrections.effect_keys)."""

    family: dict[str, float] = field(default_factory=dict)
    kind: dict[str, float] = field(default_factory=dict)
    vendor: dict[str, float] = field(default_factory=dict)
    # "<backend>/<current|legacy>+<dense|moe>" (keys_of); pages apply the "current" ones
    era: dict[str, float] = field(default_factory=dict)


def family_of(m: Measurement) -> str:
    """The device family of a measurement (speed.families.device_family)."""
    return m.device.family or device_family(m.device_name, m.device.architecture)


def keys_of(m: Measurement) -> dict[str, str]:
    """The correction keys of a measurement (speed.corrections.effect_keys, the same the
    pages look up): its family, and for llama.cpp rows its weights kind, vendor and, for
    prefill rows, its build era (rows.prefill_era). Dense and MoE prefill have their own
    group fits (grouping.prefill_key), so each kind's rows of today's builds stand
    against that kind's older rows."""
    era = prefill_era(m.date, m.notes) if m.kind == "prefill" else ""
    return effect_keys(
        m.engine, m.backend, family_of(m), m.device.vendor, m.quant, moe=m.work.is_moe, era=era
    )


def _shrunk_means(
    pairs: Sequence[tuple[str, float, str]], min_rows: int, min_devices: int
) -> dict[str, float]:
    """Per key: median of values x n / (n + EFFECT_SHRINK_ROWS), for keys with >= min_rows
    rows on >= min_devices devices; pairs are (key, value, device)."""
    sums: dict[str, list[float]] = {}
    devices: dict[str, set[str]] = {}
    for key, value, device in pairs:
        if key:
            sums.setdefault(key, []).append(value)
            devices.setdefault(key, set()).add(device)
    return {
        key: round(statistics.median(values) * len(values) / (len(values) + EFFECT_SHRINK_ROWS), 4)
        for key, values in sorted(sums.items())
        if len(values) >= min_rows and len(devices[key]) >= min_devices
    }


def fit_effects(items: Sequence[tuple[Measurement, float]]) -> Effects:
    """Backfit the family, weights-kind, vendor and era effects on (measurement,
    predicted tokens/s) of current hardware and the local engines (module docstring):
    each round sets every level in turn from the residuals less the other levels."""
    data: list[tuple[tuple[str, str, str, str], float, str]] = []
    for m, predicted in items:
        family = family_of(m)
        if is_current(family) and predicted > 0 and m.engine in LOCAL_ENGINES:
            r = max(-CLIP_LOG, min(CLIP_LOG, math.log(m.measured_tps / predicted)))
            k = keys_of(m)
            keys = (family, k.get("kind", ""), k.get("vendor", ""), k.get("era", ""))
            data.append((keys, r, m.device_name))
    levels: list[dict[str, float]] = [{}, {}, {}, {}]  # family, kind, vendor, era
    limits = (
        (MIN_FAMILY_ROWS, MIN_FAMILY_DEVICES),
        (MIN_KIND_ROWS, 1),
        (MIN_FAMILY_ROWS, MIN_FAMILY_DEVICES),
        (MIN_KIND_ROWS, MIN_FAMILY_DEVICES),
    )
    for _ in range(BACKFIT_ROUNDS):
        for i, (min_rows, min_devices) in enumerate(limits):
            others = [j for j in range(len(levels)) if j != i]
            levels[i] = _shrunk_means(
                [
                    (keys[i], r - sum(levels[j].get(keys[j], 0.0) for j in others), device)
                    for keys, r, device in data
                ],
                min_rows,
                min_devices,
            )
    return Effects(*levels)


def multiplier(m: Measurement, effects: Effects) -> float:
    """exp(the effects of the measurement's keys, keys_of) (1 for older or rare families
    and the serving engines; a key without an effect adds 0)."""
    if not is_current(family_of(m)) or m.engine not in LOCAL_ENGINES:
        return 1.0
    return math.exp(log_correction(effects_entry(effects), keys_of(m)))


def _bounds(family: str, ratios: Sequence[tuple[Measurement, float]]) -> tuple[float, float]:
    """(low, high) ratio bounds of `family` from hold-out ratios (module docstring):
    current families: their FAMILY_QUANTILES shrunk toward the current pool's by
    FAMILY_SHRINK_ROWS; older or rare ones: the current pool's bounds widened by
    OLDER_WIDENING each way (their few devices of several generations cannot set a
    range of their own)."""
    current = [r for m, r in ratios if is_current(family_of(m))] or [r for _, r in ratios]
    if is_current(family):
        own = [r for m, r in ratios if family_of(m) == family]
        return shrunk_bounds(own, current, FAMILY_SHRINK_ROWS, FAMILY_QUANTILES)
    low, high = shrunk_bounds(current, current, 0.0, FAMILY_QUANTILES)
    return low / OLDER_WIDENING, high * OLDER_WIDENING


def family_ranges(
    ratios: Sequence[tuple[Measurement, float]],
) -> dict[str, dict[str, float]]:
    """Per family: rows, devices and the (low, high) bounds (_bounds) of measured /
    predicted whole-device hold-out ratios; plus the "current" and "older_or_rare"
    pools' own bounds (speed.corrections uses them for families without rows)."""
    devices: dict[str, set[str]] = {}
    rows: dict[str, int] = {}
    for m, _ in ratios:
        family = family_of(m)
        devices.setdefault(family, set()).add(m.device_name)
        rows[family] = rows.get(family, 0) + 1
    out: dict[str, dict[str, float]] = {}
    for family in sorted(devices):
        low, high = _bounds(family, ratios)
        out[family] = {
            "rows": rows[family],
            "devices": len(devices[family]),
            "ratio_low": round(low, 4),
            "ratio_high": round(high, 4),
        }
    current = [r for m, r in ratios if is_current(family_of(m))]
    if current:
        low, high = shrunk_bounds(current, current, 0.0, FAMILY_QUANTILES)
        out["current"] = {
            "rows": len(current),
            "ratio_low": round(low, 4),
            "ratio_high": round(high, 4),
        }
    older = len(ratios) - len(current)
    low, high = _bounds(OLDER_OR_RARE[-1], ratios)  # the widened current pool
    out["older_or_rare"] = {"rows": older, "ratio_low": round(low, 4), "ratio_high": round(high, 4)}
    return out


def effects_entry(effects: Effects) -> dict[str, dict[str, float]]:
    """calibration.json's "corrections" entry of one kind (speed.corrections reads it)."""
    return {
        "family": effects.family,
        "kind": effects.kind,
        "vendor": effects.vendor,
        "era": effects.era,
    }


def single_stream(
    pairs: Sequence[tuple[Measurement, float]], kind: str
) -> list[tuple[Measurement, float]]:
    """The rows the one-user model answers for: local engines, batch 1 for decode."""
    return [
        (m, p) for m, p in pairs if m.engine in LOCAL_ENGINES and (kind != "decode" or m.batch == 1)
    ]


def pool_of(m: Measurement) -> str:
    return "current" if is_current(family_of(m)) else "older_or_rare"


def _leave_device_out_bounds(
    pairs: Sequence[tuple[Measurement, float]],
) -> list[tuple[float, float]]:
    """Each row's family bounds (_bounds) from the other devices' hold-out ratios only,
    so the inside share is honest for an unseen device."""
    ratios = [(m, m.measured_tps / p) for m, p in pairs]
    cache: dict[str, tuple[float, float]] = {}
    out = []
    for m, _ in ratios:
        if m.device_name not in cache:
            others = [(o, r) for o, r in ratios if o.device_name != m.device_name]
            cache[m.device_name] = _bounds(family_of(m), others)
        out.append(cache[m.device_name])
    return out


def _errors(pairs: Sequence[tuple[Measurement, float]]) -> list[float]:
    return [abs(p - m.measured_tps) / m.measured_tps * 100 for m, p in pairs]


def _signed(pairs: Sequence[tuple[Measurement, float]]) -> float:
    return round(
        statistics.median((p - m.measured_tps) / m.measured_tps * 100 for m, p in pairs), 2
    )


def _summary(pairs: Sequence[tuple[Measurement, float]]) -> dict[str, Any]:
    errors = _errors(pairs)
    out: dict[str, Any] = {
        "n": len(pairs),
        "devices": len({m.device_name for m, _ in pairs}),
        "median_abs_pct_err": round(statistics.median(errors), 2),
        "p90_abs_pct_err": round(quantile(errors, 0.9), 2),
        "median_signed_pct_err": _signed(pairs),
    }
    bounds = _leave_device_out_bounds(pairs)
    inside = [
        lo * p <= m.measured_tps <= hi * p for (m, p), (lo, hi) in zip(pairs, bounds, strict=True)
    ]
    out["inside_range_share"] = round(sum(inside) / len(inside), 3)
    out["median_high_over_low"] = round(statistics.median(hi / lo for lo, hi in bounds), 3)
    by_backend: dict[str, list[tuple[Measurement, float]]] = {}
    for m, p in pairs:
        by_backend.setdefault(m.backend, []).append((m, p))
    out["by_backend"] = {
        backend: {
            "n": len(items),
            "median_abs_pct_err": round(statistics.median(_errors(items)), 2),
            "p90_abs_pct_err": round(quantile(_errors(items), 0.9), 2),
            "median_signed_pct_err": _signed(items),
        }
        for backend, items in sorted(by_backend.items())
    }
    return out


def hardware_holdout(
    decode: Sequence[tuple[Measurement, float]], prefill: Sequence[tuple[Measurement, float]]
) -> dict[str, dict[str, Any]]:
    """The one-user model's whole-device hold-out figures (single_stream rows) for current
    hardware and for older or rare hardware apart: n, devices, median / p90 absolute
    error, median signed error (bias), the share inside the leave-device-out family
    range and that range's median width, and the same errors by backend."""
    out: dict[str, dict[str, Any]] = {}
    for kind, pairs in (("decode", decode), ("prefill", prefill)):
        rows = single_stream(pairs, kind)
        for pool in ("current", "older_or_rare"):
            items = [(m, p) for m, p in rows if pool_of(m) == pool]
            if items:
                out.setdefault(pool, {})[kind] = _summary(items)
    return out
