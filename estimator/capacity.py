"""Capacity planning: how many replicas of which cards serve a load within a service level.

Two halves (docs/capacity.md):

- from the estimator, per replica (a tensor-parallel group of cards running one engine and
  quant): per-user decode tok/s as the number of concurrent sequences grows, the KV limit on
  sequences at the context, the prefill rate and the no-load TTFT (`replica_curve`);
- from queueing theory, over replicas: requests as an M/M/c queue whose c servers are the
  sequence slots of all replicas (Erlang C), giving the wait for a free slot and so TTFT
  quantiles under load (`erlang_c`, `wait_quantile_s`).

`plan` joins them: for each candidate the fewest replicas that meet TTFT p95 and the per-user
speed, then cost, then the rankings. Per candidate the work is arithmetic on a precomputed
curve, and candidates whose bounds keep them out of every ranking are not sized at all
(`_plan_pruned`; benchmarks/capacity_bench.py).
Times in seconds, speeds in tokens per second, money in USD, a month is 730 h (cost.py).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from estimator.api import RequestError, estimate
from estimator.api.parse import parse_request
from estimator.cost import (
    Ownership,
    monthly_rent_usd,
    rent_vs_buy,
    system_power_w,
    system_purchase_usd,
)

DEFAULT_LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MAX_REPLICAS = 1000  # bounds the search; a plan past it is reported as a miss
# Erlang B is started this many standard deviations (sqrt(a)) below the offered load: the
# recurrence damps an error in its start by prod(j / a) ~ exp(-7^2 / 2) ~ 2e-11 (see erlang_c).
_ERLANG_START_SIGMAS = 7.0
# Past this 1/B the recurrence stops: C < 1e-12 / (1 - a/c), reported as 0 (no wait).
_NEGLIGIBLE_INVERSE_B = 1e12


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplicaCurve:
    """What the estimator says about one replica at the planned prompt, output and context.

    points: (concurrent sequences n, per-user decode tok/s at n), n ascending, from
    `decode_tokens_per_s.estimate`; max_sequences: sequences of the context that fit
    (`max_concurrent_sequences`, 0 if the model does not fit); prefill_tokens_per_s and
    ttft_s: `prefill_tokens_per_s.estimate` and `ttft_s.estimate` (no-load TTFT: prompt /
    prefill + one decode step + the engine's floor). long_prefill_tokens_per_s and
    long_ttft_s: the same at the long prompt (`Load.long_prompt_tokens`), None when the curve
    was built without one (the planner then takes the long prompt at the typical prefill
    rate: long_ttft = ttft + (long prompt - prompt) / prefill rate).
    """

    points: tuple[tuple[int, float], ...]
    max_sequences: int
    prefill_tokens_per_s: float
    ttft_s: float
    long_prefill_tokens_per_s: float | None = None
    long_ttft_s: float | None = None
    # the points' speeds already carry the prompts' prefill (the serving model's closed
    # loop): the planner then takes no prefill share out of them again
    prefill_in_steps: bool = False
    # 1 / speed at each point: the interpolation runs on step times (per_user_tokens_per_s)
    steps: tuple[float, ...] = field(init=False, repr=False, compare=False)
    # the largest (step(n + 1) - step(n)) / step(n) on the curve: bounds the sizing search
    step_growth: float = field(init=False, repr=False, compare=False)
    # the steps never fall as n grows: the planner may bisect them (`_slots_only`)
    rising: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        steps = tuple(1 / speed for _, speed in self.points)
        object.__setattr__(self, "steps", steps)
        rising = all(steps[i - 1] <= steps[i] for i in range(1, len(steps)))
        object.__setattr__(self, "rising", rising)
        growth = [
            (steps[i] - steps[i - 1]) / (self.points[i][0] - self.points[i - 1][0]) / steps[i - 1]
            for i in range(1, len(steps))
        ]
        object.__setattr__(self, "step_growth", max(growth, default=0.0))


@dataclass(frozen=True, kw_only=True, slots=True)
class Load:
    """The offered load: `users` (closed loop: each user sends a request, reads the answer
    for think_s, sends the next) or `requests_per_minute` (open loop, Poisson arrivals).
    think_s 0 means every user always has a request in flight, so every user needs a slot.
    prompt_tokens and output_tokens must be those the curves were built with.

    The long case: a share `long_share` (0 to 1) of the requests have `long_prompt_tokens`
    and `long_output_tokens` (None: output_tokens) instead. The service time and the
    prefill load are the mix of the two cases, and TTFT p95 must hold for the long requests
    too (docs/capacity.md, "The long case"). long_share 0 is the typical case alone."""

    users: int | None = None
    requests_per_minute: float | None = None
    think_s: float = 0.0
    prompt_tokens: int
    output_tokens: int
    long_prompt_tokens: int | None = None
    long_output_tokens: int | None = None
    long_share: float = 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class ServiceLevel:
    """TTFT p95 in seconds, per-user decode tok/s, and spare replicas (1 for N+1).

    tpot_p95_ms: a bound on the time per output token (None: none). The planner holds the
    stricter of the two speed targets, `floor_tokens_per_s` = max(tokens_per_s_per_user,
    1000 / tpot_p95_ms), at every replica's worst occupancy (all slots busy, the prefill
    share taken out). Every token interval of a request is at most that occupancy's
    step, so the TPOT p95 is at most 1000 / floor; the jitter of a step that also carries
    a prefill chunk is averaged into the step, not added on top (docs/capacity.md)."""

    ttft_p95_s: float
    tokens_per_s_per_user: float
    spare_replicas: int = 0
    tpot_p95_ms: float | None = None

    @property
    def floor_tokens_per_s(self) -> float:
        """The per-user speed each plan must hold: the stricter of the two targets."""
        if self.tpot_p95_ms is None:
            return self.tokens_per_s_per_user
        return max(self.tokens_per_s_per_user, 1000.0 / self.tpot_p95_ms)


@dataclass(frozen=True, kw_only=True, slots=True)
class Horizon:
    """Owning hardware: amortisation months, share of hours at full power, electricity."""

    months: int = 36
    utilisation: float = 1.0
    electricity_usd_per_kwh: float = 0.15
    pue: float = 1.0


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """One way to build a replica: `tensor_parallel` cards of one kind, one engine and quant.

    cards_available: None for cloud offers and cards to buy, the inventory otherwise.
    rent_usd_per_card_hour: a cloud price. purchase_usd_per_card: a price to buy (None for
    hardware already owned: its purchase is sunk). power_w_per_card: the TDP, for the energy
    of owned hardware. electricity_usd_per_kwh: this candidate's own electricity price (an
    inventory machine's), None for the horizon's; it prices the energy of owning only.
    host_included: the card's price and power already include its host (an SXM / OAM
    module's share of its server), so no host allowance is added per replica.
    cards_per_host: the modules one such server holds (8 for HGX / OAM platforms), for
    counting the servers a plan buys (Plan.hosts); None when not known."""

    label: str
    curve: ReplicaCurve
    engine: str = ""
    quant: str = ""
    tensor_parallel: int = 1
    cards_available: int | None = None
    rent_usd_per_card_hour: float | None = None
    purchase_usd_per_card: float | None = None
    power_w_per_card: float | None = None
    electricity_usd_per_kwh: float | None = None
    # the price and power per card include the host (an SXM / OAM module's share of its
    # server): no host allowance is added per replica
    host_included: bool = False
    cards_per_host: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """The fewest replicas of one candidate that meet the service level.

    replicas: serving + spare; cards = replicas x tensor_parallel. The figures are for the
    serving replicas alone (the service level holds with the spares down). slots_per_replica:
    the most sequences one replica runs at the per-user speed. arrival_rate_per_s: lambda;
    utilisation: offered load / slots (lambda x service time / c, < 1); wait_probability:
    Erlang C. prefill_busy_share: lambda x prompt / (serving replicas x prefill rate), the
    share of each replica's time that prefill takes from decode. tokens_per_s_per_user: with
    all slots busy and that share taken out (the guaranteed floor, >= the target);
    mean_tokens_per_s_per_user: the same at the mean occupancy a / R. monthly_usd: the lower
    of rent and owning (None: no price). break_even_months: buying vs renting the same
    cards (cost.rent_vs_buy), when both prices are given. ttft_p50_s / ttft_p95_s are the
    typical request's; long_ttft_p50_s / long_ttft_p95_s the long request's (its own
    no-load TTFT + the same wait), None without a long case. service_time_s and
    arrival_rate_per_s are over the mix of both cases. tpot_p95_ms: 1000 /
    tokens_per_s_per_user, the time per output token at the worst occupancy (a bound on
    its p95). purchase_usd: buying the replicas' hardware, hosts included (None when it is
    rented or already owned); hosts: the machines that takes (`_hosts`).
    """

    label: str
    engine: str
    quant: str
    tensor_parallel: int
    replicas: int
    spare_replicas: int
    cards: int
    slots_per_replica: int
    arrival_rate_per_s: float
    service_time_s: float
    utilisation: float
    wait_probability: float
    ttft_p50_s: float
    ttft_p95_s: float
    tokens_per_s_per_user: float
    mean_tokens_per_s_per_user: float
    prefill_busy_share: float
    monthly_rent_usd: float | None
    monthly_owned_usd: float | None
    break_even_months: float | None
    monthly_usd: float | None
    long_ttft_p50_s: float | None = None
    long_ttft_p95_s: float | None = None
    tpot_p95_ms: float = 0.0
    purchase_usd: float | None = None
    hosts: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class NearMiss:
    """Why a candidate misses, and what would make it feasible.

    field: what blocks it: `fit` (the model does not fit one replica),
    `service.tokens_per_s_per_user` (achievable: the speed of one sequence alone),
    `service.ttft_p95_s` (achievable: the no-load TTFT), `cards_available` (required: the
    cards it needs, spares included; achievable: the inventory) or `replicas` (required:
    more than MAX_REPLICAS). shortfall: relative gap,
    |required / achievable - 1|, for ranking the misses. fixes: (field, value) pairs, each
    of which alone would make the candidate feasible (`service.ttft_p95_s` 2.1: accept a
    TTFT p95 of 2.1 s; `cards_available` 12: have 12 cards)."""

    label: str
    engine: str
    quant: str
    tensor_parallel: int
    field: str
    required: float
    achievable: float
    shortfall: float
    fixes: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class PlanResult:
    """plans: every candidate's plan, cheapest first (unpriced last), at most `limit`;
    cheapest / fastest (lowest TTFT p95) / most_headroom (lowest utilisation) over all plans;
    nearest_miss: when no plan meets the service level, the candidate closest to it."""

    plans: tuple[Plan, ...]
    cheapest: Plan | None
    fastest: Plan | None
    most_headroom: Plan | None
    nearest_miss: NearMiss | None
    misses: tuple[NearMiss, ...] = field(default=())


# per replica and month: rent, owning, break-even months, the lower of the two (inf: none)
_Costs = tuple[float | None, float | None, float | None, float]


# The most of a prompt the planner takes from the prefix cache: a request always brings
# some new tokens (its question).
MAX_CACHED_PROMPT_SHARE = 0.95

# --- from the estimator -------------------------------------------------------------


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


# --- from queueing theory -----------------------------------------------------------


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability that an arrival waits in an M/M/c queue (Erlang C), c = servers,
    a = offered load = lambda / mu, for a < c (1.0 otherwise):

        C(c, a) = B / (1 - (a / c)(1 - B)),  B = Erlang B by 1/B(k) = 1 + (k / a) / B(k-1)

    (Erlang B recurrence, e.g. Gross & Harris, Fundamentals of Queueing Theory; Kleinrock,
    Queueing Systems vol. 1, eq. 3.42). The recurrence starts 7 sqrt(a) below a with the
    fluid value 1/B = a / (a - k): below a each step multiplies the start's error by k / a,
    so it has shrunk by exp(-7^2 / 2) ~ 2e-11 at k = a; the cost is O(sqrt(a) + c - a),
    not O(c), which keeps planning 100,000 candidates under a second."""
    if offered_load <= 0:
        return 0.0
    if offered_load >= servers:
        return 1.0
    inverse_b = _inverse_erlang_b(servers, offered_load)
    if inverse_b == math.inf:
        return 0.0
    rho = offered_load / servers
    return 1 / (inverse_b * (1 - rho) + rho)


