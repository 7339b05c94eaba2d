"""The pruned planner: the same answer as sizing every candidate, without sizing those
whose bounds keep them out of every ranking (docs/capacity.md, "Performance")."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, NamedTuple

from estimator.capacity.costs import _priced, _replica_costs
from estimator.capacity.queue import _ErlangTables
from estimator.capacity.sizing import (
    _allowed_replicas,
    _arrival_rate_per_s,
    _fewest_replicas,
    _mix,
    _prefill_s,
    _size,
    _Sizing,
)
from estimator.capacity.types import (
    Candidate,
    Horizon,
    Load,
    NearMiss,
    Plan,
    PlanResult,
    ReplicaCurve,
    ServiceLevel,
    _Costs,
)


def _plan_pruned(
    load: Load,
    service: ServiceLevel,
    candidates: Sequence[Candidate],
    horizon: Horizon,
    limit: int,
) -> PlanResult | None:
    """`plan` without sizing the candidates that cannot enter any ranking (docs/capacity.md,
    "Performance"). A first pass (`_first_pass`) takes, per candidate, a lower bound on the
    serving replicas (stability with every slot at the curve's last point, and the prefill
    share): R_lb, so cost >= per-replica cost x (R_lb + spares) and cards >= (R_lb +
    spares) x TP; and TTFT p95 >= the no-load TTFT. The second (`_headroom_excludes`)
    bounds the utilisation from below by a_low / (R_ub x slots at R_ub), R_ub narrowed by
    curve lookups only while that does not already exclude the candidate. A candidate is
    sized exactly (`_Rankings.size`) only when one of its bounds, with its tie-breakers, is
    below the current `limit`-th cheapest, fastest or most-headroom key. None when no
    candidate meets the level: the caller then runs the reference, for the misses."""
    prices: dict[tuple[Any, ...], _Costs] = {}
    bounds, quickest = _first_pass(load, service, candidates, horizon, prices)
    if not bounds:
        return None
    rankings = _Rankings(load, service, candidates, horizon, prices, limit)
    # Seeds, so that the bounds bite early: the cheapest by bound, the lowest no-load TTFT.
    for bound in heapq.nsmallest(limit, bounds):
        rankings.size(bound[2])
    rankings.size(quickest)
    context = _Context(service.floor_tokens_per_s, load.users, load.think_s)
    for bound in bounds:
        cost, cards, index, ttft = bound[0], bound[1], bound[2], bound[3]
        kth, fastest_key = rankings.kth, rankings.fastest_key
        if (
            (cost <= kth[0] and (cost, cards, index) <= kth)
            or (ttft <= fastest_key[0] and (ttft, cost, cards, index) <= fastest_key)
            or not _headroom_excludes(bound, candidates[index].curve, context, rankings)
        ):
            rankings.size(index)
    return rankings.result()


# A candidate's first-pass bounds (`_first_pass`) and the numbers its headroom bound reuses,
# ordered as the cheapest ranking orders plans (cost, cards, index):
#   cost: per-replica monthly cost x (R_lb + spares), at most the plan's; cards: (R_lb +
#   spares) x TP; index: the candidate's place in the list; ttft: its no-load TTFT, at most
#   its TTFT p95; offered_min: a_min = rate x (mean TTFT + mean output / the fastest speed
#   any replica count gives); rate: arrivals a second with every user at the target speed;
#   mean_ttft, mean_output: over the typical and long requests; prefill_s: replica-seconds
#   of prefill a second (`_prefill_s`); first: R_lb; budget: the TTFT p95 target less the
#   worst no-load TTFT, what the wait may take.
# A plain tuple of numbers, not a dataclass or a NamedTuple: there is one per candidate, and
# the garbage collector stops tracking plain tuples of numbers but not those (as a
# NamedTuple the first pass over 216,000 candidates took 0.65 s instead of 0.39 s).
_Bound = tuple[float, int, int, float, float, float, float, float, float, int, float]


class _Context(NamedTuple):
    """What the headroom bound needs besides a candidate's own numbers."""

    target: float  # the per-user speed every plan holds
    users: int | None
    think: float


