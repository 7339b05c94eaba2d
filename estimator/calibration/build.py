"""Assemble calibration.json: group factors, held-out statistics and the rows used."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from estimator.calibration.decode_groups import Memo, fit_decode, old_class
from estimator.calibration.effects import (
    Effects,
    effects_entry,
    family_ranges,
    fit_effects,
    hardware_holdout,
    multiplier,
    single_stream,
)
from estimator.calibration.fit import (
    BOUND_QUANTILES,
    SHRINK_ROWS,
    DecodeFit,
    DecodeRow,
    GridMemo,
    decode_row,
    error_stats,
    predicted_step,
    shrunk_bounds,
)
from estimator.calibration.grouping import (
    engine_pool,
    group_key,
    lineage,
    prefill_key,
    prefill_lineage,
)
from estimator.calibration.notes import APPROXIMATIONS, FORMULAS, STATISTICS
from estimator.calibration.prefill import (
    GroupMemo,
    PrefillModel,
    PrefillRow,
    fit_with_power,
    predict_tps,
    prefill_row,
    stream_share,
)
from estimator.calibration.prefill import owner as prefill_owner
from estimator.calibration.rows import (
    Measurement,
    load_measurements,
    load_ttft_measurements,
    measured_vendors,
)
from estimator.speed import overhead_scale

_Triples = dict[str, list[tuple[float, float, float, float]]]


def fit_arch_factors(
    rows: Sequence[DecodeRow], fits: dict[str, DecodeFit]
) -> dict[str, dict[str, float]]:
    """Per old-GPU class: exp(median log(measured step / step predicted by the fit of the
    newer GPUs)) over its rows, and "old" = the same over every old row (used for a class
    without rows, e.g. Kepler and Maxwell, which share Pascal's class anyway)."""
    logs: dict[str, list[float]] = {}
    for r in rows:
        cls = old_class(r)
        if cls:
            owner = fits[_owner(group_key(r.measurement), fits)]
            ratio = math.log(r.measured_step / predicted_step(r, owner))
            logs.setdefault(cls, []).append(ratio)
            logs.setdefault("old", []).append(ratio)
    return {
        cls: {"n": len(values), "factor": round(math.exp(statistics.median(values)), 4)}
        for cls, values in sorted(logs.items())
    }


def arch_multiplier(r: DecodeRow, factors: dict[str, dict[str, float]]) -> float:
    """speed.architecture_factor on fitted factors (the class's, else the pooled "old")."""
    cls = old_class(r)
    if not cls:
        return 1.0
    entry = factors.get(cls) or factors.get("old")
    return entry["factor"] if entry else 1.0


def predicted_tps(
    r: DecodeRow, fits: dict[str, DecodeFit], arch: dict[str, dict[str, float]]
) -> float:
    """A decode row's predicted tokens/s: its owner group's step x its architecture factor."""
    owner = fits[_owner(group_key(r.measurement), fits)]
    return 1 / (predicted_step(r, owner) * arch_multiplier(r, arch))


def decode_effects(
    rows: Sequence[DecodeRow], fits: dict[str, DecodeFit], arch: dict[str, dict[str, float]]
) -> Effects:
    """Family and weights-kind corrections (effects.fit_effects) on the batch-1 rows."""
    single = [r for r in rows if r.measurement.batch == 1]
    return fit_effects([(r.measurement, predicted_tps(r, fits, arch)) for r in single])


def prefill_effects(rows: Sequence[PrefillRow], model: PrefillModel) -> Effects:
    """Family and weights-kind corrections (effects.fit_effects) of the prefill rows."""
    return fit_effects([(r.measurement, predict_tps(r, model, prefill_lineage)) for r in rows])


def fit_prefill(rows: Sequence[Measurement], share: float) -> tuple[PrefillModel, list[str]]:
    """The prefill model on all rows, experts streamed at `share` (prefill.stream_share),
    and each row's owning group (calibration/prefill.py)."""
    model, prows = fit_with_power(rows, prefill_key, prefill_lineage, share)
    owners = [prefill_owner(r.key, model.groups, prefill_lineage) for r in prows]
    return model, owners


def source_of(m: Measurement) -> str:
    """The publisher of a row: throughput.csv's source up to the repository owner
    ("github.com/kyuz0", "ggml-org/llama.cpp")."""
    return "/".join(m.source.split(" ")[0].split("/")[:2])


def device_of(m: Measurement) -> str:
    """The device a row was measured on (throughput.csv's device column)."""
    return m.device_name


def model_of(m: Measurement) -> str:
    """The model a row measured (throughput.csv's model column)."""
    return m.model


def holdout_predictions(
    rows: Sequence[DecodeRow],
    prefill_ms: Sequence[Measurement],
    group_of: Callable[[Measurement], str],
    memo: Memo | None = None,
    prefill_memo: GroupMemo | None = None,
    grid_memo: GridMemo | None = None,
) -> tuple[list[float], list[float]]:
    """Grouped K-fold: every decode row's and every prefill row's predicted tokens/s from
    fits on the other groups only (a device, a model, a source held out at a time), in
    the order of `rows` and `prefill_ms`. `memo`: fit_decode's, shared by hold-outs of
    the same rows. `prefill_memo` (prefill.fit_group's) and `grid_memo`
    (fit.fit_share_overhead's) keep results by the exact inputs that fix them, so they
    are always safe to share; a fresh one per call when None."""
    decode = [0.0] * len(rows)
    g_memo: GridMemo = {} if grid_memo is None else grid_memo
    for group in sorted({group_of(r.measurement) for r in rows}):
        train = [r for r in rows if group_of(r.measurement) != group]
        fits = fit_decode(train, memo, g_memo)
        arch = fit_arch_factors(train, fits)
        effects = decode_effects(train, fits, arch)
        for i, r in enumerate(rows):
            if group_of(r.measurement) == group:
                decode[i] = predicted_tps(r, fits, arch) * multiplier(r.measurement, effects)
    prefill = [0.0] * len(prefill_ms)
    p_memo: GroupMemo = {} if prefill_memo is None else prefill_memo
    for group in sorted({group_of(m) for m in prefill_ms}):
        share = stream_share([r.measurement for r in rows if group_of(r.measurement) != group])
        kept = [m for m in prefill_ms if group_of(m) != group]
        model, ptrain = fit_with_power(kept, prefill_key, prefill_lineage, share, p_memo)
        p_effects = prefill_effects(ptrain, model)
        for i, m in enumerate(prefill_ms):
            if group_of(m) == group:
                p = prefill_row(m, prefill_key(m), share, model.tflops_per_watt)
                prefill[i] = predict_tps(p, model, prefill_lineage) * multiplier(m, p_effects)
    return decode, prefill


def grouped_holdout(
    rows: Sequence[DecodeRow],
    prefill_ms: Sequence[Measurement],
    predictions: tuple[list[float], list[float]],
) -> dict[str, dict[str, Any]]:
    """Statistics of one grouped hold-out (holdout_predictions), so repeats of the same
    model on the same device cannot flatter the figure as they do in-sample: per kind n,
    median and p90 of |predicted - measured| / measured (percent), the median signed
    error (bias, percent: positive = predicted too fast) overall, by backend and by
    engine."""
    decode = [(r.measurement, p) for r, p in zip(rows, predictions[0], strict=True)]
    prefill = list(zip(prefill_ms, predictions[1], strict=True))
    return {"decode": _holdout_stats(decode), "prefill": _holdout_stats(prefill)}


_HEADLINE = ("n", "median_abs_pct_err", "p90_abs_pct_err")


def _holdout_stats(predictions: Sequence[tuple[Measurement, float]]) -> dict[str, Any]:
    triples = [(m.measured_tps, p, p, p) for m, p in predictions]
    stats: dict[str, Any] = {k: v for k, v in error_stats(triples).items() if k in _HEADLINE}
    stats["median_signed_pct_err"] = _bias(predictions)
    for name, key in (("bias_by_backend", "backend"), ("bias_by_engine", "engine")):
        split: dict[str, list[tuple[Measurement, float]]] = {}
        for m, p in predictions:
            split.setdefault(getattr(m, key), []).append((m, p))
        stats[name] = {
            k: {"n": len(v), "median_signed_pct_err": _bias(v)} for k, v in sorted(split.items())
        }
    return stats


def ttft_floors(decode: dict[str, DecodeFit], prefill: PrefillModel) -> dict[str, dict[str, Any]]:
    """The fixed part of TTFT of the serving engines, from ttft.csv's single-request rows:
    median over the rows of (measured TTFT - prompt / predicted prefill tokens/s - one
    predicted decode step at the prompt's depth) / overhead_scale(layers), clipped at 0
    (speed.ttft_floor_seconds), for dense ("serving") and MoE ("serving+moe") models apart:
    MoE requests pay more fixed set-up (DeepSeek-R1 on 8 x B200: 153 ms at 610 prompt
    tokens, 166 ms at 4,194, so ~150 ms that does not grow with the prompt). Rows whose
    device has no bandwidth, and rows excluded from the decode fit, are skipped.

    The local engines (llama.cpp, MLX) have no floor: their TTFT is the prompt at the
    prompt-processing rate, e.g. ttft.csv's V100 Ollama row: 2850 tokens / 4336 tokens/s
    (throughput.csv, same run) = 657 ms, the measured TTFT. Their residuals here would be
    the prefill model's error, not a fixed cost, so they are not used."""
    per_pool: dict[str, list[float]] = {}
    for m_prefill, m_step, ttft_s in load_ttft_measurements():
        if m_step.device.bandwidth_gbps <= 0 or not m_prefill.compute_tflops or m_step.excluded:
            continue
        if engine_pool(group_key(m_step)) != "serving":
            continue
        step_s = predicted_step(decode_row(m_step), decode[_owner(group_key(m_step), decode)])
        tps = predict_tps(
            prefill_row(
                m_prefill, prefill_key(m_prefill), prefill.stream_share, prefill.tflops_per_watt
            ),
            prefill,
            prefill_lineage,
        )
        residual = ttft_s - m_prefill.prompt_tokens / tps - step_s
        scale = overhead_scale(m_step.work.n_layers)
        pool = engine_pool(group_key(m_step)) + ("+moe" if m_step.work.is_moe else "")
        per_pool.setdefault(pool, []).append(residual / scale)
    return {
        pool: {"n": len(values), "ttft_floor_s": round(max(0.0, statistics.median(values)), 4)}
        for pool, values in sorted(per_pool.items())
    }


def _in_sample(pairs: Sequence[tuple[float, float]]) -> dict[str, float]:
    """n, median and p90 |predicted - measured| / measured (percent) of in-sample pairs."""
    stats = error_stats([(m, p, p, p) for m, p in pairs])
    return {k: v for k, v in stats.items() if k in _HEADLINE}


def _bias(predictions: Sequence[tuple[Measurement, float]]) -> float:
    """Median of (predicted - measured) / measured, percent."""
    return round(
        statistics.median((p - m.measured_tps) / m.measured_tps * 100 for m, p in predictions), 2
    )


def _owner(key: str, fitted: dict[str, Any]) -> str:
    return next(k for k in lineage(key) if k in fitted)


def _held_out_triples(
    items: Sequence[Any], owners: Sequence[str], ratios: Sequence[float], measured: Any
) -> dict[str, list[tuple[float, float, float, float]]]:
    """(measured, held-out prediction, low, high) per owning group; a row's bounds are
    shrunk_bounds of the owner's other rows and all other rows, so no row sees itself."""
    ratios = list(ratios)
    out: dict[str, list[tuple[float, float, float, float]]] = {}
    for i, (item, owner) in enumerate(zip(items, owners, strict=True)):
        own = [r for j, r in enumerate(ratios) if j != i and owners[j] == owner]
        pooled = ratios[:i] + ratios[i + 1 :]
        low, high = shrunk_bounds(own, pooled)
        value = measured(item)
        predicted = value / ratios[i]
        out.setdefault(owner, []).append((value, predicted, predicted * low, predicted * high))
    return out


def _stored_bounds(
    owner: str, triples: dict[str, list[tuple[float, float, float, float]]]
) -> tuple[float, float]:
    """shrunk_bounds of the owner's held-out ratios against all of them."""
    ratio = {k: [m / p for m, p, _, _ in ts] for k, ts in triples.items()}
    pooled = [r for rs in ratio.values() for r in rs]
    return shrunk_bounds(ratio.get(owner, []), pooled)


def _group_entry(
    key: str,
    decode: dict[str, Any],
    prefill: PrefillModel,
    d_triples: dict[str, Any],
    p_triples: dict[str, Any],
) -> dict[str, Any]:
    """Stored factors of one group; missing parts come from its nearest fitted parent."""
    d_owner = _owner(key.removesuffix("+moe"), decode)
    p_key = key if key.endswith("+moe") else key + "+dense"
    p_owner = prefill_owner(p_key, prefill.groups, prefill_lineage)
    fit: DecodeFit = decode[d_owner]
    d_low, d_high = _stored_bounds(d_owner, d_triples)
    p_low, p_high = _stored_bounds(p_owner, p_triples)
    mfu, per_param = prefill.groups[p_owner]
    llama = key.startswith("llama.cpp") or key == "default"
    return {
        "bandwidth_share": round(fit.share, 4),
        "decode_overhead_s": round(fit.overhead_s, 6),
        "moe_decode_overhead_s": round(fit.moe_overhead_s, 6),
        "legacy_build_extra_s": round(fit.legacy_extra_s, 6),
        "decode_mfu": round(fit.mfu, 4),
        "prefill_mfu": round(mfu, 4),
        "prefill_s_per_param": per_param,
        "prefill_f16_factor": round(prefill.family["f16"], 4) if llama else 1.0,
        "prefill_bf16_factor": round(prefill.family["bf16"], 4) if llama else 1.0,
        "decode_ratio_low": round(d_low, 4),
        "decode_ratio_high": round(d_high, 4),
        "prefill_ratio_low": round(p_low, 4),
        "prefill_ratio_high": round(p_high, 4),
        "decode_fitted_on": d_owner,
        "prefill_fitted_on": p_owner,
    }


def build_calibration() -> dict[str, Any]:
    """Fit everything on throughput.csv; the JSON-ready content of calibration.json."""
    measurements = load_measurements()
    decode_ms, prefill_all, prefill_ms = fitted_rows(measurements)
    rows = [decode_row(m) for m in decode_ms]
    (decode, arch, d_effects), (prefill, p_effects), p_owners = fit_all(rows, prefill_ms)
    by_device, grouped = _holdouts(rows, prefill_ms)
    held_decode = list(zip([r.measurement for r in rows], by_device[0], strict=True))
    held_prefill = list(zip(prefill_ms, by_device[1], strict=True))
    d_triples, p_triples = _device_triples(rows, prefill_ms, decode, p_owners, by_device)
    floors = ttft_floors(decode, prefill)
    keys = _group_keys(decode_ms, prefill_ms)
    return {
        "generated_by": "python -m estimator.calibration",
        "source": "estimator/data/validation/throughput.csv",
        "bound_quantiles": list(BOUND_QUANTILES),
        "bound_shrink_rows": SHRINK_ROWS,
        "statistics": STATISTICS,
        "formulas": dict(FORMULAS),
        "groups": _with_vendors(
            _groups(keys, decode, prefill, d_triples, p_triples, floors), decode_ms + prefill_ms
        ),
        "overall": {
            "decode": error_stats([t for ts in d_triples.values() for t in ts]),
            "prefill": error_stats([t for ts in p_triples.values() for t in ts]),
        },
        # Fitted and checked on the same rows: flatters the model; quoted only beside the
        # grouped hold-outs.
        "in_sample": _in_sample_stats(
            rows,
            prefill_ms,
            in_sample_predictions(
                rows, (decode, arch, d_effects), prefill_ms, (prefill, p_effects)
            ),
        ),
        # The one-user model (local engines, batch 1): whole devices held out, current
        # hardware and older or rare hardware apart (docs/accuracy.md headline).
        "hardware_holdout": hardware_holdout(held_decode, held_prefill),
        # Family / weights-kind / vendor corrections and per-family ranges
        # (speed.corrections).
        "corrections": {"decode": effects_entry(d_effects), "prefill": effects_entry(p_effects)},
        "family_ranges": {
            "decode": family_ranges(
                [(m, m.measured_tps / p) for m, p in single_stream(held_decode, "decode")]
            ),
            "prefill": family_ranges(
                [(m, m.measured_tps / p) for m, p in single_stream(held_prefill, "prefill")]
            ),
        },
        # Kept in its first form; grouped_holdout.by_source has the same figures and more.
        "by_source_holdout": {
            kind: {k: grouped["by_source"][kind][k] for k in _HEADLINE}
            for kind in ("decode", "prefill")
        },
        # The headline figures (docs/estimator-guide.md, docs/accuracy.md): whole devices,
        # models and sources held out ("overall" repeats the whole-device one; "in_sample"
        # flatters).
        "grouped_holdout": grouped,
        "ttft_floors": floors,
        # Old GPU generations (speed.architecture_factor): step-time multipliers.
        "architecture_factors": arch,
        "rows": _row_counts(measurements, decode_ms, prefill_ms, prefill_all),
        "approximations": list(APPROXIMATIONS),
        # speed.expert_stream_seconds_per_token's share, speed.power_capped_tflops' cap
        "prefill_expert_stream_share": prefill.stream_share,
        "prefill_tflops_per_watt": prefill.tflops_per_watt,
        "median_decode_share_all_groups": round(
            statistics.median(f.share for f in decode.values()), 4
        ),
    }


def prefill_rows(ms: Sequence[Measurement], model: PrefillModel) -> list[PrefillRow]:
    """The rows of `ms` at the model's expert stream share and power cap."""
    return [prefill_row(m, prefill_key(m), model.stream_share, model.tflops_per_watt) for m in ms]


def _holdouts(
    rows: Sequence[DecodeRow], prefill_ms: Sequence[Measurement]
) -> tuple[tuple[list[float], list[float]], dict[str, dict[str, dict[str, Any]]]]:
    """The whole-device hold-out's predictions (holdout_predictions) and the statistics
    (grouped_holdout) of the hold-outs by device, by model and by source."""
    memo: Memo = {}
    p_memo: GroupMemo = {}
    g_memo: GridMemo = {}
    predictions = {
        name: holdout_predictions(rows, prefill_ms, group_of, memo, p_memo, g_memo)
        for name, group_of in (
            ("by_device", device_of),
            ("by_model", model_of),
            ("by_source", source_of),
        )
    }
    grouped = {
        name: grouped_holdout(rows, prefill_ms, predicted)
        for name, predicted in predictions.items()
    }
    return predictions["by_device"], grouped


def _device_triples(
    rows: Sequence[DecodeRow],
    prefill_ms: Sequence[Measurement],
    decode: dict[str, DecodeFit],
    p_owners: Sequence[str],
    by_device: tuple[list[float], list[float]],
) -> tuple[_Triples, _Triples]:
    """(decode, prefill) _held_out_triples of the whole-device hold-out: the range of a
    row's group is its whole-device hold-out ratios measured / predicted."""
    held_decode, held_prefill = by_device
    d_owners = [_owner(group_key(r.measurement), decode) for r in rows]
    d_ratios = [r.measurement.measured_tps / p for r, p in zip(rows, held_decode, strict=True)]
    p_ratios = [m.measured_tps / p for m, p in zip(prefill_ms, held_prefill, strict=True)]
    d_triples = _held_out_triples(rows, d_owners, d_ratios, lambda r: r.measurement.measured_tps)
    p_triples = _held_out_triples(prefill_ms, p_owners, p_ratios, lambda m: m.measured_tps)
    return d_triples, p_triples


def _group_keys(decode_ms: Sequence[Measurement], prefill_ms: Sequence[Measurement]) -> list[str]:
    """Every group the rows name, leaves and their parents (lineage, prefill_lineage
    without the "+dense" suffix), sorted."""
    return sorted(
        {k for m in decode_ms for k in lineage(group_key(m))}
        | {k.removesuffix("+dense") for m in prefill_ms for k in prefill_lineage(prefill_key(m))}
    )


def _groups(
    keys: Sequence[str],
    decode: dict[str, DecodeFit],
    prefill: PrefillModel,
    d_triples: _Triples,
    p_triples: _Triples,
    floors: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each group's stored entry (_group_entry) with the TTFT floors of its engine pool
    (ttft_floors) and the held-out error statistics of the rows it owns."""
    groups = {key: _group_entry(key, decode, prefill, d_triples, p_triples) for key in keys}
    for key, entry in groups.items():
        pool = "default" if key == "default" else engine_pool(key)
        entry["ttft_floor_s"] = floors.get(pool, {}).get("ttft_floor_s", 0.0)
        entry["ttft_floor_moe_s"] = floors.get(pool + "+moe", {}).get("ttft_floor_s", 0.0)
    for key, entry in groups.items():
        if key in d_triples:
            entry["decode_stats"] = error_stats(d_triples[key])
        p_key = key if key.endswith("+moe") or key in p_triples else key + "+dense"
        if p_key in p_triples:
            entry["prefill_stats"] = error_stats(p_triples[p_key])
    return groups


def _with_vendors(
    groups: dict[str, dict[str, Any]], measurements: Sequence[Measurement]
) -> dict[str, dict[str, Any]]:
    """`groups` with "measured_vendors" on each group that names a backend: the vendors
    of its own rows (rows.measured_vendors), the hardware whose speeds it backs."""
    vendors = measured_vendors(measurements, group_key)
    for key, entry in groups.items():
        if "/" in key:
            entry["measured_vendors"] = vendors.get(key.removesuffix("+moe"), [])
    return groups


DecodeFits = tuple[dict[str, DecodeFit], dict[str, dict[str, float]], Effects]
PrefillFit = tuple[PrefillModel, Effects]


def fitted_rows(
    measurements: Sequence[Measurement],
) -> tuple[list[Measurement], list[Measurement], list[Measurement]]:
    """(the decode rows the calibration fits: not excluded, with a bandwidth; every prefill
    row not excluded; those of them with a compute rate, which it fits)."""
    decode_ms = [
        m
        for m in measurements
        if m.kind == "decode" and not m.excluded and m.device.bandwidth_gbps > 0
    ]
    prefill_all = [m for m in measurements if m.kind == "prefill" and not m.excluded]
    return decode_ms, prefill_all, [m for m in prefill_all if m.compute_tflops]


def fit_all(
    rows: Sequence[DecodeRow], prefill_ms: Sequence[Measurement]
) -> tuple[DecodeFits, PrefillFit, list[str]]:
    """The fit on every row: decode groups, old-GPU factors and corrections; the prefill
    model and its corrections; and each prefill row's owning group."""
    decode = fit_decode(rows)
    arch = fit_arch_factors(rows, decode)
    prefill, owners = fit_prefill(prefill_ms, stream_share([r.measurement for r in rows]))
    d_effects = decode_effects(rows, decode, arch)
    p_effects = prefill_effects(prefill_rows(prefill_ms, prefill), prefill)
    return (decode, arch, d_effects), (prefill, p_effects), owners


def in_sample_predictions(
    rows: Sequence[DecodeRow],
    decode_fit: DecodeFits,
    prefill_ms: Sequence[Measurement],
    prefill_fit: PrefillFit,
) -> tuple[list[float], list[float]]:
    """Every decode and prefill row's tokens/s by the fit on all rows (group fit x
    corrections), in the order of `rows` and `prefill_ms`."""
    decode, arch, d_effects = decode_fit
    prefill, p_effects = prefill_fit
    return (
        [predicted_tps(r, decode, arch) * multiplier(r.measurement, d_effects) for r in rows],
        [
            predict_tps(p, prefill, prefill_lineage) * multiplier(p.measurement, p_effects)
            for p in prefill_rows(prefill_ms, prefill)
        ],
    )


def _in_sample_stats(
    rows: Sequence[DecodeRow],
    prefill_ms: Sequence[Measurement],
    predictions: tuple[list[float], list[float]],
) -> dict[str, dict[str, float]]:
    """_in_sample statistics of decode and prefill (in_sample_predictions)."""
    decode, prefill = predictions
    return {
        "decode": _in_sample(
            [(r.measurement.measured_tps, p) for r, p in zip(rows, decode, strict=True)]
        ),
        "prefill": _in_sample(
            [(m.measured_tps, p) for m, p in zip(prefill_ms, prefill, strict=True)]
        ),
    }


def _row_counts(
    measurements: Sequence[Measurement],
    decode_ms: Sequence[Measurement],
    prefill_ms: Sequence[Measurement],
    prefill_all: Sequence[Measurement],
) -> dict[str, Any]:
    """How many rows throughput.csv has and each fit used, and why rows were excluded."""
    return {
        "total": len(measurements),
        "decode_used": len(decode_ms),
        "prefill_used": len(prefill_ms),
        "prefill_without_tflops": len(prefill_all) - len(prefill_ms),
        "excluded": [{"row": m.row, "reason": m.excluded} for m in measurements if m.excluded],
    }