def _inverse_erlang_b(servers: int, a: float) -> float:
    start = max(0, int(a - _ERLANG_START_SIGMAS * math.sqrt(a)))
    inverse_b = a / (a - start) if start else 1.0
    scale = 1 / a
    for k in range(start + 1, servers + 1):
        inverse_b = 1 + k * scale * inverse_b
        if inverse_b > _NEGLIGIBLE_INVERSE_B:
            return math.inf  # B < 1e-12 and falling: C is 0 to double precision for planning
    return inverse_b


class _ErlangTables:
    """Erlang C for many candidates at once: one Erlang B recurrence per offered load,
    extended as more servers are asked for. Loads are rounded up to 10 significant bits
    (`_round_up`: at most 0.1 % more load, so waits are if anything overstated). The slots
    are chosen so that every user decodes near the target speed, which makes the service
    times, and so the loads, of most candidates nearly equal: a few tables serve them all.
    Lives for one `plan` call."""

    def __init__(self) -> None:
        self._tables: dict[float, tuple[int, list[float]]] = {}

    def erlang_c(self, servers: int, offered_load: float) -> float:
        """erlang_c(servers, offered_load), from the table of that load."""
        if offered_load >= servers:
            return 1.0
        entry = self._tables.get(offered_load)
        if entry is None:
            start = max(0, int(offered_load - _ERLANG_START_SIGMAS * math.sqrt(offered_load)))
            first = offered_load / (offered_load - start) if start else 1.0
            entry = self._tables[offered_load] = (start, [first])
        start, inverse = entry
        k = start + len(inverse)
        if k <= servers:
            scale, last, append = 1 / offered_load, inverse[-1], inverse.append
            while k <= servers and last <= _NEGLIGIBLE_INVERSE_B:
                last = 1 + k * scale * last
                append(last)
                k += 1
            if k <= servers:
                return 0.0  # past _NEGLIGIBLE_INVERSE_B
        rho = offered_load / servers
        return 1 / (inverse[servers - start] * (1 - rho) + rho)


