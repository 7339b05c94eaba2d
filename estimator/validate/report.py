"""The report: every data set's metrics, as a table or JSON, and the speed model's
held-out accuracy from calibration.json; `main` is `python -m estimator.validate`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from typing import Any

from estimator.factors import load_calibration
from estimator.validate.memory import validate_llamacpp_memory, validate_vllm_memory
from estimator.validate.metrics import Metric
from estimator.validate.sizes import validate_gguf_sizes, validate_gguf_sizes_ud
from estimator.validate.throughput import validate_throughput

VALIDATORS: tuple[Callable[[], list[Metric]], ...] = (
    validate_gguf_sizes,
    validate_gguf_sizes_ud,
    validate_llamacpp_memory,
    validate_vllm_memory,
    validate_throughput,
)


def report() -> list[dict[str, Any]]:
    """Every metric's summary, in data-set order."""
    return [metric.summary() for validator in VALIDATORS for metric in validator()]


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def format_report(summaries: list[dict[str, Any]]) -> Iterator[str]:
    yield (
        f"{'data set':<21} {'figure':<52} {'n':>4} {'skip':>4} {'median%':>8} {'p90%':>7} "
        f"{'max%':>7} {'inside':>6} {'hi/lo':>5}  verdict"
    )
    for s in summaries:
        verdict = (
            "MISS " + ",".join(s["misses"])
            if s["misses"]
            else ("ok" if s["target"] else "(no target)")
        )
        yield (
            f"{s['dataset']:<21} {s['figure']:<52} {s['count']:>4} {s['skipped']:>4} "
            f"{_fmt(s['median_pct'], '{:.2f}'):>8} {_fmt(s['p90_pct'], '{:.2f}'):>7} "
            f"{_fmt(s['max_pct'], '{:.2f}'):>7} {_fmt(s['inside_share'], '{:.0%}'):>6} "
            f"{_fmt(s['median_high_over_low'], '{:.2f}'):>5}  {verdict}"
        )
    yield ""
    yield "targets: " + "; ".join(
        f"{s['figure']}: "
        + ", ".join(
            f"{k}<={v}" if k != "inside_share" else f"{k}>={v}" for k, v in s["target"].items()
        )
        for s in summaries
        if s["target"]
    )


HOLDOUTS = (
    ("by_device", "whole devices held out"),
    ("by_model", "whole models held out"),
    ("by_source", "whole sources held out"),
)


def format_speed_holdouts(calibration: dict[str, Any]) -> Iterator[str]:
    """The speed model's accuracy on held-out data (calibration.json, written by
    `python -m estimator.calibration`): grouped hold-outs first, where every prediction of
    a device's (a model's, a source's) rows comes from a fit without any of them; then
    in-sample (fitted and checked on the same rows), which flatters the figure. Bias:
    median signed error (positive = too fast)."""
    grouped = calibration["grouped_holdout"]
    yield "speed on held-out data (|predicted - measured| / measured; bias: predicted too fast > 0)"
    yield f"{'figure':<9} {'hold-out':<28} {'n':>4} {'median%':>8} {'p90%':>7} {'bias%':>6}"
    for kind in ("decode", "prefill"):
        for name, label in HOLDOUTS:
            s = grouped[name][kind]
            yield (
                f"{kind:<9} {label:<28} {s['n']:>4} {s['median_abs_pct_err']:>8.2f} "
                f"{s['p90_abs_pct_err']:>7.2f} {s['median_signed_pct_err']:>6.1f}"
            )
        fit = calibration["in_sample"][kind]
        yield (
            f"{kind:<9} {'in-sample (not held out)':<28} {fit['n']:>4} "
            f"{fit['median_abs_pct_err']:>8.2f} {fit['p90_abs_pct_err']:>7.2f} {'-':>6}"
        )
    for split in ("bias_by_backend", "bias_by_engine"):
        parts = grouped["by_device"]["decode"][split]
        yield f"decode {split.replace('_', ' ')} (devices held out): " + ", ".join(
            f"{k} {v['median_signed_pct_err']:+.1f} % (n {v['n']})" for k, v in parts.items()
        )


HARDWARE_POOLS = (
    ("current", "current hardware"),
    ("older_or_rare", "older or rare hardware"),
)


def format_one_user(calibration: dict[str, Any]) -> Iterator[str]:
    """The one-user speed model (local engines, batch 1) with whole devices held out, for
    current hardware (NVIDIA Turing and newer, AMD RDNA 2+ and CDNA, Apple M1 and
    newer, Intel Arc) and older or rare hardware apart (calibration.json
    "hardware_holdout"): errors, bias, the share inside each row's family range built
    without its device, that range's median width, and per backend."""
    pools = calibration.get("hardware_holdout", {})
    yield "one user (local engines, batch 1), whole devices held out"
    yield (
        f"{'figure':<9} {'hardware':<24} {'n':>4} {'dev':>4} {'median%':>8} {'p90%':>7} "
        f"{'bias%':>6} {'inside':>7} {'hi/lo':>6}"
    )
    for kind in ("decode", "prefill"):
        for pool, label in HARDWARE_POOLS:
            s = pools.get(pool, {}).get(kind)
            if not s:
                continue
            yield (
                f"{kind:<9} {label:<24} {s['n']:>4} {s['devices']:>4} "
                f"{s['median_abs_pct_err']:>8.2f} {s['p90_abs_pct_err']:>7.2f} "
                f"{s['median_signed_pct_err']:>6.1f} {s['inside_range_share']:>7.0%} "
                f"{s['median_high_over_low']:>6.2f}"
            )
            yield f"{'':<9} by backend: " + ", ".join(
                f"{b} {v['median_abs_pct_err']:.1f}/{v['p90_abs_pct_err']:.1f} % "
                f"bias {v['median_signed_pct_err']:+.1f} (n {v['n']})"
                for b, v in s["by_backend"].items()
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m estimator.validate", description="Accuracy of the estimator on public data."
    )
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON")
    args = parser.parse_args(argv)
    summaries = report()
    if args.json:
        print(json.dumps(summaries, indent=2))
    else:
        for line in format_report(summaries):
            print(line)
        print()
        for line in format_speed_holdouts(load_calibration()):
            print(line)
        print()
        for line in format_one_user(load_calibration()):
            print(line)
    return 0
