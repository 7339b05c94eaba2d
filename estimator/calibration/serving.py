"""Fit and hold out the batched serving model (estimator.serving) on serving.csv.

`python -m estimator.calibration.serving` reads `data/validation/serving.csv` (published
vLLM, SGLang and TensorRT-LLM serving results, each row with its source), predicts each
row with `serving.closed_loop_point`, fits the factors per engine family by grid search
on the squared log ratio, holds out whole sources (every row of one publication is
predicted by a fit on the others), and writes `data/serving_calibration.json`.

Rows compare like with like: a row with a mean TPOT is compared with the predicted TPOT
(1 / per-user speed); a row with only an aggregate output tokens/s with the predicted
batch x output / (TTFT + (output - 1) x TPOT). Rows of engine builds older than their
current fast path (calibration.rows.legacy_build) are kept out of the fit and reported
apart, and so are rows whose model has no config or whose device is unknown
(calibration.serving_rows reads the rows).
"""

from __future__ import annotations

import json
import math
import statistics
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from estimator.calibration.serving_grid import MOE_ONLY, FitMemo, grid_losses, search_key
from estimator.calibration.serving_rows import ServingRow, load_rows
from estimator.serving import (
    MEASURED_CLASSES,
    SERVING_CALIBRATION_JSON,
    CycleWork,
    ServingFactors,
    cycle_seconds,
    cycle_work,
)

CLASS_MIN_ROWS = 15  # a hardware class gets its own compute factor from this many rows
CLASS_FACTORS = [0.3 + 0.05 * i for i in range(25)]  # 0.3 .. 1.5
FAMILY_MIN_ROWS = 8  # an engine family gets its own factors from this many fitted rows on
FAMILY_MIN_SOURCES = 2  # at least this many sources; else it takes the pooled factors
GRID = {  # shares: multipliers of the hardware's measured ones (serving.HARDWARE_EFFICIENCY)
    "bandwidth_share": [0.6 + 0.025 * i for i in range(25)],  # 0.6 .. 1.2
    "compute_share": [0.3 + 0.025 * i for i in range(41)],  # 0.3 .. 1.3
    "step_overhead_s": [0.0005 * i for i in range(25)],  # 0 .. 12 ms per 32 layers
    "moe_step_overhead_s": [0.0005 * i for i in range(17)],  # 0 .. 8 ms
    "sequence_overhead_s": [5e-6 * i for i in range(17)],  # 0 .. 80 us per sequence
    "moe_compute_share": [0.05 + 0.025 * i for i in range(47)],  # 0.05 .. 1.2
}


def predicted(row: ServingRow, factors: ServingFactors) -> float:
    """The row's metric as the model predicts it with `factors`."""
    cw = row.cycle
    if cw is None:
        cw = _work_at(row, _open_loop_batch(row, factors) if row.arrival_rate_per_s else row.batch)
    # ServingPoint.per_user_tokens_per_s / aggregate_tokens_per_s, from cycle_seconds
    tpot, _, cycle = cycle_seconds(cw, factors)
    return 1.0 / tpot if row.metric == "tpot" else cw.batch * cw.output_tokens / cycle


def _open_loop_batch(row: ServingRow, factors: ServingFactors) -> int:
    """The users in flight at the row's arrival rate, by Little's law: in flight = rate x
    (TTFT + (output - 1) TPOT), iterated from one user (at most the row's batch)."""
    guess = 1.0
    for _ in range(30):
        cycle_s = cycle_seconds(_work_at(row, max(1, round(guess))), factors)[2]
        following = min(float(row.batch), row.arrival_rate_per_s * cycle_s)
        # the same batch again gives the same guess ever after: a fixed point
        done = max(1, round(following)) == max(1, round(guess))
        guess = following
        if done:
            break
    return max(1, round(guess))


def _work_at(row: ServingRow, batch: int) -> CycleWork:
    """closed_loop_point's cycle work for the row at `batch` users, built once per batch and
    hardware class factor (the work does not depend on the engine factors being fitted)."""
    key = (row.inputs.compute_factor, batch)
    work = row.batch_work.get(key)
    if work is None:
        work = cycle_work(
            row.inputs,
            batch=batch,
            prompt_tokens=row.prompt_tokens,
            output_tokens=row.output_tokens,
            chunk_tokens=row.chunk_tokens,
        )
        row.batch_work[key] = work
    return work


def _row_loss(row: ServingRow, factors: ServingFactors) -> float:
    err = math.log(row.measured / predicted(row, factors))
    # Huber: an outlier's pull grows linearly, not quadratically
    return row.weight * (err * err if abs(err) < 0.5 else abs(err) - 0.25)


def _loss(rows: Sequence[ServingRow], factors: ServingFactors) -> float:
    return sum(_row_loss(row, factors) for row in rows)


def _with(factors: ServingFactors, name: str, value: float) -> ServingFactors:
    """factors with one fitted field replaced (dataclasses.replace, typed for mypy)."""
    changed: ServingFactors = replace(factors, **{name: value})  # type: ignore[arg-type]
    return changed