def _round_up(load: float) -> float:
    """Round up to 10 significant bits (at most 0.1 % more)."""
    mantissa, exponent = math.frexp(load)
    # the 1e-9 keeps a load that is exact up to float noise (48 / 60 x 10 = 8.000...02) exact
    return math.ldexp(math.ceil(mantissa * 1024 - 1e-9) / 1024, exponent)


def wait_quantile_s(
    *, quantile: float, wait_probability: float, servers: int, offered_load: float, service_s: float
) -> float:
    """The q-quantile of the wait in M/M/c (FCFS): P(W > t) = C exp(-(c mu - lambda) t) with
    mu = 1 / S, so t_q = S ln(C / (1 - q)) / (c - a), and 0 when C <= 1 - q (most arrivals
    find a free slot)."""
    tail = 1 - quantile
    if wait_probability <= tail:
        return 0.0
    if servers <= offered_load:
        return math.inf  # an unstable queue grows without bound
    return service_s * math.log(wait_probability / tail) / (servers - offered_load)


# --- the plan -----------------------------------------------------------------------


def plan(
    *,
    load: Load,
    service: ServiceLevel,
    candidates: Sequence[Candidate],
    horizon: Horizon | None = None,
    limit: int = 10,
    prune: bool = True,
) -> PlanResult:
    """Size every candidate (`_size`), price it, rank the plans; with no plan, the nearest
    miss. Raises RequestError naming the field for bad input, and `candidates` when the
    model fits on none of them. prune False sizes every candidate exactly (the reference
    the pruned path is tested against, tests/estimator/test_capacity_speed.py); the result
    is the same."""
    _validate(load, service, candidates)
    horizon = horizon or Horizon()
    if prune and limit > 0:
        pruned = _plan_pruned(load, service, candidates, horizon, limit)
        if pruned is not None:
            return pruned
    return _plan_reference(load, service, candidates, horizon, limit)


