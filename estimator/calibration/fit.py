"""Fit the decode factors on throughput.csv and measure the fit on held-out rows.

Per group (engine / backend / device class) the decode model has up to five numbers:
bandwidth_share and decode_overhead_s (grid search, least squares in log space on the
group's batch-1 rows), moe_decode_overhead_s (1-D grid on its MoE batch-1 rows),
decode_mfu (1-D grid on its batched rows, else the parent's) and legacy_extra_s (1-D grid
on its old-build rows, else the parent's). The prefill fit is in calibration/prefill.py.

Bounds are the quantiles BOUND_QUANTILES of measured / predicted, where every prediction
comes from a fit without the row's device (build.holdout_predictions), shrunk toward the
quantiles of all groups' residuals pooled (shrunk_bounds); each row's bounds leave its
own ratio out as well (of the group and of the pool), so the "inside bounds" share is an
honest estimate for unseen devices. Groups with fewer than MIN_ROWS rows take their
parent's factors (engine pool, then all).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from estimator.calibration.rows import Measurement
from estimator.speed import (
    comm_seconds_per_step,
    compute_seconds_per_step,
    mean_decode_depth,
    memory_seconds_per_step,
    overhead_scale,
)

MIN_ROWS = 6
BOUND_QUANTILES = (0.075, 0.925)
SHRINK_ROWS = 10.0  # pseudo-rows of the pooled residuals in every group's bounds
DEFAULT_DECODE_MFU = 0.25  # used before the pooled batched fit and where nothing is fitted


@dataclass(frozen=True)
class DecodeRow:
    """A decode measurement reduced to the terms of the step formula.

    step = memory_1 / share + compute_1 / mfu + comm + overhead x overhead_scale(layers)
    (+ moe overhead), where memory_1 and compute_1 are the memory and compute seconds at
    share = 1 and MFU = 1.
    """

    measurement: Measurement
    memory_1: float
    compute_1: float
    comm: float
    measured_step: float


@dataclass(frozen=True)
class DecodeFit:
    share: float
    overhead_s: float
    mfu: float
    moe_overhead_s: float = 0.0
    # Extra per-step seconds (x overhead_scale) of builds before the engine's current fast
    # path (rows.legacy_build); fitted so old rows do not inflate today's overhead_s.
    legacy_extra_s: float = 0.0


def decode_row(m: Measurement) -> DecodeRow:
    """Precompute the step terms of one measurement with the speed module's own functions."""
    depth = mean_decode_depth(m.prompt_tokens, m.output_tokens)
    return DecodeRow(
        measurement=m,
        memory_1=memory_seconds_per_step(m.work, m.device, m.parallelism, 1.0, m.batch, depth),
        compute_1=compute_seconds_per_step(m.work, m.device, m.parallelism, 1.0, m.batch),
        comm=comm_seconds_per_step(m.work, m.parallelism, m.batch),
        measured_step=1.0 / m.measured_tps,
    )


def predicted_step(row: DecodeRow, fit: DecodeFit) -> float:
    """The step formula of estimator.speed.decode_step_seconds on precomputed terms."""
    compute = row.compute_1 / fit.mfu if row.compute_1 else 0.0
    work = row.measurement.work
    moe = fit.moe_overhead_s if work.is_moe else 0.0
    legacy = fit.legacy_extra_s if row.measurement.legacy_build else 0.0
    overhead = (fit.overhead_s + legacy + moe) * overhead_scale(work.n_layers)
    return row.memory_1 / fit.share + compute + row.comm + overhead


def _log_loss(rows: Sequence[DecodeRow], fit: DecodeFit) -> float:
    return sum(math.log(predicted_step(r, fit) / r.measured_step) ** 2 for r in rows)


def _grid(center: float, half: float, step: float, low: float, high: float) -> list[float]:
    count = round(2 * half / step)
    values = (center - half + i * step for i in range(count + 1))
    return [v for v in values if low <= v <= high]


def _terms(rows: Sequence[DecodeRow], fit: DecodeFit) -> list[tuple[float, float, float, float]]:
    """Per row (memory_1, the step's parts that do not depend on share and overhead,
    overhead_scale, log measured step), so a grid point costs one log per row."""
    out = []
    for r in rows:
        work = r.measurement.work
        scale = overhead_scale(work.n_layers)
        extra = (fit.moe_overhead_s if work.is_moe else 0.0) + (
            fit.legacy_extra_s if r.measurement.legacy_build else 0.0
        )
        compute = r.compute_1 / fit.mfu if r.compute_1 else 0.0
        out.append((r.memory_1, compute + r.comm + extra * scale, scale, math.log(r.measured_step)))
    return out


def _grid_loss(terms: Sequence[tuple[float, float, float, float]], share: float, o: float) -> float:
    """_log_loss of DecodeFit(share, o, ...) on precomputed _terms."""
    return sum((math.log(m / share + c + o * k) - lm) ** 2 for m, c, k, lm in terms)