def _first_pass(
    load: Load,
    service: ServiceLevel,
    candidates: Sequence[Candidate],
    horizon: Horizon,
    prices: dict[tuple[Any, ...], _Costs],
) -> tuple[list[_Bound], int]:
    """The bounds of every candidate that is not an immediate miss (fit, speed, TTFT,
    inventory), and the index of the lowest no-load TTFT. The typical case's mix (no long
    requests) is inline: this loop runs for every candidate."""
    target = service.floor_tokens_per_s
    target_step = 1 / target
    users, think, prompt = load.users, load.think_s, load.prompt_tokens
    rpm_rate = (load.requests_per_minute or 0.0) / 60
    typical = load.long_share == 0 or load.long_prompt_tokens is None
    ttft_target, spare = service.ttft_p95_s, service.spare_replicas
    bounds: list[_Bound] = []
    append = bounds.append
    quickest = (math.inf, 0)  # the lowest no-load TTFT, and its index
    for index, candidate in enumerate(candidates):
        curve = candidate.curve
        if curve.max_sequences == 0 or not curve.points or curve.steps[0] > target_step:
            continue  # a miss: fit or speed
        if typical:
            ttft = worst = curve.ttft_s
            out: float = load.output_tokens
            rate = users / (ttft + out / target + think) if users is not None else rpm_rate
            prefill_s = (
                0.0 if curve.prefill_in_steps else rate * prompt / curve.prefill_tokens_per_s
            )
        else:
            ttft, worst, out, rate, prefill_s = _long_mix(curve, load, target)
        if ttft_target - worst < 0:
            continue  # a miss: TTFT
        first, offered_min = _fewest_replicas(
            curve, target, rate, ttft, out, prefill_s, curve.points[-1][0]
        )  # slots <= the last point's sequences
        if candidate.cards_available is not None and first > _allowed_replicas(candidate, service):
            continue  # a miss: inventory
        costs = prices.get(candidate.price_key) or _replica_costs(candidate, horizon, prices)
        replicas = first + spare
        if curve.ttft_s < quickest[0]:
            quickest = (curve.ttft_s, index)
        append((costs.cheapest_usd * replicas, replicas * candidate.tensor_parallel, index,
                curve.ttft_s, offered_min, rate, ttft, out, prefill_s, first,
                ttft_target - worst))  # fmt: skip
    return bounds, quickest[1]


class _Demand(NamedTuple):
    """What one candidate's replicas are asked for at the target speed: the mean and the
    worst no-load TTFT, the mean output, arrivals a second and prefill seconds a second."""

    mean_ttft_s: float
    worst_ttft_s: float
    mean_output_tokens: float
    rate: float
    prefill_s: float


def _long_mix(curve: ReplicaCurve, load: Load, target: float) -> _Demand:
    """The demand with long requests (`_mix`, `_arrival_rate_per_s`, `_prefill_s`); the
    first pass has the typical case's inline."""
    mix = _mix(curve, load)
    rate = _arrival_rate_per_s(load, mix.ttft_s + mix.output_tokens / target)
    prefill_s = _prefill_s(rate, load, mix, curve)
    return _Demand(mix.ttft_s, mix.worst_ttft_s, mix.output_tokens, rate, prefill_s)