def _plan_reference(
    load: Load,
    service: ServiceLevel,
    candidates: Sequence[Candidate],
    horizon: Horizon,
    limit: int,
) -> PlanResult:
    """Every candidate sized exactly (`_size`), in order."""
    prices: dict[tuple[Any, ...], _Costs] = {}
    erlang = _ErlangTables()
    # Plans are built only for what is returned; for the rest, flat tuples of ranking keys
    # (cost, cards, index), which the garbage collector does not track, and two running
    # minima. The winners are sized again to build their plans (same tables, same result).
    by_cost: list[tuple[float, int, int]] = []
    fastest = roomiest = (math.inf, math.inf, 0, -1)
    misses: list[NearMiss] = []
    spare = service.spare_replicas
    for index, candidate in enumerate(candidates):
        outcome = _size(candidate, load, service, erlang)
        if isinstance(outcome, NearMiss):
            misses.append(outcome)
            continue
        key = (candidate.tensor_parallel, candidate.rent_usd_per_card_hour,
               candidate.purchase_usd_per_card, candidate.power_w_per_card,
               candidate.electricity_usd_per_kwh, candidate.host_included)  # fmt: skip
        costs = prices.get(key) or _replica_costs(candidate, horizon, prices)
        replicas = outcome.serving + spare
        row = (costs[3] * replicas, replicas * candidate.tensor_parallel, index)
        by_cost.append(row)
        p95 = candidate.curve.ttft_s + outcome.wait_p95_s
        if (p95, *row) < fastest:
            fastest = (p95, *row)
        utilisation = outcome.offered / (outcome.serving * outcome.slots)
        if (utilisation, *row) < roomiest:
            roomiest = (utilisation, *row)
    if not by_cost and all(c.curve.max_sequences == 0 for c in candidates):
        raise RequestError("candidates", "the model fits on none of the candidates")

    def build(index: int) -> Plan:
        candidate = candidates[index]
        sized = _size(candidate, load, service, erlang)
        assert isinstance(sized, _Sizing)  # it was sized before
        return _priced(candidate, sized, service, horizon, prices, load)

    cheapest = [build(row[2]) for row in heapq.nsmallest(limit, by_cost)]
    misses.sort(key=lambda miss: miss.shortfall)
    return PlanResult(
        plans=tuple(cheapest),
        cheapest=cheapest[0] if cheapest else None,
        fastest=build(fastest[3]) if by_cost else None,
        most_headroom=build(roomiest[3]) if by_cost else None,
        nearest_miss=None if by_cost else (misses[0] if misses else None),
        misses=() if by_cost else tuple(misses[:limit]),
    )


