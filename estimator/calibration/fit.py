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
import struct
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

# _best_grid_point's memo: the exact bits of its terms and grids -> (share, overhead)
GridMemo = dict[bytes, tuple[float, float]]


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
    """sum(log(predicted step / measured step)^2): the loss the fits below minimise; they
    evaluate it on precomputed parts (_step_parts), with the same results bit for bit."""
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


def _best_grid_point(
    terms: Sequence[tuple[float, float, float, float]],
    shares: Sequence[float],
    overheads: Sequence[float],
    memo: GridMemo | None = None,
) -> tuple[float, float]:
    """The (share, overhead) of least loss sum((log(m / share + c + o x k) - log measured)^2)
    on precomputed _terms, visiting shares outer and overheads inner and keeping the first
    of equal losses, as min() over that product does.

    m / share + c + o x k is evaluated as (m / share + c) + o x k, so the left part is
    computed once per share and the sum takes the same operands in the same order: the
    losses, and so the chosen point, are bit-identical to evaluating the formula at
    every point. The point depends on nothing else: `memo` keeps it by the exact bits of
    the terms and grids (struct-packed, so 0.0 and -0.0 differ)."""
    key = b""
    if memo is not None:
        values = [v for t in terms for v in t] + list(shares) + list(overheads)
        key = struct.pack(f"3q{len(values)}d", len(terms), len(shares), len(overheads), *values)
        if key in memo:
            return memo[key]
    log = math.log
    best: tuple[float, float] | None = None
    best_loss = 0.0
    for s in shares:
        parts = [(m / s + c, k, lm) for m, c, k, lm in terms]
        for o in overheads:
            loss = sum([(log(b + o * k) - lm) ** 2 for b, k, lm in parts])
            if best is None or loss < best_loss:
                best, best_loss = (s, o), loss
    if best is None:
        raise ValueError("empty grid")
    if memo is not None:
        memo[key] = best
    return best


def fit_share_overhead(
    rows: Sequence[DecodeRow],
    mfu: float,
    start: DecodeFit | None = None,
    memo: GridMemo | None = None,
) -> DecodeFit:
    """Grid search of (share in [0.1, 1], overhead in [0, 15 ms]) for the least log loss
    (_best_grid_point, with `memo`).

    Without `start`: a coarse grid (0.05 x 0.5 ms), then 0.01 x 0.1 ms and 0.002 x
    0.025 ms grids around the best; with `start`, a 0.004 x 0.05 ms grid around it.
    moe_overhead_s and legacy_extra_s are kept from `start` (0 without).
    """
    base = replace(start, mfu=mfu) if start else DecodeFit(0.55, 7.5e-3, mfu)
    terms = _terms(rows, base)
    if start is None:
        s, o = _best_grid_point(
            terms, _grid(0.55, 0.45, 0.05, 0.1, 1.0), _grid(7.5e-3, 7.5e-3, 5e-4, 0.0, 15e-3), memo
        )
        s, o = _best_grid_point(
            terms, _grid(s, 0.05, 0.01, 0.1, 1.0), _grid(o, 5e-4, 1e-4, 0.0, 15e-3), memo
        )
        s, o = _best_grid_point(
            terms, _grid(s, 0.01, 0.002, 0.1, 1.0), _grid(o, 1e-4, 2.5e-5, 0.0, 15e-3), memo
        )
    else:
        s, o = _best_grid_point(
            terms,
            _grid(start.share, 0.02, 0.004, 0.1, 1.0),
            _grid(start.overhead_s, 5e-4, 5e-5, 0.0, 15e-3),
            memo,
        )
    return replace(base, share=s, overhead_s=o)


def _step_parts(
    rows: Sequence[DecodeRow], fit: DecodeFit
) -> list[tuple[float, float, float, float, float, float, float, float]]:
    """Per row the operands of predicted_step under `fit`, each computed as it does:
    (memory_1 / share, compute, compute_1, comm, legacy extra, moe extra, overhead_scale,
    measured step). The 1-D fits below rebuild the step from them with the grid value
    in its place and the same order of operations, so their losses are bit-identical to
    _log_loss on a replaced fit."""
    out = []
    for r in rows:
        work = r.measurement.work
        out.append(
            (
                r.memory_1 / fit.share,
                r.compute_1 / fit.mfu if r.compute_1 else 0.0,
                r.compute_1,
                r.comm,
                fit.legacy_extra_s if r.measurement.legacy_build else 0.0,
                fit.moe_overhead_s if work.is_moe else 0.0,
                overhead_scale(work.n_layers),
                r.measured_step,
            )
        )
    return out


def fit_moe_overhead(rows: Sequence[DecodeRow], fit: DecodeFit) -> float:
    """Extra step seconds of MoE rows in [0, 15 ms] (step 0.05 ms), least log loss
    (_log_loss, on _step_parts: step = (memory + compute + comm) + (overhead + legacy
    + o) x scale)."""
    moe_rows = [r for r in rows if r.measurement.work.is_moe]
    grid = [5e-5 * i for i in range(301)]
    o_s, log = fit.overhead_s, math.log
    parts = [
        (ms + cp + cm, o_s + lg, k, t) for ms, cp, _, cm, lg, _, k, t in _step_parts(moe_rows, fit)
    ]
    return min(grid, key=lambda o: sum([log((a + (b + o) * k) / t) ** 2 for a, b, k, t in parts]))


def fit_legacy_extra(rows: Sequence[DecodeRow], fit: DecodeFit) -> float:
    """Extra overhead seconds (per 32 layers) of legacy-build rows in [0, 40 ms]
    (step 0.1 ms), on all of them, batched ones included (_log_loss, on _step_parts:
    step = (memory + compute + comm) + (overhead + o + moe) x scale)."""
    old = [r for r in rows if r.measurement.legacy_build]
    grid = [1e-4 * i for i in range(401)]
    o_s, log = fit.overhead_s, math.log
    parts = [(ms + cp + cm, mo, k, t) for ms, cp, _, cm, _, mo, k, t in _step_parts(old, fit)]
    return min(
        grid, key=lambda o: sum([log((a + (o_s + o + e) * k) / t) ** 2 for a, e, k, t in parts])
    )


def fit_mfu(rows: Sequence[DecodeRow], fit: DecodeFit) -> float:
    """decode_mfu in [0.02, 1] (step 0.005) minimising the log loss on batched rows
    (_log_loss, on _step_parts: step = memory + compute_1 / mfu + comm + overhead)."""
    grid = [0.02 + 0.005 * i for i in range(197)]
    o_s, log = fit.overhead_s, math.log
    parts = [
        (ms, c1, cm, (o_s + lg + mo) * k, t)
        for ms, _, c1, cm, lg, mo, k, t in _step_parts(rows, fit)
    ]
    return min(
        grid,
        key=lambda mfu: sum(
            [log((a + (c1 / mfu if c1 else 0.0) + cm + ov) / t) ** 2 for a, c1, cm, ov, t in parts]
        ),
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