def _coordinate_search(
    rows: Sequence[ServingRow],
    start: ServingFactors,
    rounds: int = 3,
    memo: FitMemo | None = None,
) -> ServingFactors:
    """Coordinate descent over GRID: each factor in turn takes its best grid value, the
    value of least _loss(rows, factors with it), the smaller of equal losses (min over
    (loss, value)). serving_grid.grid_losses gives those losses from operands computed
    once per factor, bit-identical to _loss at each value; `memo` keeps each search by
    everything it depends on (serving_grid.search_key)."""
    key = search_key(rows, start, rounds) if memo is not None else ()
    if memo is not None and key in memo.searches:
        return memo.searches[key]
    best = start
    moe = any(r.inputs.work.is_moe for r in rows)
    for _ in range(rounds):
        for name, values in GRID.items():
            if name in MOE_ONLY and not moe:
                continue
            losses = grid_losses(rows, best, name, values, _row_loss)
            scored = list(zip(losses, values, strict=True))
            best = _with(best, name, min(scored)[1])
    if memo is not None:
        memo.searches[key] = best
    return best


POOLED_START = ServingFactors("serving", 1.0, 1.0, 0.003, 0.001, moe_compute_share=0.5)


def fit_groups(
    rows: Sequence[ServingRow], memo: FitMemo | None = None
) -> dict[str, ServingFactors]:
    """Pooled factors on every fitted row, then per engine family where it has
    FAMILY_MIN_ROWS rows from FAMILY_MIN_SOURCES sources (started from the pooled fit)."""
    fitted = [r for r in rows if not r.excluded]
    pooled = _coordinate_search(fitted, POOLED_START, memo=memo)
    pooled = replace(pooled, group="serving", rows=len(fitted))
    groups = {"serving": pooled}
    for engine in sorted({r.engine for r in fitted}):
        mine = [r for r in fitted if r.engine == engine]
        if len(mine) >= FAMILY_MIN_ROWS and len({r.source for r in mine}) >= FAMILY_MIN_SOURCES:
            own = _coordinate_search(mine, pooled, rounds=2, memo=memo)
            groups[engine] = replace(own, group=engine, rows=len(mine))
    return groups


def factors_for(engine: str, groups: dict[str, ServingFactors]) -> ServingFactors:
    return groups.get(engine, groups["serving"])


def with_class(row: ServingRow, factor: float) -> ServingRow:
    cycle = row.cycle
    if cycle is not None:
        cycle = replace(
            cycle,
            heavy=replace(cycle.heavy, compute_factor=factor),
            light=replace(cycle.light, compute_factor=factor),
        )
    return replace(row, inputs=replace(row.inputs, compute_factor=factor), cycle=cycle)


def _classed(row: ServingRow, factor: float, memo: FitMemo | None) -> ServingRow:
    """with_class(row, factor), kept in `memo` by the row's index and the factor's bits."""
    if memo is None:
        return with_class(row, factor)
    key = (row.index, struct.pack("d", factor))
    found = memo.classed.get(key)
    if found is None:
        found = memo.classed[key] = with_class(row, factor)
    return found


def fit_classes(
    rows: Sequence[ServingRow], groups: dict[str, ServingFactors], memo: FitMemo | None = None
) -> dict[str, float]:
    """One compute multiplier per hardware class without measured tables
    (serving.MEASURED_CLASSES) that has CLASS_MIN_ROWS fitted rows (the engine factors
    held fixed); the others stay at 1."""
    fitted = [r for r in rows if not r.excluded]
    out = {}
    unmeasured = {r.hardware for r in fitted if r.hardware not in MEASURED_CLASSES}
    for hardware in sorted(unmeasured - {""}):
        mine = [r for r in fitted if r.hardware == hardware]
        if len(mine) < CLASS_MIN_ROWS:
            continue
        scored = [
            (sum(_row_loss(_classed(r, f, memo), factors_for(r.engine, groups)) for r in mine), f)
            for f in CLASS_FACTORS
        ]
        out[hardware] = min(scored)[1]
    return out


def fit_all(
    rows: Sequence[ServingRow], memo: FitMemo | None = None
) -> tuple[dict[str, ServingFactors], dict[str, float]]:
    """Engine factors on the rows of hardware with measured tables
    (serving.MEASURED_CLASSES: what the hardware reaches is known there, so what is left is
    the engine's), then a compute factor for each other hardware class with the engine
    factors held (AMD's GEMM efficiency lands in its class, not in vLLM's factors). `memo`:
    shared by the fits of one build (serving_grid.FitMemo)."""
    measured = [r for r in rows if r.hardware in MEASURED_CLASSES]
    groups = fit_groups(measured or rows, memo)
    return groups, fit_classes(rows, groups, memo)


def apply_class(row: ServingRow, classes: dict[str, float]) -> ServingRow:
    return with_class(row, classes.get(row.hardware, 1.0))