def _plan_pruned(
    load: Load,
    service: ServiceLevel,
    candidates: Sequence[Candidate],
    horizon: Horizon,
    limit: int,
) -> PlanResult | None:
    """`plan` without sizing the candidates that cannot enter any ranking (docs/capacity.md,
    "Performance"). A first pass takes, per candidate, a lower bound on the serving
    replicas (stability with every slot at the curve's last point, and the prefill share):
    R_lb, so cost >= per-replica cost x (R_lb + spares) and cards >= (R_lb + spares) x TP;
    and TTFT p95 >= the no-load TTFT. The second bounds the utilisation from below by
    a_low / (R_ub x slots at R_ub), R_ub narrowed by curve lookups (see the loop) only
    while that does not already exclude the candidate. A candidate is sized exactly
    (`_size`) only when one of its bounds, with its tie-breakers, is below the current
    `limit`-th cheapest, fastest or most-headroom key. None when no candidate meets the
    level: the caller then runs the reference, for the misses."""
    target = service.floor_tokens_per_s
    target_step = 1 / target
    spare = service.spare_replicas
    users, think, prompt = load.users, load.think_s, load.prompt_tokens
    rpm_rate = (load.requests_per_minute or 0.0) / 60
    typical = load.long_share == 0 or load.long_prompt_tokens is None
    output = load.output_tokens
    ttft_target = service.ttft_p95_s
    prices: dict[tuple[Any, ...], _Costs] = {}
    # (cost, cards, index, no-load TTFT, a_min, rate, mean no-load TTFT, mean output,
    # prefill_s, R_lb, TTFT budget for the wait): plain numbers, so that the garbage
    # collector stops tracking them
    bounds: list[tuple[float, int, int, float, float, float, float, float, float, int,
                       float]] = []  # fmt: skip
    append = bounds.append
    quickest = (math.inf, 0)  # the lowest no-load TTFT, and its index
    for index, candidate in enumerate(candidates):
        curve = candidate.curve
        points = curve.points
        if curve.max_sequences == 0 or not points or curve.steps[0] > target_step:
            continue  # a miss: fit or speed
        if typical:
            ttft = worst = curve.ttft_s
            out: float = output
            rate = users / (ttft + out / target + think) if users is not None else rpm_rate
            prefill_s = (
                0.0 if curve.prefill_in_steps else rate * prompt / curve.prefill_tokens_per_s
            )
        else:
            mix = _mix(curve, load)
            ttft, worst, out = mix.ttft_s, mix.worst_ttft_s, mix.output_tokens
            rate = _arrival_rate_per_s(load, ttft + out / target)
            prefill_s = _prefill_s(rate, load, mix, curve)
        if ttft_target - worst < 0:
            continue  # a miss: TTFT
        fastest = target * (1 + curve.step_growth)
        last_speed = points[-1][1]
        if last_speed > fastest:
            fastest = last_speed
        offered_min = rate * (ttft + out / fastest)
        share_max = 1 - target / points[0][1]
        if share_max <= 0:
            share_max = 1e-12
        by_prefill = int(prefill_s / share_max) + 1
        first = int(offered_min / points[-1][0]) + 1  # slots <= the last point's sequences
        if by_prefill > first:
            first = by_prefill
        if candidate.cards_available is not None and first > _allowed_replicas(candidate, service):
            continue  # a miss: inventory
        tp = candidate.tensor_parallel
        key = (tp, candidate.rent_usd_per_card_hour, candidate.purchase_usd_per_card,
               candidate.power_w_per_card, candidate.electricity_usd_per_kwh,
               candidate.host_included)  # fmt: skip
        costs = prices.get(key) or _replica_costs(candidate, horizon, prices)
        replicas = first + spare
        no_load = curve.ttft_s
        if no_load < quickest[0]:
            quickest = (no_load, index)
        append((costs[3] * replicas, replicas * tp, index, no_load, offered_min,
                rate, ttft, out, prefill_s, first, ttft_target - worst))  # fmt: skip
    if not bounds:
        return None

    erlang = _ErlangTables()
    cheapest: list[tuple[float, int, int]] = []  # the `limit` cheapest rows, negated (max-heap)
    kth = (math.inf, math.inf, math.inf)  # the limit-th cheapest row, once there are limit
    fastest_key: tuple[float, float, float, int] = (math.inf, math.inf, 0, -1)
    roomiest_key: tuple[float, float, float, int] = (math.inf, math.inf, 0, -1)
    done: set[int] = set()

    def size(index: int) -> None:
        nonlocal kth, fastest_key, roomiest_key
        if index in done:
            return
        done.add(index)
        candidate = candidates[index]
        outcome = _size(candidate, load, service, erlang)
        if isinstance(outcome, NearMiss):
            return
        costs = _replica_costs(candidate, horizon, prices)
        replicas = outcome.serving + spare
        row = (costs[3] * replicas, replicas * candidate.tensor_parallel, index)
        if len(cheapest) < limit:
            heapq.heappush(cheapest, (-row[0], -row[1], -index))
            if len(cheapest) == limit:
                worst_row = cheapest[0]
                kth = (-worst_row[0], -worst_row[1], -worst_row[2])
        elif row < kth:
            heapq.heapreplace(cheapest, (-row[0], -row[1], -index))
            worst_row = cheapest[0]
            kth = (-worst_row[0], -worst_row[1], -worst_row[2])
        p95 = candidate.curve.ttft_s + outcome.wait_p95_s
        if (p95, *row) < fastest_key:
            fastest_key = (p95, *row)
        utilisation = outcome.offered / (outcome.serving * outcome.slots)
        if (utilisation, *row) < roomiest_key:
            roomiest_key = (utilisation, *row)

    # Seeds, so that the bounds bite early: the cheapest by bound, the lowest no-load TTFT.
    for entry in heapq.nsmallest(limit, bounds):
        size(entry[2])
    size(quickest[1])
    # The loop below runs for every candidate: locals, one- or two-float tests before the
    # tuple comparisons with their tie-breakers, and the curve lookups inlined or bisected.
    for entry in bounds:
        (cost, cards, index, ttft, offered_min, rate, mean_ttft, out, prefill_s, first,
         budget) = entry  # fmt: skip
        if (cost <= kth[0] and (cost, cards, index) <= kth) or (
            ttft <= fastest_key[0] and (ttft, cost, cards, index) <= fastest_key
        ):
            size(index)
            continue
        curve = candidates[index].curve
        points, steps, rising = curve.points, curve.steps, curve.rising
        # (No second cost test at `_size`'s own R_lb: it is no lower than R_lb here, so
        # the cost and cards it gives are no lower either, and these did not qualify.)
        most = points[-1][0]  # the slots never exceed the last point's sequences
        if budget <= 0:
            size(index)
            continue
        # Headroom: utilisation = a / (R x slots(R)) >= a_low / (R_ub x slots(R_ub)) for
        # the R the search returns (a >= a_low; R <= R_ub; the slots never fall as R
        # grows: the prefill share prefill_s / R falls). The search returns R_lb, or an R
        # whose R - 1 it tried and found failing; a failing R' has fewer servers c(R') =
        # R' x slots(R') than B(R'): c <= a (unstable), or wait p95 = S ln(C / 0.05) / (c
        # - a) > budget with C <= 1, S <= S_max, a <= a_max (rounded up <= 0.1 %), so c <
        # a_max + S_max ln 20 / budget; closed loop, also c < users (with every user a
        # slot nobody waits), and without think time that alone (`_failing_servers`).
        # S_max(R') is at the slowest speed R' can have: the target, or, when its slots
        # are the last point's (KV-limited), (1 - prefill_s / R') x that point's speed if
        # faster. B(R') never rises as R' grows (nor does S_max), c(R') never falls, so
        # every failing R' >= R_lb is below R_B, the fewest R >= R_lb with c(R) >= B(R):
        # R - 1 < R_B, R <= R_B, and c(R) <= c(R_ub) for any R_ub >= R_B, which is any
        # R_ub with c(R_ub) >= B(R_ub). R_lb here is the first pass's, which may be below
        # `_size`'s start R_0 (at the target's slots s_t): it does not matter, since every
        # R < R_0 at or above the prefill bound has R s_t <= a_min (up to rounding), so c(R)
        # <= a_min < B(R) (B exceeds a_min by a margin) and R < R_B: R_0 <= R_B too.
        last_n, last_speed = points[-1]
        keep = 1 - prefill_s / first
        if keep <= 0:
            size(index)
            continue
        low_slots = _slots_only(points, steps, rising, 1 / (target / keep))
        if low_slots < 1:
            size(index)
            continue
        speed_low = target
        if low_slots >= last_n and keep * last_speed > target:
            speed_low = keep * last_speed
        bound = _failing_servers(rate, mean_ttft, out, budget, users, think, offered_min,
                                 speed_low)  # fmt: skip
        if first * low_slots >= bound:
            upper, top = first, low_slots  # R = R_lb: c(R_lb) >= B(R_lb), R_lb cannot fail
        else:
            # R_ub = int(B(R_lb) / slots(R_lb)) + 1 > R_lb: c(R_ub) >= R_ub x slots(R_lb)
            # > B(R_lb) >= B(R_ub). First with slots(R_ub) <= the last point's sequences and
            # a >= a_min (no lookup), then with the slots at R_ub.
            upper = int(bound / low_slots) + 1
            lowest = offered_min * (1 - 1e-6) / (upper * most)
            room = roomiest_key[0]
            if lowest > room or (lowest == room and (lowest, cost, cards, index) > roomiest_key):
                continue
            # A first guess near R_B from below, m = B(R_lb) / the last point's n: if c(m)
            # >= B(m) it is an R_ub; if not, int(B(m) / slots(m)) + 1 > m is one (c there
            # >= it x slots(m) > B(m) >= B there), usually within a few of R_B.
            low = first
            g_at, g_low = first, first * low_slots - bound  # the last c(R) - B(R) < 0 seen
            middle = int(bound / most)
            if low < middle < upper:
                keep = 1 - prefill_s / middle
                slots = _slots_only(points, steps, rising, 1 / (target / keep))
                # _speed_low and _failing_servers, inlined (the same arithmetic)
                slowest = target
                if slots >= last_n and keep * last_speed > target:
                    slowest = keep * last_speed
                service_max = mean_ttft + out / (slowest * (1 - 1e-6))
                servers = (
                    _offered_max(rate, users, think, service_max) * 1.003
                    + service_max * 3.0 / budget
                )
                if users is not None and (think == 0 or users < servers):
                    servers = users
                if servers <= offered_min * (1 + 1e-9):
                    servers = offered_min * (1 + 1e-9) + 1
                if middle * slots >= servers:
                    upper = middle
                else:
                    low = middle
                    g_at, g_low = middle, middle * slots - servers
                    above = int(servers / slots) + 1
                    if above < upper:
                        upper = above
            keep = 1 - prefill_s / upper
            top = _slots_only(points, steps, rising, 1 / (target / keep))
            slowest = _speed_low(target, top, last_n, last_speed, keep)
            bound = _failing_servers(rate, mean_ttft, out, budget, users, think, offered_min,
                                     slowest)  # fmt: skip
            # Narrowed while the bound does not exclude it, low < R_B <= upper throughout:
            # R_B >= B(R_B) / slots(R_B) >= B(upper) / slots(upper), so int(B(upper) /
            # top) - 1 < R_B; after a failing probe m (c(m) < B(m)), B(m) / slots(m) + 1
            # is the next (an R_ub, as above).
            growth_fast = target * (1 + curve.step_growth)
            guess, secant = 0, False
            while True:
                fast = growth_fast
                if top >= last_n:
                    kv_fast = (1 - prefill_s / upper) * last_speed * (1 + 1e-9)
                    if kv_fast > fast:
                        fast = kv_fast
                lowest = rate * (mean_ttft + out / fast) * (1 - 1e-6) / (upper * top)
                room = roomiest_key[0]
                if lowest > room or (
                    lowest == room and (lowest, cost, cards, index) > roomiest_key
                ):
                    break
                floor = int(bound / top) - 1
                if floor > low:
                    low = floor
                if upper - low <= 1:
                    break
                # c(R) - B(R) is near linear in R (on one segment of the curve c(R) = R x
                # slots(R) is linear in R up to the rounding down), so after a failing
                # probe's guess, the secant between the last failing R and R_ub, then the
                # one below that if it met; halving when a guess is outside (low, upper).
                if low < guess < upper:
                    middle, secant = guess, False
                elif secant:
                    middle, secant = upper - 1, False
                else:
                    gap = upper * top - bound - g_low
                    middle = g_at + int(-g_low * (upper - g_at) / gap) + 1 if gap > 0 else 0
                    secant = True
                if not low < middle < upper:
                    middle, secant = (low + upper) // 2, False
                keep = 1 - prefill_s / middle
                slots = _slots_only(points, steps, rising, 1 / (target / keep))
                # _speed_low and _failing_servers, inlined (the same arithmetic)
                slowest = target
                if slots >= last_n and keep * last_speed > target:
                    slowest = keep * last_speed
                service_max = mean_ttft + out / (slowest * (1 - 1e-6))
                servers = (
                    _offered_max(rate, users, think, service_max) * 1.003
                    + service_max * 3.0 / budget
                )
                if users is not None and (think == 0 or users < servers):
                    servers = users
                if servers <= offered_min * (1 + 1e-9):
                    servers = offered_min * (1 + 1e-9) + 1
                if middle * slots >= servers:
                    upper, top, bound, guess = middle, slots, servers, 0
                else:
                    low, g_at, g_low = middle, middle, middle * slots - servers
                    guess = int(servers / slots) + 1 if slots > 0 else 0
        # The speed at R <= R_ub stays under target x (1 + growth) below the last point
        # (`_size`), and at it under (1 - prefill_s / R_ub) x its speed (the share at R is
        # at least that at R_ub); the slots at R are at most those at R_ub.
        fast = target * (1 + curve.step_growth)
        if top >= last_n:
            kv_fast = (1 - prefill_s / upper) * last_speed * (1 + 1e-9)
            if kv_fast > fast:
                fast = kv_fast
        lowest = rate * (mean_ttft + out / fast) * (1 - 1e-6) / (upper * top)
        if (lowest, cost, cards, index) > roomiest_key:
            continue
        size(index)

    if not cheapest:
        return None

    def build(index: int) -> Plan:
        candidate = candidates[index]
        sized = _size(candidate, load, service, erlang)
        assert isinstance(sized, _Sizing)  # it was sized before
        return _priced(candidate, sized, service, horizon, prices, load)

    rows = sorted((-c, -n, -i) for c, n, i in cheapest)
    plans = [build(row[2]) for row in rows]
    return PlanResult(
        plans=tuple(plans),
        cheapest=plans[0],
        fastest=build(fastest_key[3]),
        most_headroom=build(roomiest_key[3]),
        nearest_miss=None,
        misses=(),
    )