class _Rankings:
    """The `limit` cheapest rows (a max-heap of negated rows), the fastest and the
    most-headroom keys so far, over the candidates sized exactly."""

    def __init__(
        self,
        load: Load,
        service: ServiceLevel,
        candidates: Sequence[Candidate],
        horizon: Horizon,
        prices: dict[tuple[Any, ...], _Costs],
        limit: int,
    ) -> None:
        self.load, self.service, self.candidates = load, service, candidates
        self.horizon, self.prices, self.limit = horizon, prices, limit
        self.erlang = _ErlangTables()
        self.cheapest: list[tuple[float, int, int]] = []
        self.kth = (math.inf, math.inf, math.inf)  # the limit-th cheapest row, once full
        self.fastest_key: tuple[float, float, float, int] = (math.inf, math.inf, 0, -1)
        self.roomiest_key: tuple[float, float, float, int] = (math.inf, math.inf, 0, -1)
        self.done: set[int] = set()

    def size(self, index: int) -> None:
        """Size candidate `index` exactly (once) and enter it in the rankings."""
        if index in self.done:
            return
        self.done.add(index)
        candidate = self.candidates[index]
        outcome = _size(candidate, self.load, self.service, self.erlang)
        if isinstance(outcome, NearMiss):
            return
        costs = _replica_costs(candidate, self.horizon, self.prices)
        replicas = outcome.serving + self.service.spare_replicas
        row = (costs.cheapest_usd * replicas, replicas * candidate.tensor_parallel, index)
        cheapest = self.cheapest
        if len(cheapest) < self.limit:
            heapq.heappush(cheapest, (-row[0], -row[1], -index))
            if len(cheapest) == self.limit:
                self.kth = (-cheapest[0][0], -cheapest[0][1], -cheapest[0][2])
        elif row < self.kth:
            heapq.heapreplace(cheapest, (-row[0], -row[1], -index))
            self.kth = (-cheapest[0][0], -cheapest[0][1], -cheapest[0][2])
        p95 = candidate.curve.ttft_s + outcome.wait_p95_s
        if (p95, *row) < self.fastest_key:
            self.fastest_key = (p95, *row)
        utilisation = outcome.offered / (outcome.serving * outcome.slots)
        if (utilisation, *row) < self.roomiest_key:
            self.roomiest_key = (utilisation, *row)

    def result(self) -> PlanResult | None:
        """The plans of the ranked rows, priced; None when none was feasible."""
        if not self.cheapest:
            return None

        def build(index: int) -> Plan:
            candidate = self.candidates[index]
            sized = _size(candidate, self.load, self.service, self.erlang)
            assert isinstance(sized, _Sizing)  # it was sized before
            return _priced(candidate, sized, self.service, self.horizon, self.prices, self.load)

        rows = sorted((-c, -n, -i) for c, n, i in self.cheapest)
        plans = [build(row[2]) for row in rows]
        return PlanResult(
            plans=tuple(plans),
            cheapest=plans[0],
            fastest=build(self.fastest_key[3]),
            most_headroom=build(self.roomiest_key[3]),
            nearest_miss=None,
            misses=(),
        )


# Headroom: utilisation = a / (R x slots(R)) >= a_low / (R_ub x slots(R_ub)) for the R the
# search returns (a >= a_low; R <= R_ub; the slots never fall as R grows: the prefill share
# prefill_s / R falls). The search returns R_lb, or an R whose R - 1 it tried and found
# failing; a failing R' has fewer servers c(R') = R' x slots(R') than B(R'): c <= a
# (unstable), or wait p95 = S ln(C / 0.05) / (c - a) > budget with C <= 1, S <= S_max,
# a <= a_max (rounded up <= 0.1 %), so c < a_max + S_max ln 20 / budget; closed loop, also
# c < users (with every user a slot nobody waits), and without think time that alone
# (`_failing_servers`). S_max(R') is at the slowest speed R' can have: the target, or, when
# its slots are the last point's (KV-limited), (1 - prefill_s / R') x that point's speed if
# faster. B(R') never rises as R' grows (nor does S_max), c(R') never falls, so every
# failing R' >= R_lb is below R_B, the fewest R >= R_lb with c(R) >= B(R): R - 1 < R_B,
# R <= R_B, and c(R) <= c(R_ub) for any R_ub >= R_B, which is any R_ub with c(R_ub) >=
# B(R_ub). R_lb here is the first pass's, which may be below `_size`'s start R_0 (at the
# target's slots s_t): it does not matter, since every R < R_0 at or above the prefill
# bound has R s_t <= a_min (up to rounding), so c(R) <= a_min < B(R) (B exceeds a_min by a
# margin) and R < R_B: R_0 <= R_B too.


