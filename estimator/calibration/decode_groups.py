"""Fit the decode groups (calibration/fit.py's share, overhead, MFU and costs per group),
pools first so leaves inherit, with a memo the hold-outs share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from estimator.calibration.fit import (
    DEFAULT_DECODE_MFU,
    MIN_ROWS,
    DecodeFit,
    DecodeRow,
    GridMemo,
    fit_legacy_extra,
    fit_mfu,
    fit_moe_overhead,
    fit_share_overhead,
)
from estimator.calibration.grouping import group_key, lineage
from estimator.speed import arch_class

# fit_decode's memo: (the group's rows by identity, parent MFU, parent legacy cost) -> fit
Memo = dict[tuple[tuple[int, ...], float, float], DecodeFit]


def _members(items: Sequence[Any], key_of: Any) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for item in items:
        for key in lineage(key_of(item)):
            groups.setdefault(key, []).append(item)
    return groups


def _fit_decode_group(
    rows: Sequence[DecodeRow],
    parent_mfu: float,
    start: DecodeFit | None = None,
    parent_legacy: float = 0.0,
    grid_memo: GridMemo | None = None,
) -> DecodeFit:
    """(share, overhead) on batch-1 rows; moe_overhead_s when the group has >= 3 dense and
    >= 3 MoE batch-1 rows; decode_mfu on batched rows (>= 3), else the parent's;
    legacy_extra_s on all rows of old builds when the group has >= 3 of them and >= 3
    current batch-1 rows (else the parent's, held fixed), then share, overhead and MFU
    again with it. `grid_memo`: fit_share_overhead's."""
    share_overhead = partial(fit_share_overhead, memo=grid_memo)
    single = [r for r in rows if r.measurement.batch == 1]
    batched = [r for r in rows if r.measurement.batch > 1]
    n_legacy = sum(r.measurement.legacy_build for r in rows)
    current = [r for r in single if not r.measurement.legacy_build]
    if len(current) >= MIN_ROWS:  # today's level from today's builds only
        single = current
    n_moe = sum(r.measurement.work.is_moe for r in single)
    n_current = len(current)
    if start is None and n_legacy and len(single) > n_current:
        start = replace(share_overhead(single, parent_mfu), legacy_extra_s=parent_legacy)
        start = share_overhead(single, parent_mfu, start)
    fit = share_overhead(single, parent_mfu, start)
    if n_moe >= 3 and len(single) - n_moe >= 3:
        moe = fit_moe_overhead(single, fit)
        fit = share_overhead(single, parent_mfu, replace(fit, moe_overhead_s=moe))
    if len(batched) >= 3:
        fit = share_overhead(single, fit_mfu(batched, fit), fit)
    if n_legacy >= 3 and n_current >= 3:
        fit = replace(fit, legacy_extra_s=fit_legacy_extra(rows, fit))
        if len(batched) >= 3:
            fit = replace(fit, mfu=fit_mfu(batched, fit))
        fit = share_overhead(single, fit.mfu, fit)
    return fit


def old_class(r: DecodeRow) -> str:
    """The row's old-GPU class (speed.arch_class), "" for current generations."""
    return arch_class(r.measurement.device.architecture)


def fit_decode(
    rows: Sequence[DecodeRow], memo: Memo | None = None, grid_memo: GridMemo | None = None
) -> dict[str, DecodeFit]:
    """Every group with >= MIN_ROWS batch-1 rows and its fit, pools first so leaves can
    inherit their MFU and their pre-CUDA-graphs overhead. Rows of old GPU generations
    (old_class) are left out: their shortfall is fit_arch_factors' to measure. `memo`
    (the hold-outs') keeps each group's fit by its rows (the same objects) and parent
    figures, so a fold that leaves a group's rows as they were reuses its fit; `grid_memo`
    (fit.fit_share_overhead's) keeps each grid search by its exact inputs."""
    groups = _members([r for r in rows if not old_class(r)], lambda r: group_key(r.measurement))
    out: dict[str, DecodeFit] = {}
    for key in sorted(groups, key=lambda k: (k != "default", k.count("/"), k)):
        members = groups[key]
        if sum(r.measurement.batch == 1 for r in members) < MIN_ROWS:
            continue
        parent_fit = next((out[k] for k in lineage(key)[1:] if k in out), None)
        parent = parent_fit.mfu if parent_fit else DEFAULT_DECODE_MFU
        legacy = parent_fit.legacy_extra_s if parent_fit else 0.0
        memo_key = (tuple(id(r) for r in members), parent, legacy)
        fitted = memo.get(memo_key) if memo is not None else None
        if fitted is None:
            fitted = _fit_decode_group(members, parent, parent_legacy=legacy, grid_memo=grid_memo)
            if memo is not None:
                memo[memo_key] = fitted
        out[key] = fitted
    return out