def _slots_only(
    points: tuple[tuple[int, float], ...],
    steps: tuple[float, ...],
    rising: bool,
    target_step: float,
) -> int:
    """slots_at(curve, 1 / target_step) from the curve's points, steps and `rising`
    (`_slots_and_step`'s slots, the same arithmetic), without building a tuple."""
    if rising:  # the first step above the target's, by bisection
        i = bisect_right(steps, target_step)
        if i == 0:
            return 0
        if i == len(steps):
            return points[-1][0]
    else:
        if steps[0] > target_step:
            return 0
        for i in range(1, len(points)):
            if steps[i] > target_step:
                break
        else:
            return points[-1][0]
    n0, step0 = points[i - 1][0], steps[i - 1]
    slope = (steps[i] - step0) / (points[i][0] - n0)
    return n0 + int((target_step - step0) / slope + 1e-9)


def _speed_low(target: float, slots: int, last_n: int, last_speed: float, keep: float) -> float:
    """The slowest per-user speed at a replica count with these slots and 1 - prefill
    share `keep` (`_plan_pruned`): the target, or the KV-limited last point's speed x keep
    when the slots are the last point's and that is faster."""
    if slots >= last_n and keep * last_speed > target:
        return keep * last_speed
    return target


def _offered_max(rate: float, users: int | None, think: float, service_max: float) -> float:
    """The most offered load a replica count can have when no request takes longer than
    service_max: open loop rate x S_max; closed loop users x S_max / (S_max + think) (the
    plan's own rate users / (S + think) times S rises with S)."""
    if users is None:
        return rate * service_max
    return users * service_max / (service_max + think)


