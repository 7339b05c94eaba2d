"""The serving fit's grid losses (calibration.serving._coordinate_search) from operands
precomputed per row, bit-identical to evaluating its loss at every grid value.

The coordinate search scores one factor's grid values with the others held. A step
(estimator.serving._step_parts) is

    bandwidth = bandwidth_bytes_per_s x bandwidth_share x compute_factor
    step      = ((max(weight_bytes / bandwidth, gemm_s) + attention_s) + comm_s) + overhead_s
    gemm_s    = gemm_flops / (gemm_peak_flops x base share x compute_factor)
    attention_s = kv_bytes / bandwidth + attention_flops / (bf16_peak_flops x compute_share
                  x compute_factor)
    overhead_s  = (step_overhead_s [+ moe_step_overhead_s]) x layer_scale
                  + sequence_overhead_s x batch

and a row's loss is its Huber loss on log(measured / predicted), the prediction from the
cycle's heavy and light steps (estimator.serving._cycle_times). For each factor the parts
of the step that do not depend on it are computed once per step, with the same operands
and in the same order of operations as _step_parts (Python's a + b + c is (a + b) + c, so
only a left prefix or a whole operand is precomputed); the grid value then enters as it
does there. The losses, and so the values the search picks, are bit-identical to
evaluating _row_loss on the replaced factors. Rows without a fixed cycle (open loop:
their batch follows from the factors) and rows the factor does not enter (the MoE terms
on dense models) are scored by `row_loss` itself.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from estimator.calibration.serving_rows import ServingRow
from estimator.serving import ServingFactors, StepWork

MOE_ONLY = ("moe_step_overhead_s", "moe_compute_share")
RowLoss = Callable[[ServingRow, ServingFactors], float]
Ops = tuple[Any, ...]  # _operands: floats, and None for a gemm_s that depends on the factor
# a row's cycle: heavy and light step positions, k, n - k, s, output - 1, whether the
# metric is TPOT, batch x output, measured, weight
Tail = tuple[int, int, int, int, int, int, bool, int, float, float]


@dataclass
class FitMemo:
    """What the fits of one build() share, its rows all from one load_rows (so a row's
    index tells it apart): `searches`, coordinate searches by search_key (a hold-out fold
    that leaves a search's rows and start as they were gets the same result, computed
    once); `classed`, calibration.serving.with_class copies by (row index, exact bits of
    the class factor)."""

    searches: dict[tuple[object, ...], ServingFactors] = field(default_factory=dict)
    classed: dict[tuple[int, bytes], ServingRow] = field(default_factory=dict)


def search_key(
    rows: Sequence[ServingRow], start: ServingFactors, rounds: int
) -> tuple[object, ...]:
    """The rows' indices, the rounds and every field of `start` (floats by their exact
    bits, struct-packed, so 0.0 and -0.0 differ): all a coordinate search depends on."""
    key: list[object] = [struct.pack(f"{len(rows)}q", *(r.index for r in rows)), rounds]
    for f in fields(start):
        value = getattr(start, f.name)
        key.append(struct.pack("d", value) if isinstance(value, float) else value)
    return tuple(key)


def _operands(sw: StepWork, fac: ServingFactors, name: str) -> Ops:
    """The parts of sw's step under `fac` that do not depend on factor `name`, each
    computed as _step_parts computes it (module docstring)."""
    cf = sw.compute_factor
    bandwidth = sw.bandwidth_bytes_per_s * fac.bandwidth_share * cf
    weights_s = sw.weight_bytes / bandwidth
    moe_share = bool(sw.is_moe and fac.moe_compute_share)
    base = fac.moe_compute_share if sw.is_moe and fac.moe_compute_share else fac.compute_share
    gemm_s = sw.gemm_flops / (sw.gemm_peak_flops * base * cf)
    kv_s = sw.kv_bytes / bandwidth
    prefill_s = sw.attention_flops / (sw.bf16_peak_flops * fac.compute_share * cf)
    moe_fixed = fac.moe_step_overhead_s if sw.is_moe else 0.0
    fixed = fac.step_overhead_s + moe_fixed
    per_seq = fac.sequence_overhead_s * sw.batch
    overhead_s = fixed * sw.layer_scale + per_seq
    before_overhead = (max(weights_s, gemm_s) + (kv_s + prefill_s)) + sw.comm_s
    if name == "bandwidth_share":
        bw_ops = (sw.bandwidth_bytes_per_s, cf, sw.weight_bytes, gemm_s, sw.kv_bytes)
        return (*bw_ops, prefill_s, sw.comm_s, overhead_s)
    if name == "compute_share":
        fixed_gemm = gemm_s if moe_share else None
        cs_ops = (weights_s, sw.gemm_flops, sw.gemm_peak_flops, cf, fixed_gemm, kv_s)
        return (*cs_ops, sw.attention_flops, sw.bf16_peak_flops, sw.comm_s, overhead_s)
    if name == "step_overhead_s":
        return (before_overhead, moe_fixed, sw.layer_scale, per_seq)
    if name == "moe_step_overhead_s":
        return (before_overhead, fac.step_overhead_s, sw.layer_scale, per_seq)
    if name == "sequence_overhead_s":
        return (before_overhead, fixed * sw.layer_scale, sw.batch)
    if name == "moe_compute_share":
        mc_ops = (weights_s, sw.gemm_flops, sw.gemm_peak_flops, cf, fac.compute_share)
        return (*mc_ops, kv_s + prefill_s, sw.comm_s, overhead_s)
    raise ValueError(f"no grid factor {name}")


def _steps(name: str, ops: Sequence[Ops], v: float) -> list[float]:
    """Each step's seconds with factor `name` at `v`, from its _operands (the same
    operations in the same order as _step_parts)."""
    if name == "bandwidth_share":
        out = []
        for bbps, cf, wb, g, kv, pf, comm, ov in ops:
            bw = bbps * v * cf
            out.append(((max(wb / bw, g) + (kv / bw + pf)) + comm) + ov)
        return out
    if name == "compute_share":
        out = []
        for w, gf, gp, cf, fg, kv, af, bp, comm, ov in ops:
            g = fg if fg is not None else gf / (gp * v * cf)
            out.append(((max(w, g) + (kv + af / (bp * v * cf))) + comm) + ov)
        return out
    if name == "step_overhead_s":
        return [p + ((v + m) * ls + sb) for p, m, ls, sb in ops]
    if name == "moe_step_overhead_s":
        return [p + ((so + v) * ls + sb) for p, so, ls, sb in ops]
    if name == "sequence_overhead_s":
        return [p + (f + v * b) for p, f, b in ops]
    out = []  # moe_compute_share: MoE steps only (the others are scored by row_loss)
    base = v if v else None
    for w, gf, gp, cf, cs, att, comm, ov in ops:
        g = gf / (gp * (base or cs) * cf)
        out.append(((max(w, g) + att) + comm) + ov)
    return out


def _tail_losses(tails: Sequence[Tail], steps: Sequence[float]) -> list[float]:
    """Each row's _row_loss from its heavy and light step seconds (serving._cycle_times,
    calibration.serving.predicted): cycle = k x heavy + (n - k) x light, TPOT =
    (cycle - s x heavy) / (output - 1) (heavy for one output token), the prediction
    1 / TPOT or batch x output / cycle, and weight x Huber(log(measured / prediction))."""
    log = math.log
    out = []
    for ih, il, k, nk, s, o1, is_tpot, bo, measured, weight in tails:
        heavy, light = steps[ih], steps[il]
        cycle = k * heavy + nk * light
        tpot = (cycle - s * heavy) / o1 if o1 > 0 else heavy
        pred = 1.0 / tpot if is_tpot else bo / cycle
        err = log(measured / pred)
        out.append(weight * (err * err if abs(err) < 0.5 else abs(err) - 0.25))
    return out


def grid_losses(
    rows: Sequence[ServingRow],
    factors: ServingFactors,
    name: str,
    values: Sequence[float],
    row_loss: RowLoss,
) -> list[float]:
    """sum(row_loss(row, factors with `name` = v) for row in rows) for each v of `values`,
    bit for bit, the closed-loop rows the factor enters evaluated from _operands."""
    ops: list[Ops] = []
    slot: dict[int, int] = {}
    tails: list[Tail] = []
    kernel_pos: list[int] = []
    template: list[float] = [0.0] * len(rows)
    own: list[int] = []  # rows row_loss scores at every value
    for pos, row in enumerate(rows):
        cw = row.cycle
        if cw is None:
            own.append(pos)
            continue
        if name in MOE_ONLY and not (cw.heavy.is_moe and cw.light.is_moe):
            if cw.heavy.is_moe or cw.light.is_moe:
                own.append(pos)
            else:  # the factor does not enter the row's loss
                template[pos] = row_loss(row, factors)
            continue
        for sw in (cw.heavy, cw.light):
            if id(sw) not in slot:
                slot[id(sw)] = len(ops)
                ops.append(_operands(sw, factors, name))
        is_tpot = row.metric == "tpot"
        nk, o1 = cw.steps - cw.heavy_steps, cw.output_tokens - 1
        ends = (slot[id(cw.heavy)], slot[id(cw.light)], cw.heavy_steps, nk, cw.prefill_steps)
        tails.append((*ends, o1, is_tpot, cw.batch * cw.output_tokens, row.measured, row.weight))
        kernel_pos.append(pos)
    whole = len(kernel_pos) == len(rows)
    out = []
    for v in values:
        losses = _tail_losses(tails, _steps(name, ops, v))
        if whole:
            out.append(sum(losses))
            continue
        terms = template[:]
        for pos, loss in zip(kernel_pos, losses, strict=True):
            terms[pos] = loss
        if own:
            changed: ServingFactors = replace(factors, **{name: v})  # type: ignore[arg-type]
            for pos in own:
                terms[pos] = row_loss(rows[pos], changed)
        out.append(sum(terms))
    return out
