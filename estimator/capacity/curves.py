"""What the estimator says about one replica (`replica_curve`, kept per request in a small
cache), and reading a curve."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from estimator.api import Request, RequestError, Result, check_request, run_estimate
from estimator.api.schema import ServingTargets
from estimator.capacity.types import DEFAULT_LADDER, MAX_CACHED_PROMPT_SHARE, ReplicaCurve
from estimator.units import Range

# The curves kept in memory (least recently used dropped first), keyed by the request with
# its cost, fine-tuning, recommendation and id sections cleared plus replica_curve's other
# arguments. A cold plan of the portal builds at most 200 curves (MAX_CANDIDATES of
# sizing_site.planner) and its what-ifs 2 more, so 512 keep two whole plans; an entry
# holds its request, whose config.json text is a few KB.
CURVE_CACHE_SIZE = 512


def replica_curve(
    request: Request,
    *,
    sequences: Sequence[int] = DEFAULT_LADDER,
    long_prompt_tokens: int | None = None,
    conservative: bool = False,
    cached_prompt_share: float = 0.0,
) -> ReplicaCurve:
    """Build a replica's curve with `estimator.api.run_estimate`, varying only
    `workload.concurrent_sequences` over the ladder up to the KV limit (which is added as
    the last point). With `long_prompt_tokens`, one more estimate at that prompt (one
    sequence) gives the long case's prefill rate and no-load TTFT. `conservative` plans
    at the low end of the estimator's ranges: each speed's `low`, each TTFT's `high`.
    `cached_prompt_share` (0 to 0.95) of every prompt comes from the engine's prefix cache:
    the serving model leaves it out of each step's prefill (request `serving_targets`), the
    no-load TTFT loses share x prompt / prefill rate, and the prefill rate is counted per
    prompt token, cached ones included (rate / (1 - share)), so that rate x prompt /
    prefill rate is the uncached prefill the planner charges each replica. The KV pool
    still holds the whole prompt. Raises RequestError for a bad request (check_request),
    and for a device without `fp16_tflops` (no TTFT without a prefill rate).

    The same request and arguments return the same curve object from a cache of
    CURVE_CACHE_SIZE curves (`_built_curve`): repeated plans of one setup call the
    estimator once."""
    share = cached_prompt_share
    if not 0 <= share <= MAX_CACHED_PROMPT_SHARE:
        raise RequestError("serving.cached_prompt_share", "must be between 0 and 0.95")
    check_request(request)
    # Only the core figures are read: the optional sections are cleared so that they
    # cost nothing and requests differing only in them share a cache entry.
    request = replace(request, pricing=None, finetune=None, recommend=False, id=None)
    if share:
        targets = request.serving_targets or ServingTargets()
        request = replace(request, serving_targets=replace(targets, cached_prompt_share=share))
    return _built_curve(request, tuple(sequences), long_prompt_tokens, conservative, share)


@lru_cache(maxsize=CURVE_CACHE_SIZE)
def _built_curve(
    request: Request,
    sequences: tuple[int, ...],
    long_prompt_tokens: int | None,
    conservative: bool,
    share: float,
) -> ReplicaCurve:
    """replica_curve's work, for a checked request that already carries `share`: one
    estimate at one sequence (`base`), the points (`_points`), the long case
    (`_long_case`). Frozen, so one object may serve every caller."""
    base = _estimate_at(request, 1)
    if base.ttft_s is None or base.prefill_tokens_per_s is None:
        raise RequestError("device.fp16_tflops", "is required to plan TTFT")
    points, limit = _points(request, base, sequences, conservative)
    long_prefill, long_ttft = _long_case(request, long_prompt_tokens, conservative, share)
    prefill = _speed(base.prefill_tokens_per_s, conservative)
    prompt = request.workload.prompt_tokens if share else 0
    return ReplicaCurve(
        points=points,
        max_sequences=limit,
        prefill_tokens_per_s=prefill / (1 - share),
        ttft_s=_cached_ttft(_time(base.ttft_s, conservative), prompt, prefill, share),
        long_prefill_tokens_per_s=long_prefill,
        long_ttft_s=long_ttft,
        prefill_in_steps=base.serving is not None,
    )


def _speed(value: Range, conservative: bool) -> float:
    """A speed to plan with: the range's low end when conservative, else its estimate."""
    return float(value.low if conservative else value.estimate)


def _time(value: Range, conservative: bool) -> float:
    """A time to plan with: the range's high end when conservative, else its estimate."""
    return float(value.high if conservative else value.estimate)


def _ladder(sequences: Sequence[int], limit: int) -> list[int]:
    """The ladder's sequences from 1 to the KV limit, with 1 and the limit themselves
    (none when nothing fits)."""
    return sorted({n for n in sequences if 1 <= n <= limit} | ({1, limit} if limit else set()))