def _failing_servers(
    rate: float,
    mean_ttft: float,
    out: float,
    budget: float,
    users: int | None,
    think: float,
    offered_min: float,
    speed_low: float,
) -> float:
    """B of `_plan_pruned`: more servers than a failing replica count has, when every user
    decodes at speed_low or faster there: a_max + S_max ln 20 / budget (ln 20 < 3, a
    rounded up by at most 0.1 %, margins 0.3 % and 1e-6), users in a closed loop where that
    is fewer or without think time, and always more than a_min."""
    service_max = mean_ttft + out / (speed_low * (1 - 1e-6))
    bound = _offered_max(rate, users, think, service_max) * 1.003 + service_max * 3.0 / budget
    if users is not None and (think == 0 or users < bound):
        bound = users
    # more than a_min by a margin: then c(R) >= B(R) also means R > a_min / s_t, so R is
    # at least `_size`'s start even where a_min / s_t is rounded
    least = offered_min * (1 + 1e-9)
    return bound if bound > least else least + 1


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
        best = curve.points[0][1]
        if target > service.tokens_per_s_per_user:  # the TPOT bound is the stricter
            fix = (("service.tpot_p95_ms", 1000.0 / best),)
            return _miss(candidate, "service.tpot_p95_ms", 1000.0 / target, 1000.0 / best, fix)
        fix = (("service.tokens_per_s_per_user", best),)
        return _miss(candidate, "service.tokens_per_s_per_user", target, best, fix)
    mix = _mix(curve, load)
    budget_s = service.ttft_p95_s - mix.worst_ttft_s
    if budget_s < 0:
        fix = (("service.ttft_p95_s", mix.worst_ttft_s),)
        return _miss(candidate, "service.ttft_p95_s", service.ttft_p95_s, mix.worst_ttft_s, fix)
    rate = _arrival_rate_per_s(load, mix.ttft_s + mix.output_tokens / target)
    # Lower bounds on R (no max() calls: this runs for every candidate): prefill
    # share p = prefill_s / R below 1 - target / one sequence's speed (or no slot reaches the
    # target), and stability, R x slots > a. The speed at the chosen slots stays below
    # target x (1 + the largest relative growth of the step per added sequence), or is the
    # KV-limited last point's: a bound on S, so on a.
    prefill_s = _prefill_s(rate, load, mix, curve)
    fastest = target * (1 + curve.step_growth)
    if curve.points[-1][1] > fastest:
        fastest = curve.points[-1][1]
    offered_min = rate * (mix.ttft_s + mix.output_tokens / fastest)
    share_max = 1 - target / curve.points[0][1]
    if share_max <= 0:
        share_max = 1e-12  # exactly at the target: any prefill share is too much
    first = int(offered_min / slots) + 1
    by_prefill = int(prefill_s / share_max) + 1
    if by_prefill > first:
        first = by_prefill
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
    unlimited = Candidate(**{**_as_dict(candidate), "cards_available": None})
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


