"""Fit the prefill factors on throughput.csv's ppN rows (held-out ratios: build.py).

Model (estimator.speed.prefill_seconds_per_token), per group g and weights family:

    seconds per token = FLOPs x f_family / (TFLOPS x mfu_g) + active params x c_g + stream

- stream: for MoE rows of the llama.cpp family, the experts each ubatch reads beyond the
  active ones at stream_share of the bandwidth (stream_seconds); not fitted here: the
  share is the median bandwidth share of the MoE decode rows (stream_share).

- mfu_g: peak matmul efficiency of the group. For a given c_g it is the median over the
  group's rows of the MFU each row implies, FLOPs x f / (TFLOPS x (t - params x c_g)),
  taken in log space.
- c_g (seconds per parameter per token): a cost that does not scale with TFLOPS; grid
  C_GRID, least squares of log(predicted / measured). Only groups with >= MIN_ROWS_FOR_C
  rows fit it; smaller groups take their parent's c and fit mfu alone.
- f_family: F16 and BF16 weights relative to quantized ones (1), pooled over all
  llama.cpp rows: exp(median log(predicted / measured)) of the family's rows under the
  group fits, iterated FAMILY_ITERATIONS times. Other engines use 1.

Leave-one-out: every row's ratio measured / predicted comes from the whole procedure
(family factors included) re-run without that row.
"""

from __future__ import annotations

import math
import statistics
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from estimator.calibration.rows import Measurement, stream_bytes_of
from estimator.speed import TFLOP, prefill_flops_per_token, weights_family
from estimator.speed.prefill import (
    UBATCH_ENGINES,
    expert_stream_seconds_per_token,
    power_capped_tflops,
)

MIN_ROWS = 3
MIN_ROWS_FOR_C = 8
C_GRID = tuple(i * 1e-15 for i in range(0, 61))  # 0 .. 60e-15 s per parameter per token
FAMILY_ITERATIONS = 2
# Candidate power caps of NVIDIA boards under llama.cpp, TFLOPS per W of board power
# (fit_with_power); 0 = no cap.
POWER_GRID = (0.0, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)
STREAM_ENGINES = UBATCH_ENGINES  # the engines whose ubatches read every touched expert


@dataclass(frozen=True)
class PrefillRow:
    """A prefill measurement reduced to the terms of the model."""

    measurement: Measurement
    key: str  # leaf group ("+moe" for MoE models)
    flops: float  # per token
    params: float  # active parameters
    tflops: float
    family: str  # "f16" | "bf16" | "quantized" (llama.cpp rows; "quantized" otherwise)
    seconds: float  # measured seconds per token
    stream: float = 0.0  # expert streaming seconds per token (stream_seconds), not fitted


@dataclass(frozen=True)
class PrefillModel:
    groups: dict[str, tuple[float, float]]  # key -> (mfu, c)
    family: dict[str, float]  # "f16" / "bf16" / "quantized" -> factor
    stream_share: float = 1.0  # the rows' expert stream share (stream_share)
    tflops_per_watt: float = 0.0  # the power cap of NVIDIA boards (fit_with_power); 0 = none


def prefill_row(m: Measurement, key: str, share: float, per_watt: float = 0.0) -> PrefillRow:
    """The model's terms for one measurement (FLOPs from speed.prefill_flops_per_token;
    expert streaming at `share` of the bandwidth, stream_seconds; llama.cpp rows' compute
    rate capped at `per_watt` x board power, speed.power_capped_tflops)."""
    flops = prefill_flops_per_token(
        m.work.params_active,
        n_layers=m.work.n_layers,
        attention_width=m.attention_width,
        prompt_tokens=m.prompt_tokens,
    )
    family = weights_family(m.quant) if m.engine == "llama.cpp" else "quantized"
    if m.compute_tflops is None:
        raise ValueError(f"row {m.row} has no TFLOPS")
    tflops = m.compute_tflops
    if m.engine == "llama.cpp":
        tflops = power_capped_tflops(tflops, m.device.tdp_w, m.device.vendor, per_watt)
    return PrefillRow(
        m,
        key,
        flops,
        m.work.params_active,
        tflops,
        family,
        1.0 / m.measured_tps,
        stream_seconds(m, share),
    )


def stream_seconds(m: Measurement, share: float) -> float:
    """Seconds per prompt token to read the experts a ubatch touches beyond the active
    ones (rows.stream_bytes_of) at `share` of the device's bandwidth
    (speed.expert_stream_seconds_per_token): 0 for dense models and engines outside
    STREAM_ENGINES. Divided over tensor-parallel devices as the product does."""
    if not m.work.is_moe or m.engine not in STREAM_ENGINES:
        return 0.0
    tp = m.parallelism.n_devices if m.parallelism.mode == "tensor" else 1
    seconds = expert_stream_seconds_per_token(
        stream_bytes_of(m), m.prompt_tokens, m.ubatch, m.device.bandwidth_gbps, share
    )
    return seconds / tp