def predict_with(
    row: ServingRow, groups: dict[str, ServingFactors], classes: dict[str, float]
) -> float:
    return predicted(apply_class(row, classes), factors_for(row.engine, groups))


def holdout(
    rows: Sequence[ServingRow], key: Callable[[ServingRow], str], memo: FitMemo | None = None
) -> list[tuple[ServingRow, float]]:
    """(row, prediction by a fit without the row's group) for every fitted row."""
    fitted = [r for r in rows if not r.excluded]
    out = []
    for value in sorted({key(r) for r in fitted}):
        groups, classes = fit_all([r for r in fitted if key(r) != value], memo)
        out += [(r, predict_with(r, groups, classes)) for r in fitted if key(r) == value]
    return out


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def stats(pairs: Iterable[tuple[ServingRow, float]]) -> dict[str, Any]:
    """Median and p90 of |measured / predicted - 1|, the median bias (measured / predicted
    - 1), ratio quantiles, and the same per engine."""
    pairs = list(pairs)
    if not pairs:
        return {"rows": 0}
    ratios = [r.measured / p for r, p in pairs]
    errors = [abs(x - 1) for x in ratios]
    out: dict[str, Any] = {
        "rows": len(pairs),
        "median_error": round(statistics.median(errors), 4),
        "p90_error": round(_quantile(errors, 0.9), 4),
        "median_bias": round(statistics.median(ratios) - 1, 4),
        "ratio_p10": round(_quantile(ratios, 0.1), 4),
        "ratio_p90": round(_quantile(ratios, 0.9), 4),
        "within_25_percent": round(sum(e <= 0.25 for e in errors) / len(errors), 4),
    }
    engines = sorted({r.engine for r, _ in pairs})
    if len(engines) > 1:
        out["by_engine"] = {e: stats([(r, p) for r, p in pairs if r.engine == e]) for e in engines}
    return out


def _entry(f: ServingFactors, low: float, high: float) -> dict[str, Any]:
    return {
        "bandwidth_share": round(f.bandwidth_share, 4),
        "compute_share": round(f.compute_share, 4),
        "step_overhead_s": round(f.step_overhead_s, 6),
        "moe_step_overhead_s": round(f.moe_step_overhead_s, 6),
        "sequence_overhead_s": round(f.sequence_overhead_s, 7),
        "moe_compute_share": round(f.moe_compute_share or f.compute_share, 4),
        "ratio_low": round(low, 4),
        "ratio_high": round(high, 4),
        "rows": f.rows,
    }


def build() -> dict[str, Any]:
    """The whole serving_calibration.json."""
    rows, skipped = load_rows()
    memo = FitMemo()  # the folds' fits share what is unchanged between them, exactly
    groups, classes = fit_all(rows, memo)
    by_source = holdout(rows, lambda r: r.source, memo)
    by_device = holdout(rows, lambda r: r.device_name, memo)
    by_model = holdout(rows, lambda r: r.model.lower(), memo)
    fitted = [r for r in rows if not r.excluded]
    in_sample = [(r, predict_with(r, groups, classes)) for r in fitted]
    legacy = [(r, predict_with(r, groups, classes)) for r in rows if r.excluded]
    entries = {}
    for key, factors in groups.items():
        # bounds from whole devices held out, as the single-stream model's: holding out a
        # source leaves TensorRT-LLM without its own factors (nearly all its rows are
        # NVIDIA's tables), which says more about the data than about a new device
        ratios = [r.measured / p for r, p in by_device if key in ("serving", r.engine)]
        low = _quantile(ratios, 0.1) if len(ratios) >= 5 else 0.7
        high = _quantile(ratios, 0.9) if len(ratios) >= 5 else 1.3
        entries[key] = _entry(factors, min(low, 0.95), max(high, 1.05))
        # the same factors stand for the engine on CUDA, where its rows were measured
        if key != "serving":
            entries[f"{key}/cuda"] = entries[key]
    return {
        "generated_by": "python -m estimator.calibration.serving",
        "source": "estimator/data/validation/serving.csv",
        "formulas": "estimator/serving.py module docstring; docs/estimator.md, Batched serving",
        "groups": entries,
        "hardware_classes": {
            k: {"compute_factor": round(v, 3), "rows": sum(r.hardware == k for r in fitted)}
            for k, v in classes.items()
        },
        "holdout_by_source": stats(by_source),
        "holdout_by_device": stats(by_device),
        "holdout_by_model": stats(by_model),
        "in_sample": stats(in_sample),
        "legacy_builds": stats(legacy),
        "rows_fitted": len(fitted),
        "rows_skipped": [f"row {i}: {why}" for i, why in skipped],
    }


def main() -> None:
    data = build()
    SERVING_CALIBRATION_JSON.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    for name in ("holdout_by_source", "holdout_by_device", "holdout_by_model", "in_sample"):
        print(name, json.dumps({k: v for k, v in data[name].items() if k != "by_engine"}))
        for engine, s in data[name].get("by_engine", {}).items():
            print("   ", engine, json.dumps(s))


if __name__ == "__main__":
    main()