def _as_dict(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


def _priced(
    candidate: Candidate,
    sized: _Sizing,
    service: ServiceLevel,
    horizon: Horizon,
    cache: dict[tuple[Any, ...], _Costs],
    load: Load,
) -> Plan:
    replicas = sized.serving + service.spare_replicas
    rent, owned, break_even, _ = _replica_costs(candidate, horizon, cache)
    rent_total = rent * replicas if rent is not None else None
    owned_total = owned * replicas if owned is not None else None
    priced = [x for x in (rent_total, owned_total) if x is not None]
    servers = sized.serving * sized.slots
    long_ttft = _mix(candidate.curve, load).long_ttft_s if load.long_share > 0 else None
    mean_occupancy = min(sized.slots, max(1.0, sized.offered / sized.serving))
    return Plan(
        label=candidate.label,
        engine=candidate.engine,
        quant=candidate.quant,
        tensor_parallel=candidate.tensor_parallel,
        replicas=replicas,
        spare_replicas=service.spare_replicas,
        cards=replicas * candidate.tensor_parallel,
        slots_per_replica=sized.slots,
        arrival_rate_per_s=sized.arrival_rate_per_s,
        service_time_s=sized.service_s,
        utilisation=sized.offered / servers,
        wait_probability=sized.wait_probability,
        ttft_p50_s=candidate.curve.ttft_s + sized.wait_p50_s,
        ttft_p95_s=candidate.curve.ttft_s + sized.wait_p95_s,
        tokens_per_s_per_user=sized.speed,
        mean_tokens_per_s_per_user=per_user_tokens_per_s(candidate.curve, mean_occupancy)
        * (1 - sized.prefill_busy_share),
        prefill_busy_share=sized.prefill_busy_share,
        monthly_rent_usd=rent_total,
        monthly_owned_usd=owned_total,
        break_even_months=break_even,
        monthly_usd=min(priced) if priced else None,
        long_ttft_p50_s=long_ttft + sized.wait_p50_s if long_ttft is not None else None,
        long_ttft_p95_s=long_ttft + sized.wait_p95_s if long_ttft is not None else None,
        tpot_p95_ms=1000.0 / sized.speed,
        purchase_usd=_purchase_usd(candidate, replicas),
        hosts=_hosts(candidate, replicas),
    )


def _purchase_usd(candidate: Candidate, replicas: int) -> float | None:
    """What buying the plan's hardware costs: per replica its cards plus a host
    (cost.system_purchase_usd; SXM / OAM modules at their share of the server, host
    included); None for hardware not bought (cloud offers, machines already owned)."""
    per_replica = system_purchase_usd(
        candidate.purchase_usd_per_card,
        candidate.tensor_parallel,
        host=not candidate.host_included,
    )
    return per_replica * replicas if per_replica is not None else None


def _hosts(candidate: Candidate, replicas: int) -> int | None:
    """The machines the plan's bought cards go in: one host per replica for cards (as
    priced), ceil(cards / modules per server) servers for SXM / OAM modules; None for
    hardware not bought, or modules whose server size is unknown."""
    if not candidate.purchase_usd_per_card:
        return None
    if not candidate.host_included:
        return replicas
    per_server = candidate.cards_per_host
    if not per_server:
        return None
    return math.ceil(replicas * candidate.tensor_parallel / per_server)


def _replica_costs(
    candidate: Candidate,
    horizon: Horizon,
    cache: dict[tuple[Any, ...], _Costs],
) -> _Costs:
    """Per replica, per month: rent (cards x USD/h x 24 h x 365/12 d, cost.monthly_rent_usd),
    owning (cost.rent_vs_buy: energy of cards x TDP + host, plus the purchase of cards +
    the host allowance over horizon.months; energy only for hardware already owned), and
    the break-even months of buying vs renting (both prices needed), and the lower of rent and
    owning (inf without a price). The energy is priced at the candidate's own
    electricity_usd_per_kwh, or the horizon's when it has none. Cached per call by
    price, not per candidate: many quants share one card."""
    tp = candidate.tensor_parallel
    host = not candidate.host_included
    key = (
        tp,
        candidate.rent_usd_per_card_hour,
        candidate.purchase_usd_per_card,
        candidate.power_w_per_card,
        candidate.electricity_usd_per_kwh,
        candidate.host_included,
    )
    if key in cache:
        return cache[key]
    rent_hourly = (
        candidate.rent_usd_per_card_hour * tp
        if candidate.rent_usd_per_card_hour is not None
        else None
    )
    rent = monthly_rent_usd(rent_hourly, 24) if rent_hourly is not None else None
    owned = break_even = None
    if candidate.purchase_usd_per_card is not None or candidate.power_w_per_card is not None:
        ownership = Ownership(
            purchase_usd=system_purchase_usd(candidate.purchase_usd_per_card, tp, host=host) or 0.0,
            power_w=system_power_w(candidate.power_w_per_card, tp, host=host) or 0.0,
            electricity_usd_per_kwh=(
                horizon.electricity_usd_per_kwh
                if candidate.electricity_usd_per_kwh is None
                else candidate.electricity_usd_per_kwh
            ),
            pue=horizon.pue,
            utilization=horizon.utilisation,
            amortization_months=horizon.months if candidate.purchase_usd_per_card else None,
        )
        verdict = rent_vs_buy(ownership, rent_hourly or 0.0)
        owned = verdict.monthly_ownership_usd
        if rent_hourly is not None and candidate.purchase_usd_per_card:
            break_even = verdict.break_even_months
    cheapest = min(rent if rent is not None else math.inf, owned if owned is not None else math.inf)
    cache[key] = (rent, owned, break_even, cheapest)
    return cache[key]