def stream_share(decode_rows: Sequence[Measurement]) -> float:
    """The share of peak bandwidth at which the llama.cpp family reads experts: the
    median over the MoE decode rows (not excluded) of STREAM_ENGINES at batch 1 on one device of
    bytes read per token x tokens/s / bandwidth (1.0 without such rows). Fitted on decode
    rows, so a prefill row's own measurement never sets it."""
    shares = [
        m.work.weight_bytes_per_token * m.measured_tps / (m.device.bandwidth_gbps * 1e9)
        for m in decode_rows
        if m.kind == "decode"
        and not m.excluded
        and m.work.is_moe
        and m.engine in STREAM_ENGINES
        and m.batch == 1
        and m.parallelism.n_devices == 1
        and m.device.bandwidth_gbps > 0
    ]
    return round(statistics.median(shares), 4) if shares else 1.0


def predicted_seconds(row: PrefillRow, mfu: float, c: float, factor: float) -> float:
    """FLOPs x factor / (TFLOPS x mfu) + params x c + the row's expert streaming."""
    return row.flops * factor / (row.tflops * TFLOP * mfu) + row.params * c + row.stream


# fit_group's memo: (no parent c, the exact bits of the parent c and of the rows' _terms)
# -> (mfu, c)
GroupMemo = dict[tuple[bool, bytes], tuple[float, float]]


def _terms(
    rows: Sequence[PrefillRow], family: dict[str, float]
) -> list[tuple[float, float, float, float, float]]:
    """Per row (seconds, params, stream, FLOPs x family factor, TFLOPS x TFLOP): the
    left-hand products of _mfu_for and _loss, computed once per group fit. The formulas
    evaluate them first in the same order (FLOPs x f / (TFLOPS x TFLOP x mfu) is
    (FLOPs x f) / ((TFLOPS x TFLOP) x mfu)), so the results are bit-identical."""
    return [
        (r.seconds, r.params, r.stream, r.flops * family[r.family], r.tflops * TFLOP) for r in rows
    ]


def _mfu_for(terms: Sequence[tuple[float, float, float, float, float]], c: float) -> float | None:
    """Median implied MFU in log space at a given c, FLOPs x f / (TFLOPS x (t - params x c
    - stream)) on _terms, each row's operations in the formula's order; None when c alone
    exceeds a row (its rest t - params x c - stream is <= 0)."""
    rests = [seconds - params * c - stream for seconds, params, stream, _, _ in terms]
    if any(map((0.0).__ge__, rests)):  # some rest <= 0 (NaN is not)
        return None
    log = math.log
    logs = [
        log(work / (rate * rest)) for (_, _, _, work, rate), rest in zip(terms, rests, strict=True)
    ]
    return math.exp(statistics.median(logs))


def _loss(terms: Sequence[tuple[float, float, float, float, float]], mfu: float, c: float) -> float:
    """sum(log(predicted_seconds / measured)^2) on _terms, predicted_seconds' operations
    in its order."""
    log = math.log
    return sum(
        [
            log((work / (rate * mfu) + params * c + stream) / seconds) ** 2
            for seconds, params, stream, work, rate in terms
        ]
    )


def fit_group(
    rows: Sequence[PrefillRow],
    family: dict[str, float],
    parent_c: float | None,
    memo: GroupMemo | None = None,
) -> tuple[float, float]:
    """(mfu, c): c on C_GRID (least log loss) when the group has MIN_ROWS_FOR_C rows or
    no parent, else the parent's c; mfu = _mfu_for at that c.

    The fit depends on nothing but parent_c and the rows' _terms, in order; `memo` keeps
    it by their exact bits (struct-packed, so 0.0 and -0.0 differ), so the hold-out folds
    and power caps that leave a group's terms as they were reuse its fit."""
    terms = _terms(rows, family)
    values = (0.0 if parent_c is None else parent_c, *(v for t in terms for v in t))
    key = (parent_c is None, struct.pack(f"{len(values)}d", *values))
    if memo is not None and key in memo:
        return memo[key]
    grid = C_GRID if parent_c is None or len(rows) >= MIN_ROWS_FOR_C else (parent_c,)
    # t - params x c - stream only falls as c grows on the ascending C_GRID (rounding is
    # monotone) when no params are negative: past the first c that leaves a row no time,
    # every larger c does too, and the loop can stop there.
    monotone = all(params >= 0 for _, params, _, _, _ in terms)
    best: tuple[float, float, float] | None = None
    for c in grid:
        mfu = _mfu_for(terms, c)
        if mfu is None:
            if monotone:
                break
            continue
        loss = _loss(terms, mfu, c)
        if best is None or loss < best[0]:
            best = (loss, mfu, c)
    # without a best, the parent's c is too large for this group: no fixed cost
    fitted = (_mfu_for(terms, 0.0) or 1.0, 0.0) if best is None else (best[1], best[2])
    if memo is not None:
        memo[key] = fitted
    return fitted


