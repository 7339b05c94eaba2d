"""python -m estimator.calibration.oracle: how far the one-user speed model is from its
targets, and how far any model could get, on the current-hardware rows (local engines,
batch-1 decode, prefill). About 40 s; docs/accuracy.md quotes its tables.

For decode and prefill, overall and per backend, the median / p90 absolute % error of:

- *held-out*: each device's rows predicted by the fit on the other devices
  (build.holdout_predictions by device, the figures of calibration.json's
  hardware_holdout.current, printed below them as a check);
- *in-sample*: every row predicted by the fit on all rows (build_calibration's own fit);
- *oracle*: each in-sample prediction times its group's own median measured / predicted
  ratio, groups being a device, device+backend, device+model, device+model+quant. That is
  a free factor per group fitted on the very rows it scores: more than any model of an
  unseen device can know (a group of one row scores 0). What it leaves is the spread
  between rows of one group (builds, drivers, settings), which no hardware term removes:
  held-out targets below it are out of reach on this data.

Then the repeat spread (each row's % distance from the median of the rows of the same
device, backend, model, quant and test; groups of two rows or more) and the 12 largest
held-out prefill errors on CUDA.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from estimator.calibration import CALIBRATION_JSON
from estimator.calibration.build import (
    device_of,
    fit_all,
    fitted_rows,
    holdout_predictions,
    in_sample_predictions,
)
from estimator.calibration.effects import pool_of, single_stream
from estimator.calibration.fit import decode_row, quantile
from estimator.calibration.rows import load_measurements

BACKENDS = ("cuda", "rocm", "metal", "vulkan", "sycl")


@dataclass(frozen=True)
class Row:
    """One current-hardware one-user row: what it is, measured and predicted tokens/s."""

    kind: str  # "decode" | "prefill"
    device: str
    backend: str
    model: str
    quant: str
    test: tuple[int, int, int]  # prompt tokens, output tokens, batch
    measured: float
    held: float  # predicted with the row's device held out
    in_sample: float  # predicted by the fit on all rows


Key = Callable[[Row], tuple[object, ...]]
ORACLES: dict[str, Key] = {
    "oracle dev": lambda r: (r.device,),
    "oracle dev+backend": lambda r: (r.device, r.backend),
    "oracle dev+model": lambda r: (r.device, r.model),
    "oracle dev+model+quant": lambda r: (r.device, r.model, r.quant),
}
REPEATS: dict[str, Key] = {
    "repeat (same test)": lambda r: (r.device, r.backend, r.model, r.quant, r.test),
    "repeat (any test)": lambda r: (r.device, r.backend, r.model, r.quant),
}


def collect() -> list[Row]:
    """The current-hardware one-user rows with their held-out and in-sample predictions."""
    decode_ms, _, prefill_ms = fitted_rows(load_measurements())
    rows = [decode_row(m) for m in decode_ms]
    decode_fit, prefill_fit, _ = fit_all(rows, prefill_ms)
    ins_d, ins_p = in_sample_predictions(rows, decode_fit, prefill_ms, prefill_fit)
    held_d, held_p = holdout_predictions(rows, prefill_ms, device_of, {})
    out = []
    for kind, mlist, held, ins in (
        ("decode", decode_ms, held_d, ins_d),
        ("prefill", prefill_ms, held_p, ins_p),
    ):
        in_sample = {id(m): p for m, p in zip(mlist, ins, strict=True)}
        for m, p in single_stream(list(zip(mlist, held, strict=True)), kind):
            if pool_of(m) == "current":
                test = (m.prompt_tokens, m.output_tokens, m.batch)
                out.append(Row(kind, m.device_name, m.backend, m.model, m.quant, test,
                               m.measured_tps, p, in_sample[id(m)]))  # fmt: skip
    return out


def pct_error(measured: float, predicted: float) -> float:
    """Absolute error of a prediction, % of the measured value."""
    return abs(predicted - measured) / measured * 100


def oracle_errors(rows: Sequence[Row], key: Key) -> list[float]:
    """Each row's % error once its in-sample prediction is scaled by its group's median
    measured / in-sample ratio (groups by `key`), in the order of `rows`."""
    ratios: dict[tuple[object, ...], list[float]] = defaultdict(list)
    for r in rows:
        ratios[key(r)].append(r.measured / r.in_sample)
    factor = {k: statistics.median(v) for k, v in ratios.items()}
    return [pct_error(r.measured, r.in_sample * factor[key(r)]) for r in rows]


def repeat_spread(rows: Sequence[Row], key: Key) -> tuple[list[float], int]:
    """% distances of the rows from their group's median measured value, over groups of
    two rows or more, and the number of such groups."""
    groups: dict[tuple[object, ...], list[float]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r.measured)
    repeated = [v for v in groups.values() if len(v) >= 2]
    return [pct_error(statistics.median(v), x) for v in repeated for x in v], len(repeated)


def _stats(errors: Sequence[float]) -> str:
    if not errors:
        return "      -"
    return f"{statistics.median(errors):6.2f} /{quantile(errors, 0.9):7.2f}"


def _table(data: Sequence[Row], kind: str, ref: dict[str, Any]) -> None:
    rows = [r for r in data if r.kind == kind]
    methods = {  # per-row errors over all the kind's rows; oracles group across backends
        "held-out": [pct_error(r.measured, r.held) for r in rows],
        "in-sample": [pct_error(r.measured, r.in_sample) for r in rows],
    } | {label: oracle_errors(rows, key) for label, key in ORACLES.items()}
    subsets = [("all", rows)] + [(b, [r for r in rows if r.backend == b]) for b in BACKENDS]
    print(f"\n== {kind}: median / p90 abs % error (n) ==")
    print(f"{'':24}" + "".join(f"{f'{name} ({len(rs)})':>18}" for name, rs in subsets))
    for label, errs in methods.items():
        pairs = list(zip(rows, errs, strict=True))
        cols = [errs] + [[e for r, e in pairs if r.backend == b] for b in BACKENDS]
        print(f"{label:24}" + "".join(f"{_stats(c):>18}" for c in cols))
    stored = [ref] + [ref["by_backend"].get(b, {}) for b in BACKENDS]
    print(f"{'calibration.json h-o':24}" + "".join(
        f"{s.get('median_abs_pct_err', '-'):>9} /{s.get('p90_abs_pct_err', '-'):>7}" for s in stored
    ))  # fmt: skip
    for tag, key in REPEATS.items():
        print(f"{tag} med / p90 / max (rows, groups):")
        for name, rs in subsets:
            devs, n_groups = repeat_spread(rs, key)
            if devs:
                print(f"   {name:7} {_stats(devs)} / {max(devs):7.2f}  ({len(devs)}, {n_groups})")
            else:
                print(f"   {name:7} -")


def _worst_cuda_prefill(data: Sequence[Row], n: int = 12) -> None:
    cuda = [r for r in data if r.kind == "prefill" and r.backend == "cuda"]
    cuda.sort(key=lambda r: -pct_error(r.measured, r.held))
    print(f"\n== prefill / cuda: {n} largest held-out errors ==")
    print(f"{'device':34} {'model':26} {'quant':12} {'pp':>5} {'meas':>8} {'held':>8} "
          f"{'m/held':>7} {'ins':>8} {'m/ins':>6}")  # fmt: skip
    for r in cuda[:n]:
        print(
            f"{r.device[:34]:34} {r.model[:26]:26} {r.quant[:12]:12} {r.test[0]:5d} "
            f"{r.measured:8.1f} {r.held:8.1f} {r.measured / r.held:7.3f} "
            f"{r.in_sample:8.1f} {r.measured / r.in_sample:6.3f}"
        )


def main() -> None:
    start = time.perf_counter()
    data = collect()
    ref = json.loads(CALIBRATION_JSON.read_text())["hardware_holdout"]["current"]
    for kind in ("decode", "prefill"):
        _table(data, kind, ref[kind])
    _worst_cuda_prefill(data)
    print(f"\n[runtime {time.perf_counter() - start:.0f} s]")


if __name__ == "__main__":
    main()