def _headroom_excludes(
    bound: _Bound, curve: ReplicaCurve, context: _Context, rankings: _Rankings
) -> bool:
    """Whether the candidate's utilisation bound keeps it out of the most-headroom ranking
    (its cost and TTFT bounds already did not qualify): True skips sizing it. The first
    probe, at R_lb, runs for every candidate, so its arithmetic is inline (`_probe_at`'s):
    the slots at the target once prefill takes prefill_s / R_lb, and B(R_lb)
    (`_failing_servers`). Then R_ub: R_lb itself when c(R_lb) >= B(R_lb), else
    `_narrow_upper`; and the bound `_lowest_utilisation` at R_ub."""
    (cost, cards, index, _, offered_min, rate, mean_ttft, out, prefill_s, first,
     budget) = bound  # fmt: skip
    keep = 1 - prefill_s / first
    if budget <= 0 or keep <= 0:
        return False
    target, points = context.target, curve.points
    low_slots = _slots_only(points, curve.steps, curve.rising, 1 / (target / keep))
    if low_slots < 1:
        return False
    last_n, last_speed = points[-1]
    slowest = keep * last_speed if low_slots >= last_n and keep * last_speed > target else target
    servers = _failing_servers(rate, mean_ttft, out, budget, context.users, context.think,
                               offered_min, slowest)  # fmt: skip
    if first * low_slots >= servers:
        upper, top = first, low_slots  # R = R_lb: c(R_lb) >= B(R_lb), R_lb cannot fail
    else:
        narrowed = _narrow_upper(bound, curve, context, rankings, low_slots, servers)
        if narrowed is None:
            return True
        upper, top = narrowed
    lowest = _lowest_utilisation(bound, curve, target, upper, top)
    return (lowest, cost, cards, index) > rankings.roomiest_key


def _lowest_utilisation(
    bound: _Bound, curve: ReplicaCurve, target: float, upper: int, top: int
) -> float:
    """a_low / (R_ub x slots(R_ub)), with R_ub = `upper` and its slots `top`: the speed at
    R <= R_ub stays under target x (1 + growth) below the last point (`_size`), and at it
    under (1 - prefill_s / R_ub) x its speed (the share at R is at least that at R_ub); the
    slots at R are at most those at R_ub."""
    _, _, _, _, _, rate, mean_ttft, out, prefill_s, _, _ = bound
    last_n, last_speed = curve.points[-1]
    fast = target * (1 + curve.step_growth)
    if top >= last_n:
        kv_fast = (1 - prefill_s / upper) * last_speed * (1 + 1e-9)
        if kv_fast > fast:
            fast = kv_fast
    return rate * (mean_ttft + out / fast) * (1 - 1e-6) / (upper * top)


def _narrow_upper(
    bound: _Bound,
    curve: ReplicaCurve,
    context: _Context,
    rankings: _Rankings,
    low_slots: int,
    servers: float,
) -> tuple[int, int] | None:
    """R_ub (and its slots) narrowed towards R_B from above while the utilisation bound
    does not already exclude the candidate; None as soon as it does. `servers` is
    B(R_lb), `low_slots` slots(R_lb). R_ub = int(B(R_lb) / slots(R_lb)) + 1 > R_lb
    (c(R_ub) >= R_ub x slots(R_lb) > B(R_lb) >= B(R_ub)); first tested with the slots of
    the last point and a >= a_min (no lookup), then a guess near R_B, m = B(R_lb) / the
    last point's n (an R_ub if c(m) >= B(m), else int(B(m) / slots(m)) + 1 is one), then
    secant and halving probes (`_next_middle`), low < R_B <= upper throughout: R_B >=
    B(R_B) / slots(R_B) >= B(upper) / slots(upper), so int(B(upper) / top) - 1 < R_B;
    after a failing probe m (c(m) < B(m)), B(m) / slots(m) + 1 is the next R_ub."""
    rank = bound[:3]
    last_n = curve.points[-1][0]  # the slots never exceed the last point's sequences
    upper = int(servers / low_slots) + 1
    if (bound[4] * (1 - 1e-6) / (upper * last_n), *rank) > rankings.roomiest_key:
        return None  # a >= a_min with every replica at the last point's slots
    low = g_at = bound[9]  # R_lb
    g_low = low * low_slots - servers  # the last c(R) - B(R) < 0 seen, at g_at
    middle = int(servers / last_n)
    if low < middle < upper:
        slots, needed = _probe_at(bound, curve, context, middle)
        if middle * slots >= needed:
            upper = middle
        else:
            low, g_at, g_low = middle, middle, middle * slots - needed
            upper = min(upper, int(needed / slots) + 1)
    top, servers = _probe_at(bound, curve, context, upper)
    guess, secant = 0, False
    while True:
        lowest = _lowest_utilisation(bound, curve, context.target, upper, top)
        if (lowest, *rank) > rankings.roomiest_key:
            return None
        low = max(low, int(servers / top) - 1)
        if upper - low <= 1:
            return upper, top
        middle, secant = _next_middle(low, upper, top, servers, g_at, g_low, guess, secant)
        slots, needed = _probe_at(bound, curve, context, middle)
        if middle * slots >= needed:
            upper, top, servers, guess = middle, slots, needed, 0
        else:
            low, g_at, g_low = middle, middle, middle * slots - needed
            guess = int(needed / slots) + 1 if slots > 0 else 0


