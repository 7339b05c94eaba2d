"""Sizing one candidate: the fewest serving replicas that meet the service level, or the
reason it cannot (a NearMiss); the long case's mix; bad input."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from estimator.api import RequestError
from estimator.capacity.curves import _slots_and_step, slots_at
from estimator.capacity.queue import _ErlangTables, _round_up, wait_quantile_s
from estimator.capacity.types import (
    MAX_REPLICAS,
    Candidate,
    Load,
    NearMiss,
    ReplicaCurve,
    ServiceLevel,
)


def _validate(load: Load, service: ServiceLevel, candidates: Sequence[Candidate]) -> None:
    if (load.users is None) == (load.requests_per_minute is None):
        raise RequestError("load.users", "give users or requests_per_minute, not both")
    if load.users is not None and load.users <= 0:
        raise RequestError("load.users", "must be at least 1")
    if load.requests_per_minute is not None and not load.requests_per_minute > 0:
        raise RequestError("load.requests_per_minute", "must be positive")
    if not load.think_s >= 0:
        raise RequestError("load.think_s", "must not be negative")
    for name in ("prompt_tokens", "output_tokens"):
        if getattr(load, name) < 1:
            raise RequestError(f"load.{name}", "must be at least 1")
    if not 0 <= load.long_share <= 1:
        raise RequestError("load.long_share", "must be between 0 and 1")
    if load.long_share > 0 and load.long_prompt_tokens is None:
        raise RequestError("load.long_prompt_tokens", "is required for a long share")
    for name in ("long_prompt_tokens", "long_output_tokens"):
        value = getattr(load, name)
        if value is not None and value < 1:
            raise RequestError(f"load.{name}", "must be at least 1")
    if not (service.ttft_p95_s > 0 and math.isfinite(service.ttft_p95_s)):
        raise RequestError("service.ttft_p95_s", "must be a positive number of seconds")
    if not (service.tokens_per_s_per_user > 0 and math.isfinite(service.tokens_per_s_per_user)):
        raise RequestError("service.tokens_per_s_per_user", "must be positive")
    tpot = service.tpot_p95_ms
    if tpot is not None and not (tpot > 0 and math.isfinite(tpot)):
        raise RequestError("service.tpot_p95_ms", "must be a positive number of milliseconds")
    if service.spare_replicas < 0:
        raise RequestError("service.spare_replicas", "must not be negative")
    if not candidates:
        raise RequestError("candidates", "give at least one candidate")
    for i, candidate in enumerate(candidates):
        if candidate.tensor_parallel < 1:
            raise RequestError(f"candidates[{i}].tensor_parallel", "must be at least 1")
        if candidate.cards_available is not None and candidate.cards_available < 0:
            raise RequestError(f"candidates[{i}].cards_available", "must not be negative")


class _Sizing(NamedTuple):  # a tuple, not a frozen dataclass: built for every candidate
    serving: int
    slots: int
    arrival_rate_per_s: float
    service_s: float
    offered: float
    wait_probability: float
    wait_p50_s: float
    wait_p95_s: float
    speed: float
    prefill_busy_share: float


def _miss(
    candidate: Candidate,
    name: str,
    required: float,
    achievable: float,
    fixes: tuple[tuple[str, float], ...] = (),
) -> NearMiss:
    gap = abs(required / achievable - 1) if achievable > 0 else math.inf
    return NearMiss(
        label=candidate.label,
        engine=candidate.engine,
        quant=candidate.quant,
        tensor_parallel=candidate.tensor_parallel,
        field=name,
        required=required,
        achievable=achievable,
        shortfall=gap,
        fixes=fixes,
    )


def _speed_miss(candidate: Candidate, service: ServiceLevel) -> NearMiss:
    """No slot reaches the speed target: the miss names the stricter of tokens/s per user
    and the TPOT bound, with what one sequence alone gets."""
    target = service.floor_tokens_per_s
    best = candidate.curve.points[0][1]
    if target > service.tokens_per_s_per_user:  # the TPOT bound is the stricter
        fix = (("service.tpot_p95_ms", 1000.0 / best),)
        return _miss(candidate, "service.tpot_p95_ms", 1000.0 / target, 1000.0 / best, fix)
    fix = (("service.tokens_per_s_per_user", best),)
    return _miss(candidate, "service.tokens_per_s_per_user", target, best, fix)


def _size(
    candidate: Candidate, load: Load, service: ServiceLevel, erlang: _ErlangTables
) -> _Sizing | NearMiss:
    """The fewest serving replicas R with TTFT p95 = no-load TTFT + wait p95 <= the target
    and, prefill's share of the time taken out, every user at or above the target speed;
    closed loop with think_s 0: slots >= users. Or the reason it cannot (a NearMiss)."""
    curve = candidate.curve
    target = service.floor_tokens_per_s
    if curve.max_sequences == 0 or not curve.points:
        return _miss(candidate, "fit", 1, 0)
    slots = slots_at(curve, target)
    if slots == 0:
        return _speed_miss(candidate, service)
    mix = _mix(curve, load)
    budget_s = service.ttft_p95_s - mix.worst_ttft_s
    if budget_s < 0:
        fix = (("service.ttft_p95_s", mix.worst_ttft_s),)
        return _miss(candidate, "service.ttft_p95_s", service.ttft_p95_s, mix.worst_ttft_s, fix)
    rate = _arrival_rate_per_s(load, mix.ttft_s + mix.output_tokens / target)
    prefill_s = _prefill_s(rate, load, mix, curve)
    first, offered_min = _fewest_replicas(
        curve, target, rate, mix.ttft_s, mix.output_tokens, prefill_s, slots
    )
    last = MAX_REPLICAS
    if candidate.cards_available is not None:
        last = _allowed_replicas(candidate, service)

    def meets(serving: int) -> _Sizing | None:
        share = prefill_s / serving
        slots, step_s = _slots_and_step(curve, target / (1 - share))
        if serving * slots <= offered_min:
            return None  # unstable: the quick test before the full evaluation
        own_rate = rate
        if load.users is not None:
            # The arrival rate comes from the plan's own service time, not the target's:
            # users served faster come back sooner (users / (S + think)). The prefill share
            # stays at the target's rate, a lower bound; for vLLM-like curves it is 0.
            own_rate = _arrival_rate_per_s(
                load, mix.ttft_s + mix.output_tokens * step_s / (1 - share)
            )
        sized = _at_replicas(mix, load, own_rate, serving, share, slots, step_s, erlang)
        return sized if sized is not None and sized.wait_p95_s <= budget_s else None

    # More replicas never hurt (less prefill per replica, more slots, more servers), so the
    # fewest that meet the level are found by galloping up from the lower bound, then
    # bisecting: O(log R) evaluations instead of R.
    found = meets(first) if first <= last else None
    if found is not None:
        return found
    failing, step = first, 1
    while found is None and failing < last:
        probe = min(failing + step, last)
        found = meets(probe)
        if found is None:
            failing, step = probe, step * 2
    if found is None:
        return _replica_miss(candidate, load, service, rate, erlang, mix)
    while found.serving - failing > 1:
        middle = (failing + found.serving) // 2
        better = meets(middle)
        if better is None:
            failing = middle
        else:
            found = better
    return found


def _fewest_replicas(
    curve: ReplicaCurve,
    target: float,
    rate: float,
    mean_ttft_s: float,
    mean_output_tokens: float,
    prefill_s: float,
    slots: int,
) -> tuple[int, float]:
    """A lower bound on the serving replicas R and a_min, the least offered load. The speed
    at the chosen slots stays below target x (1 + the largest relative growth of the step
    per added sequence), or is the KV-limited last point's: a bound on S, so a_min = rate x
    (mean TTFT + mean output / that speed). Stability needs R x slots > a_min (`slots`: at
    most the slots of any replica count); the prefill share p = prefill_s / R must stay
    below 1 - target / one sequence's speed (or no slot reaches the target). No max() calls:
    this runs for every candidate (`_size`, the pruned planner's first pass)."""
    points = curve.points
    fastest = target * (1 + curve.step_growth)
    if points[-1][1] > fastest:
        fastest = points[-1][1]
    offered_min = rate * (mean_ttft_s + mean_output_tokens / fastest)
    share_max = 1 - target / points[0][1]
    if share_max <= 0:
        share_max = 1e-12  # exactly at the target: any prefill share is too much
    first = int(offered_min / slots) + 1
    by_prefill = int(prefill_s / share_max) + 1
    return (by_prefill if by_prefill > first else first), offered_min


class _Mix(NamedTuple):
    """One candidate's request mix: the mean no-load TTFT and output over the typical and
    long cases, a long request's prefill seconds on one replica and its no-load TTFT (the
    typical's without a long case), and the larger of the two no-load TTFTs."""

    ttft_s: float
    output_tokens: float
    long_prefill_s: float
    long_ttft_s: float
    worst_ttft_s: float


def _mix(curve: ReplicaCurve, load: Load) -> _Mix:
    """The typical case alone (long_share 0) keeps the typical figures exactly; else
    mean TTFT = (1 - q) ttft + q long_ttft and mean output = (1 - q) out + q long_out."""
    q = load.long_share
    if q == 0 or load.long_prompt_tokens is None:
        return _Mix(curve.ttft_s, load.output_tokens, 0.0, curve.ttft_s, curve.ttft_s)
    long_prompt = load.long_prompt_tokens
    long_output = load.long_output_tokens or load.output_tokens
    long_prefill_rate = curve.long_prefill_tokens_per_s or curve.prefill_tokens_per_s
    long_ttft = curve.long_ttft_s
    if long_ttft is None:
        long_ttft = curve.ttft_s + (long_prompt - load.prompt_tokens) / curve.prefill_tokens_per_s
    return _Mix(
        ttft_s=(1 - q) * curve.ttft_s + q * long_ttft,
        output_tokens=(1 - q) * load.output_tokens + q * long_output,
        long_prefill_s=long_prompt / long_prefill_rate,
        long_ttft_s=long_ttft,
        worst_ttft_s=max(curve.ttft_s, long_ttft),
    )


def _prefill_s(rate: float, load: Load, mix: _Mix, curve: ReplicaCurve) -> float:
    """Replica-seconds of prefill a second: rate x prompt / prefill rate; with a long case
    rate x ((1 - q) prompt / prefill rate + q long prompt / long prefill rate). 0 when the
    curve's steps already carry the prefill (ReplicaCurve.prefill_in_steps)."""
    if curve.prefill_in_steps:
        return 0.0
    if load.long_share == 0 or load.long_prompt_tokens is None:
        return rate * load.prompt_tokens / curve.prefill_tokens_per_s
    q = load.long_share
    return rate * (
        (1 - q) * load.prompt_tokens / curve.prefill_tokens_per_s + q * mix.long_prefill_s
    )


def _arrival_rate_per_s(load: Load, service_s: float) -> float:
    """Open loop: requests_per_minute / 60. Closed loop: users / (S + think_s) (Little's law
    over one user's cycle, the wait left out: an upper bound on the rate); `_size` starts
    with S at the target speed, the slowest the service level allows (a lower bound for the
    pruning), and then iterates with the plan's own S; think_s 0: users / S, and every user
    then needs a slot of their own."""
    if load.users is None:
        return (load.requests_per_minute or 0.0) / 60
    return load.users / (service_s + load.think_s)


def _at_replicas(
    mix: _Mix,
    load: Load,
    rate: float,
    serving: int,
    share: float,
    slots: int,
    step_s: float,
    erlang: _ErlangTables,
) -> _Sizing | None:
    """One replica count R. The caller gives the prefill busy share p = rate x prompt /
    (R x prefill rate) and the slots: the decode runs the rest of the time, so a user needs
    target / (1 - p) while decoding, slots = slots_at(that) with its step time, p < 1 and
    slots >= 1. Then
    speed = per-user speed at those slots x (1 - p); service time S = no-load TTFT +
    output / speed; a = rate x S over c = R x slots servers (M/M/c). None when it cannot
    work (a >= c, or a closed loop without think time and fewer slots than users).

    Closed loop: `rate` is users / (S + think_s) with the plan's own S (the fixed point of
    `_size`). M/M/c at that rate never waits less than the exact finite-source queue
    M/M/c//N with the same S (queueing.finite_source_queue: in every one of 12,660 random
    stable cases both its P(wait) and its p95 wait were at least the exact ones; a
    Hypothesis property in tests/estimator/test_queueing.py keeps checking it), so a plan
    that meets the level here meets it in the exact queue too."""
    speed = (1 - share) / step_s
    service_s = mix.ttft_s + mix.output_tokens / speed
    offered = _round_up(rate * service_s)
    servers = serving * slots
    if load.users is not None and servers >= load.users:  # nobody ever waits for a slot
        return _Sizing(serving, slots, rate, service_s, offered, 0, 0, 0, speed, share)
    if offered >= servers or (load.users is not None and load.think_s == 0):
        return None
    wait = erlang.erlang_c(servers, offered)
    p50 = p95 = 0.0
    if wait > 0.05:  # else at least 95 % find a free slot: no wait at p95 or p50
        p50 = wait_quantile_s(
            quantile=0.5, wait_probability=wait, servers=servers, offered_load=offered,
            service_s=service_s,
        )  # fmt: skip
        p95 = wait_quantile_s(
            quantile=0.95, wait_probability=wait, servers=servers, offered_load=offered,
            service_s=service_s,
        )  # fmt: skip
    return _Sizing(serving, slots, rate, service_s, offered, wait, p50, p95, speed, share)


def _allowed_replicas(candidate: Candidate, service: ServiceLevel) -> int:
    if candidate.cards_available is None:
        return MAX_REPLICAS
    return candidate.cards_available // candidate.tensor_parallel - service.spare_replicas


def _replica_miss(
    candidate: Candidate,
    load: Load,
    service: ServiceLevel,
    rate: float,
    erlang: _ErlangTables,
    mix: _Mix,
) -> NearMiss:
    """Past the inventory: the cards that would do (searched without the limit) and, where
    the inventory can run the load at all, the TTFT p95 it reaches. Past MAX_REPLICAS: a
    `replicas` miss."""
    if candidate.cards_available is None:
        return _miss(candidate, "replicas", MAX_REPLICAS + 1, MAX_REPLICAS)
    unlimited = replace(candidate, cards_available=None)
    sized = _size(unlimited, load, service, erlang)
    if not isinstance(sized, _Sizing):
        return sized
    needed = (sized.serving + service.spare_replicas) * candidate.tensor_parallel
    fixes: list[tuple[str, float]] = [("cards_available", needed)]
    allowed = _allowed_replicas(candidate, service)
    share = _prefill_s(rate, load, mix, candidate.curve) / max(allowed, 1)
    target = service.floor_tokens_per_s / (1 - share) if share < 1 else math.inf
    slots, step_s = _slots_and_step(candidate.curve, target)
    if allowed > 0 and slots > 0:
        reached = _at_replicas(mix, load, rate, allowed, share, slots, step_s, erlang)
        if reached is not None:
            fixes.append(("service.ttft_p95_s", mix.worst_ttft_s + reached.wait_p95_s))
    return _miss(candidate, "cards_available", needed, candidate.cards_available, tuple(fixes))