def fit_share_overhead(
    rows: Sequence[DecodeRow], mfu: float, start: DecodeFit | None = None
) -> DecodeFit:
    """Grid search of (share in [0.1, 1], overhead in [0, 15 ms]) for the least log loss.

    Without `start`: a coarse grid (0.05 x 0.5 ms), then 0.01 x 0.1 ms and 0.002 x
    0.025 ms grids around the best; with `start`, a 0.004 x 0.05 ms grid around it.
    moe_overhead_s and legacy_extra_s are kept from `start` (0 without).
    """
    base = replace(start, mfu=mfu) if start else DecodeFit(0.55, 7.5e-3, mfu)
    terms = _terms(rows, base)

    def best_of(shares: list[float], overheads: list[float]) -> tuple[float, float]:
        return min(
            ((s, o) for s in shares for o in overheads), key=lambda so: _grid_loss(terms, *so)
        )

    if start is None:
        s, o = best_of(_grid(0.55, 0.45, 0.05, 0.1, 1.0), _grid(7.5e-3, 7.5e-3, 5e-4, 0.0, 15e-3))
        s, o = best_of(_grid(s, 0.05, 0.01, 0.1, 1.0), _grid(o, 5e-4, 1e-4, 0.0, 15e-3))
        s, o = best_of(_grid(s, 0.01, 0.002, 0.1, 1.0), _grid(o, 1e-4, 2.5e-5, 0.0, 15e-3))
    else:
        s, o = best_of(
            _grid(start.share, 0.02, 0.004, 0.1, 1.0),
            _grid(start.overhead_s, 5e-4, 5e-5, 0.0, 15e-3),
        )
    return replace(base, share=s, overhead_s=o)


def fit_moe_overhead(rows: Sequence[DecodeRow], fit: DecodeFit) -> float:
    """Extra step seconds of MoE rows in [0, 15 ms] (step 0.05 ms), least log loss."""
    moe_rows = [r for r in rows if r.measurement.work.is_moe]
    grid = [5e-5 * i for i in range(301)]
    return min(grid, key=lambda o: _log_loss(moe_rows, replace(fit, moe_overhead_s=o)))


def fit_legacy_extra(rows: Sequence[DecodeRow], fit: DecodeFit) -> float:
    """Extra overhead seconds (per 32 layers) of legacy-build rows in [0, 40 ms]
    (step 0.1 ms), on all of them, batched ones included."""
    old = [r for r in rows if r.measurement.legacy_build]
    grid = [1e-4 * i for i in range(401)]
    return min(grid, key=lambda o: _log_loss(old, replace(fit, legacy_extra_s=o)))


def fit_mfu(rows: Sequence[DecodeRow], fit: DecodeFit) -> float:
    """decode_mfu in [0.02, 1] (step 0.005) minimising the log loss on batched rows."""
    grid = [0.02 + 0.005 * i for i in range(197)]
    return min(
        grid,
        key=lambda mfu: _log_loss(rows, replace(fit, mfu=mfu)),
    )


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile with linear interpolation between order statistics (numpy's default,
    statistics.quantiles' "inclusive" method); q is read as a fraction of at most 1000ths."""
    if len(values) == 1:  # statistics.quantiles wants two points before Python 3.13
        return float(values[0])
    step = Fraction(q).limit_denominator(1000)
    if step.numerator in (0, step.denominator):
        return float(min(values) if step.numerator == 0 else max(values))
    cuts = statistics.quantiles(values, n=step.denominator, method="inclusive")
    return cuts[step.numerator - 1]


def error_stats(triples: Sequence[tuple[float, float, float, float]]) -> dict[str, float]:
    """n, median and p90 of |predicted - measured| / measured (percent), share inside
    [low, high] and median high/low, for (measured, predicted, low, high) tuples."""
    errors = [abs(p - m) / m * 100 for m, p, _, _ in triples]
    return {
        "n": len(triples),
        "median_abs_pct_err": round(statistics.median(errors), 2),
        "p90_abs_pct_err": round(quantile(errors, 0.9), 2),
        "inside_bounds_share": round(
            sum(lo <= m <= hi for m, _, lo, hi in triples) / len(triples), 3
        ),
        "median_high_low_ratio": round(statistics.median(hi / lo for _, _, lo, hi in triples), 3),
    }


def shrunk_bounds(
    own: Sequence[float],
    pooled: Sequence[float],
    shrink_rows: float = SHRINK_ROWS,
    quantiles: tuple[float, float] = BOUND_QUANTILES,
) -> tuple[float, float]:
    """A group's (low, high) ratio bounds, its quantiles shrunk toward the pooled ones.

    log bound = (n x log q_own + k x log q_pooled) / (n + k) for each of BOUND_QUANTILES,
    with n the group's rows and k = shrink_rows pseudo-rows of the pooled distribution:
    a tight group with many rows keeps tight bounds, a small group leans on the pool
    (empirical-Bayes style shrinkage of the quantile in log space). `quantiles` replaces
    BOUND_QUANTILES (the family ranges use wider ones: effects.FAMILY_QUANTILES).
    """
    n = len(own)
    out = []
    for q in quantiles:
        pooled_log = math.log(quantile(pooled, q))
        own_log = math.log(quantile(own, q)) if n else pooled_log
        out.append(math.exp((n * own_log + shrink_rows * pooled_log) / (n + shrink_rows)))
    return out[0], out[1]
