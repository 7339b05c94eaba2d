"""What the estimator says about one replica (`replica_curve`), and reading a curve."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from estimator.api import RequestError, estimate
from estimator.api.parse import parse_request
from estimator.capacity.types import DEFAULT_LADDER, MAX_CACHED_PROMPT_SHARE, ReplicaCurve


def replica_curve(
    request: Mapping[str, Any],
    *,
    sequences: Sequence[int] = DEFAULT_LADDER,
    long_prompt_tokens: int | None = None,
    conservative: bool = False,
    cached_prompt_share: float = 0.0,
) -> ReplicaCurve:
    """Build a replica's curve with `estimator.api.estimate`, varying only
    `workload.concurrent_sequences` over the ladder up to the KV limit (which is added as
    the last point). With `long_prompt_tokens`, one more estimate at that prompt (one
    sequence) gives the long case's prefill rate and no-load TTFT. `conservative` plans
    at the low end of the estimator's ranges: each speed's `low`, each TTFT's `high`.
    `cached_prompt_share` (0 to 0.95) of every prompt comes from the engine's prefix cache:
    the serving model leaves it out of each step's prefill (request "serving"), the no-load
    TTFT loses share x prompt / prefill rate, and the prefill rate is counted per prompt
    token, cached ones included (rate / (1 - share)), so that rate x prompt / prefill rate
    is the uncached prefill the planner charges each replica. The KV pool still holds the
    whole prompt. Raises RequestError for a bad request, and for a device without `fp16_tflops` (no
    TTFT without a prefill rate)."""
    speed_key, time_key = ("low", "high") if conservative else ("estimate", "estimate")
    share = cached_prompt_share
    if not 0 <= share <= MAX_CACHED_PROMPT_SHARE:
        raise RequestError("serving.cached_prompt_share", "must be between 0 and 0.95")
    if share:
        request = {
            **request,
            "serving": {**request.get("serving", {}), "cached_prompt_share": share},
        }
    base = _estimate_at(request, 1)
    if base["ttft_s"] is None:
        raise RequestError("device.fp16_tflops", "is required to plan TTFT")
    fits = base["fit"]["verdict"] != "does_not_fit"
    serving = base.get("serving")
    if serving is not None:
        # vLLM-like engines: the batched serving model's closed-loop curve, prefill of the
        # other users' prompts included in each step, up to the sequences the KV pool
        # admits at prompt + output / 2 (serving.kv_admission_sequences)
        limit = int(serving["kv_admission_sequences"]) if fits else 0
        wanted = {n for n in sequences if 1 <= n <= limit} | ({1, limit} if limit else set())
        points = tuple(
            (int(p["users"]), float(p["per_user_tokens_per_s"][speed_key]))
            for p in serving["curve"]
            if int(p["users"]) in wanted
        )
    else:
        limit = int(base["max_concurrent_sequences"]) if fits else 0
        ladder = sorted(
            {n for n in sequences if 1 <= n <= limit} | ({1, limit} if limit else set())
        )
        results = {n: base if n == 1 else _estimate_at(request, n) for n in ladder}
        points = tuple((n, float(results[n]["decode_tokens_per_s"][speed_key])) for n in ladder)
    long_prefill = long_ttft = None
    if long_prompt_tokens is not None:
        workload = {**request.get("workload", {}), "prompt_tokens": long_prompt_tokens}
        long = _estimate_at({**request, "workload": workload}, 1)
        if long["ttft_s"] is not None:
            long_prefill = float(long["prefill_tokens_per_s"][speed_key])
            long_ttft = _cached_ttft(float(long["ttft_s"][time_key]), long_prompt_tokens,
                                     long_prefill, share)  # fmt: skip
            long_prefill /= 1 - share
    prefill = float(base["prefill_tokens_per_s"][speed_key])
    prompt = parse_request(request).workload.prompt_tokens if share else 0
    return ReplicaCurve(
        points=points,
        max_sequences=limit,
        prefill_tokens_per_s=prefill / (1 - share),
        ttft_s=_cached_ttft(float(base["ttft_s"][time_key]), prompt, prefill, share),
        long_prefill_tokens_per_s=long_prefill,
        long_ttft_s=long_ttft,
        prefill_in_steps=serving is not None,
    )


def _cached_ttft(ttft_s: float, prompt_tokens: int, prefill_per_s: float, share: float) -> float:
    """The no-load TTFT with `share` of the prompt from the prefix cache: the cached
    tokens' prefill (share x prompt / prefill rate) taken out."""
    return ttft_s - share * prompt_tokens / prefill_per_s if share else ttft_s


def _estimate_at(request: Mapping[str, Any], sequences: int) -> dict[str, Any]:
    workload = {**request.get("workload", {}), "concurrent_sequences": sequences}
    return estimate({**request, "workload": workload})


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
