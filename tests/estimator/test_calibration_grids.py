"""The calibrations' grid searches score their grids from operands precomputed per row
(fit.py's _best_grid_point and 1-D fits, serving_grid.grid_losses). These restate the step
formulas, so they must give what evaluating the loss itself gives at every grid value, to
the bit: if estimator/speed or estimator/serving changes its step, a refit with a stale
precomputation would quietly fit another model. Checked on the real rows."""

from __future__ import annotations

import math
from dataclasses import replace

from estimator.calibration.build import fitted_rows
from estimator.calibration.fit import (
    DecodeFit,
    _best_grid_point,
    _grid,
    _log_loss,
    _terms,
    decode_row,
    fit_legacy_extra,
    fit_mfu,
    fit_moe_overhead,
)
from estimator.calibration.rows import load_measurements
from estimator.calibration.serving import GRID, POOLED_START, _loss, _row_loss, _with
from estimator.calibration.serving_grid import MOE_ONLY, grid_losses
from estimator.calibration.serving_rows import load_rows


def test_serving_grid_losses_are_the_loss_at_every_value() -> None:
    rows = [r for r in load_rows()[0] if not r.excluded]
    moe = any(r.inputs.work.is_moe for r in rows)
    for name, values in GRID.items():
        if name in MOE_ONLY and not moe:
            continue
        expected = [_loss(rows, _with(POOLED_START, name, v)) for v in values]
        assert grid_losses(rows, POOLED_START, name, values, _row_loss) == expected, name


def test_decode_fits_pick_what_the_loss_itself_picks() -> None:
    decode_ms, _, _ = fitted_rows(load_measurements())
    rows = [decode_row(m) for m in decode_ms]
    fit = DecodeFit(0.6, 4e-3, 0.3, moe_overhead_s=1e-3, legacy_extra_s=2e-3)
    # the 2-D grid: the loss on _terms at every (share, overhead), shares outer
    terms = _terms(rows, fit)
    shares, overheads = _grid(0.55, 0.45, 0.05, 0.1, 1.0), _grid(7.5e-3, 7.5e-3, 5e-4, 0.0, 15e-3)
    expected = min(
        ((s, o) for s in shares for o in overheads),
        key=lambda so: sum(
            (math.log(m / so[0] + c + so[1] * k) - lm) ** 2 for m, c, k, lm in terms
        ),
    )
    assert _best_grid_point(terms, shares, overheads) == expected
    # the 1-D grids: _log_loss on the fit with the grid value in place
    moe_rows = [r for r in rows if r.measurement.work.is_moe]
    old = [r for r in rows if r.measurement.legacy_build]
    moe = [5e-5 * i for i in range(301)]
    legacy = [1e-4 * i for i in range(401)]
    mfu = [0.02 + 0.005 * i for i in range(197)]
    assert fit_moe_overhead(rows, fit) == min(
        moe, key=lambda o: _log_loss(moe_rows, replace(fit, moe_overhead_s=o))
    )
    assert fit_legacy_extra(rows, fit) == min(
        legacy, key=lambda o: _log_loss(old, replace(fit, legacy_extra_s=o))
    )
    assert fit_mfu(rows, fit) == min(mfu, key=lambda m: _log_loss(rows, replace(fit, mfu=m)))
