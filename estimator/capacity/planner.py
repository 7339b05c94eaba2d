"""`plan`: every candidate sized, priced and ranked (`_plan_reference`), or the pruned
path when it finds a plan (estimator.capacity.pruned)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

from estimator.api import RequestError
from estimator.capacity.costs import _priced, _replica_costs
from estimator.capacity.pruned import _plan_pruned
from estimator.capacity.queue import _ErlangTables
from estimator.capacity.sizing import _size, _Sizing, _validate
from estimator.capacity.types import (
    Candidate,
    Horizon,
    Load,
    NearMiss,
    Plan,
    PlanResult,
    ServiceLevel,
    _Costs,
)


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
        costs = prices.get(candidate.price_key) or _replica_costs(candidate, horizon, prices)
        replicas = outcome.serving + spare
        row = (costs.cheapest_usd * replicas, replicas * candidate.tensor_parallel, index)
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