def _points(
    request: Request, base: Result, sequences: tuple[int, ...], conservative: bool
) -> tuple[tuple[tuple[int, float], ...], int]:
    """The curve's (sequences, per-user tok/s) points and its KV limit (0 if the model does
    not fit). vLLM-like engines (a `serving` section): the batched serving model's
    closed-loop curve, the other users' prefill included in each step, up to the
    sequences the KV pool admits at prompt + output / 2 (kv_admission_sequences). Else
    one estimate per ladder point, up to max_concurrent_sequences."""
    fits = base.fit.verdict != "does_not_fit"
    serving = base.serving  # the estimator's JSON-shaped section: speeds are Ranges
    if serving is not None:
        limit = int(serving["kv_admission_sequences"]) if fits else 0
        wanted = set(_ladder(sequences, limit))
        points = tuple(
            (int(p["users"]), _speed(p["per_user_tokens_per_s"], conservative))
            for p in serving["curve"]
            if int(p["users"]) in wanted
        )
        return points, limit
    limit = base.max_concurrent_sequences if fits else 0
    ladder = _ladder(sequences, limit)
    results = {n: base if n == 1 else _estimate_at(request, n) for n in ladder}
    return tuple((n, _speed(results[n].decode_tokens_per_s, conservative)) for n in ladder), limit


def _long_case(
    request: Request, long_prompt_tokens: int | None, conservative: bool, share: float
) -> tuple[float | None, float | None]:
    """The long prompt's prefill rate (per prompt token, cached ones included) and no-load
    TTFT, from one estimate at that prompt and one sequence; (None, None) without a long
    prompt or a TTFT."""
    if long_prompt_tokens is None:
        return None, None
    workload = replace(request.workload, prompt_tokens=long_prompt_tokens)
    long = _estimate_at(check_request(replace(request, workload=workload)), 1)
    if long.ttft_s is None or long.prefill_tokens_per_s is None:
        return None, None
    prefill = _speed(long.prefill_tokens_per_s, conservative)
    ttft = _cached_ttft(_time(long.ttft_s, conservative), long_prompt_tokens, prefill, share)
    return prefill / (1 - share), ttft


def _cached_ttft(ttft_s: float, prompt_tokens: int, prefill_per_s: float, share: float) -> float:
    """The no-load TTFT with `share` of the prompt from the prefix cache: the cached
    tokens' prefill (share x prompt / prefill rate) taken out."""
    return ttft_s - share * prompt_tokens / prefill_per_s if share else ttft_s


def _estimate_at(request: Request, sequences: int) -> Result:
    """The estimate of `request` with `sequences` concurrent sequences."""
    workload = replace(request.workload, concurrent_sequences=sequences)
    return run_estimate(replace(request, workload=workload))


def per_user_tokens_per_s(curve: ReplicaCurve, sequences: float) -> float:
    """Per-user decode tok/s at `sequences` (1 <= n <= the last point), interpolated
    linearly in the step time 1 / speed: the estimator's step is weights + n x KV reads plus
    n x compute, linear in n (speed.py), so 1 / speed is too between two points."""
    points, steps = curve.points, curve.steps
    if not points or sequences > points[-1][0] or sequences < points[0][0]:
        raise ValueError("sequences outside the curve")
    for i in range(1, len(points)):
        n1 = points[i][0]
        if sequences <= n1:
            n0, step0 = points[i - 1][0], steps[i - 1]
            return 1 / (step0 + (steps[i] - step0) * (sequences - n0) / (n1 - n0))
    return points[-1][1]


def slots_at(curve: ReplicaCurve, tokens_per_s: float) -> int:
    """The most sequences (<= max_sequences) one replica runs with every user at or above
    `tokens_per_s`: the largest integer n with per_user_tokens_per_s(n) >= target, 0 if
    not even one sequence reaches it. Solves the linear step time on the crossing segment."""
    return _slots_and_step(curve, tokens_per_s)[0]


def _slots_and_step(curve: ReplicaCurve, tokens_per_s: float) -> tuple[int, float]:
    """slots_at and the step time at those slots (1 / per-user speed), in one pass."""
    points, steps = curve.points, curve.steps
    target_step = 1 / tokens_per_s
    if not points or steps[0] > target_step:
        return 0, math.inf
    if curve.rising:  # the first step above the target's, by bisection
        i = bisect_right(steps, target_step)
        if i == len(steps):
            return points[-1][0], steps[-1]
    else:
        for i in range(1, len(points)):
            if steps[i] > target_step:
                break
        else:
            return points[-1][0], steps[-1]
    n0, step0 = points[i - 1][0], steps[i - 1]
    slope = (steps[i] - step0) / (points[i][0] - n0)
    extra = int((target_step - step0) / slope + 1e-9)
    return n0 + extra, step0 + slope * extra