def fit_model(
    rows: Sequence[PrefillRow],
    lineage: Callable[[str], tuple[str, ...]],
    memo: GroupMemo | None = None,
) -> PrefillModel:
    """Group fits (parents first, so leaves can inherit c) and the pooled family factors;
    `memo`: fit_group's."""
    family = {"f16": 1.0, "bf16": 1.0, "quantized": 1.0}
    members: dict[str, list[PrefillRow]] = {}
    for r in rows:
        for key in lineage(r.key):
            members.setdefault(key, []).append(r)
    groups: dict[str, tuple[float, float]] = {}
    for _ in range(FAMILY_ITERATIONS + 1):
        groups = _fit_groups(members, family, lineage, memo)
        family = _family_factors(rows, groups, family, lineage)
    return PrefillModel(groups, family)


def _fit_groups(
    members: dict[str, list[PrefillRow]],
    family: dict[str, float],
    lineage: Callable[[str], tuple[str, ...]],
    memo: GroupMemo | None = None,
) -> dict[str, tuple[float, float]]:
    """fit_group of every group with MIN_ROWS `members` (its rows, by key), parents first."""
    groups: dict[str, tuple[float, float]] = {}
    order = sorted(members, key=lambda k: (k != "default", k.count("/") + ("+moe" in k), k))
    for key in order:
        if len(members[key]) < MIN_ROWS:
            continue
        parent = next((groups[k][1] for k in lineage(key)[1:] if k in groups), None)
        groups[key] = fit_group(members[key], family, parent, memo)
    return groups


def owner(
    key: str, groups: dict[str, tuple[float, float]], lineage: Callable[[str], tuple[str, ...]]
) -> str:
    """The most specific fitted group of a leaf key."""
    return next(k for k in lineage(key) if k in groups)


def _family_factors(
    rows: Sequence[PrefillRow],
    groups: dict[str, tuple[float, float]],
    family: dict[str, float],
    lineage: Callable[[str], tuple[str, ...]],
) -> dict[str, float]:
    """Each non-quantized family's factor x exp(median log(measured / predicted time))."""
    out = dict(family)
    for name in ("f16", "bf16"):
        logs = []
        for r in rows:
            if r.family != name:
                continue
            mfu, c = groups[owner(r.key, groups, lineage)]
            logs.append(math.log(r.seconds / predicted_seconds(r, mfu, c, family[name])))
        if logs:
            out[name] = family[name] * math.exp(statistics.median(logs))
    return out


def predict_tps(
    row: PrefillRow, model: PrefillModel, lineage: Callable[[str], tuple[str, ...]]
) -> float:
    mfu, c = model.groups[owner(row.key, model.groups, lineage)]
    return 1.0 / predicted_seconds(row, mfu, c, model.family[row.family])


def fit_with_power(
    measurements: Sequence[Measurement],
    key_of: Callable[[Measurement], str],
    lineage: Callable[[str], tuple[str, ...]],
    share: float,
    memo: GroupMemo | None = None,
) -> tuple[PrefillModel, list[PrefillRow]]:
    """The prefill model at each POWER_GRID cap (prefill_row's per_watt), keeping the one
    whose group fits leave the least log loss sum(log(predicted / measured time)^2) over
    the rows; with its rows. The cap is fitted like the groups, so a hold-out refits it
    without the held-out rows. `memo`: fit_group's, shared by the caps (and by hold-out
    folds when the caller passes the same one)."""
    best: tuple[float, PrefillModel, list[PrefillRow]] | None = None
    for per_watt in POWER_GRID:
        rows = [prefill_row(m, key_of(m), share, per_watt) for m in measurements]
        model = fit_model(rows, lineage, memo)
        model = PrefillModel(model.groups, model.family, share, per_watt)
        loss = sum(math.log(predict_tps(r, model, lineage) * r.seconds) ** 2 for r in rows)
        if best is None or loss < best[0]:
            best = (loss, model, rows)
    assert best is not None
    return best[1], best[2]