def _next_middle(
    low: int,
    upper: int,
    top: int,
    servers: float,
    g_at: int,
    g_low: float,
    guess: int,
    secant: bool,
) -> tuple[int, bool]:
    """The next replica count to probe, strictly between low and upper, and whether it is
    the secant's. c(R) - B(R) is near linear in R (on one segment of the curve c(R) = R x
    slots(R) is linear in R up to the rounding down), so after a failing probe its own
    guess (B / slots + 1), else the secant between the last failing R (g_at, where c - B
    was g_low) and R_ub (c - B = upper x top - servers), then the one below R_ub if the
    secant's met; halving when a guess is outside (low, upper)."""
    if low < guess < upper:
        middle, secant = guess, False
    elif secant:
        middle, secant = upper - 1, False
    else:
        gap = upper * top - servers - g_low
        middle = g_at + int(-g_low * (upper - g_at) / gap) + 1 if gap > 0 else 0
        secant = True
    if not low < middle < upper:
        middle, secant = (low + upper) // 2, False
    return middle, secant


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


def _probe_at(
    bound: _Bound, curve: ReplicaCurve, context: _Context, middle: int
) -> tuple[int, float]:
    """(slots, B) at `middle` replicas: the slots at the target once prefill takes
    prefill_s / middle, and `_failing_servers` at the slowest speed those slots can have
    (the target, or the KV-limited last point's speed x the share prefill leaves)."""
    _, _, _, _, offered_min, rate, mean_ttft, out, prefill_s, _, budget = bound
    target, users, think = context
    points = curve.points
    last_n, last_speed = points[-1]
    keep = 1 - prefill_s / middle
    slots = _slots_only(points, curve.steps, curve.rising, 1 / (target / keep))
    slowest = keep * last_speed if slots >= last_n and keep * last_speed > target else target
    servers = _failing_servers(rate, mean_ttft, out, budget, users, think, offered_min, slowest)
    return slots, servers


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
    is fewer or without think time, and always more than a_min. a_max, the most offered
    load when no request takes longer than S_max: open loop rate x S_max; closed loop
    users x S_max / (S_max + think) (the plan's own rate users / (S + think) times S rises
    with S)."""
    service_max = mean_ttft + out / (speed_low * (1 - 1e-6))
    if users is None:
        offered_max = rate * service_max
    else:
        offered_max = users * service_max / (service_max + think)
    bound = offered_max * 1.003 + service_max * 3.0 / budget
    if users is not None and (think == 0 or users < bound):
        bound = users
    # more than a_min by a margin: then c(R) >= B(R) also means R > a_min / s_t, so R is
    # at least `_size`'s start even where a_min / s_t is rounded
    least = offered_min * (1 + 1e-9)
    return bound if bound > least else least + 1
