"""The work budget of the API's expensive operations: estimates (one or a batch), sweeps,
compare, and saving or recomputing a configuration.

A request is priced before it runs, in work units: one unit is about what one ordinary
estimate costs (Llama 3.1 8B on one card, no analysis: about 7 ms of one core on the
development machine). Then, in this order:
- a request costing more than API_COST_PER_REQUEST is refused with 413 (split it; a sweep,
  which cannot be split, is charged that much at most instead);
- a user with API_CONCURRENT_PER_USER priced requests in flight gets 429 (the bulkhead:
  one member's scripts hold at most that many workers);
- the cost is charged to the user's minute (API_COST_PER_MINUTE_USER, all tokens and the
  session together) and to the token's (API_COST_PER_MINUTE_TOKEN); over either, 429 with
  Retry-After until the minute is over, and nothing is charged;
- the work runs under a time limit (API_WORK_DEADLINE_S): a batch answers the items it
  did not reach with an error each, a sweep stops with 503 (catalog.sizing.deadline).

Every refusal is in the API's one error shape with the figures beside it:
{"errors": {"detail": [...]}, "detail": ..., "limit": "<setting>", "allowed": n, "cost": n}.
The counts live in sizing_site.core.counters (the shared cache, local memory while it is
unreachable).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework import status
from rest_framework.request import Request

from catalog.sizing import deadline
from sizing_site.apikit.errors import OverLimit
from sizing_site.core.counters import COUNTERS

# Calibration (Django's test client, SQLite, one core of the 2-core build machine,
# 2026-12-05; each batch at contexts nothing had sized):
# - an estimate through the configurator's sizing service, Llama 3.1 8B (32 layers): 7 ms;
# - the same with "analysis": 65-73 ms, ten times as much: the nine sections (offers, rent
#   vs buy, owning, recommended cards, quant matrix, memory by context, make it fit, KV
#   alternatives, fine-tuning) cost about one estimate each;
# - time grows with depth: 512 layers 83 ms plain and 375 ms analysed, 2,048 layers
#   190 ms and 1,466 ms (the estimator walks the layers one by one);
# - a sweep point (one card under a model, one model on a card) costs a quarter of an
#   estimate or less once the estimator's per-model parts are warm (68 cards in 43 ms;
#   144 models in 240-380 ms); a card sweep on a cold process can take 100 times that
#   (weights sized per quant), which the time limit bounds, not the price.
LAYERS_PER_UNIT = 64
ANALYSIS_SECTIONS = 9
SWEEP_POINTS_PER_UNIT = 4
# A priced request's slot outlives its time limit by this much: a worker killed mid-request
# leaves a slot that frees itself.
SLOT_GRACE_S = 60
MINUTE_S = 60


def size_factor(layers: int) -> float:
    """A model's cost against an ordinary one: its layers over 64, at least 1."""
    return max(1.0, layers / LAYERS_PER_UNIT)


def estimate_units(*, layers: int, sections: int = 0) -> float:
    """One estimate of a model this deep, with `sections` extra parts (the analysis's
    ANALYSIS_SECTIONS, the estimator's recommendations 1): size x (1 + sections)."""
    return size_factor(layers) * (1 + sections)


def sweep_units(layers: Iterable[int]) -> float:
    """A sweep over points of these depths (cards under one model: the model's depth each;
    models on one card: each model's): sum of sizes / SWEEP_POINTS_PER_UNIT."""
    return sum(size_factor(n) for n in layers) / SWEEP_POINTS_PER_UNIT


def price(units: float) -> int:
    """Whole work units, at least 1."""
    return max(1, math.ceil(units))


@dataclass(frozen=True)
class Limits:
    per_request: int
    per_minute_user: int
    per_minute_token: int
    concurrent: int
    deadline_s: int


def limits() -> Limits:
    """The settings, read at each request (tests and operators change them)."""
    return Limits(
        per_request=settings.API_COST_PER_REQUEST,
        per_minute_user=settings.API_COST_PER_MINUTE_USER,
        per_minute_token=settings.API_COST_PER_MINUTE_TOKEN,
        concurrent=settings.API_CONCURRENT_PER_USER,
        deadline_s=settings.API_WORK_DEADLINE_S,
    )


def _minute() -> tuple[int, int]:
    """The current minute's number and the seconds left in it (a fixed window)."""
    now = time.time()
    return int(now // MINUTE_S), MINUTE_S - int(now % MINUTE_S)


def _charge(key: str, cost: int, allowed: int, setting: str) -> None:
    """Add `cost` to a minute's counter, or refuse (429) and take it back."""
    minute, left = _minute()
    counter = f"api-cost:{key}:{minute}"
    spent = COUNTERS.bump(counter, cost, timeout=2 * MINUTE_S)
    if spent <= allowed:
        return
    COUNTERS.bump(counter, -cost, timeout=2 * MINUTE_S)
    message = _(
        "This request costs %(cost)d work units and %(spent)d of the %(allowed)d a minute "
        "allows are spent; try again in %(left)d s."
    ) % {"cost": cost, "spent": spent - cost, "allowed": allowed, "left": left}
    raise OverLimit(
        status.HTTP_429_TOO_MANY_REQUESTS,
        message,
        limit=setting,
        allowed=allowed,
        cost=cost,
        spent=spent - cost,
        retry_after_s=left,
    )


def _take_slot(user_key: object, cost: int, most: int, ttl: int) -> str:
    """One of the user's `most` in-flight slots (an atomic add each), or 429."""
    for number in range(most):
        slot = f"api-inflight:{user_key}:{number}"
        if COUNTERS.add(slot, 1, timeout=ttl):
            return slot
    message = _(
        "At most %(most)d expensive requests may run at once for one user; wait for one to finish."
    ) % {"most": most}
    raise OverLimit(
        status.HTTP_429_TOO_MANY_REQUESTS,
        message,
        limit="API_CONCURRENT_PER_USER",
        allowed=most,
        cost=cost,
        in_flight=most,
        retry_after_s=1,
    )


@contextmanager
def spend(request: Request, units: float, *, divisible: bool = True) -> Iterator[None]:
    """Run the block as a priced request of `units` work units (see the module's doc).
    Raises OverLimit (413, 429, or 503 when a sweep inside passes the time limit).

    A request that cannot be made smaller (`divisible=False`: a sweep covers every card or
    model whatever its filters and page) is never too large: it is charged at most the
    per-request budget, and its time limit bounds it."""
    cost, limit = price(units), limits()
    if not divisible:
        cost = min(cost, limit.per_request)
    if cost > limit.per_request:
        message = _(
            "This request costs %(cost)d work units; one request may cost at most "
            "%(allowed)d. Send fewer items."
        ) % {"cost": cost, "allowed": limit.per_request}
        raise OverLimit(
            status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            message,
            limit="API_COST_PER_REQUEST",
            allowed=limit.per_request,
            cost=cost,
        )
    user_key = request.user.pk
    slot = _take_slot(user_key, cost, limit.concurrent, limit.deadline_s + SLOT_GRACE_S)
    try:
        _charge(f"user:{user_key}", cost, limit.per_minute_user, "API_COST_PER_MINUTE_USER")
        # Only token authentication sets request.auth (a session leaves it None).
        if request.auth is not None:
            _charge_token(request.auth.pk, user_key, cost, limit)
        with deadline.deadline(limit.deadline_s):
            try:
                yield
            except deadline.DeadlinePassed:
                raise time_limit_passed(cost, limit.deadline_s) from None
    finally:
        COUNTERS.delete(slot)


def _charge_token(token_key: object, user_key: object, cost: int, limit: Limits) -> None:
    """The token's own minute; when it refuses, the user's charge is taken back."""
    try:
        _charge(f"token:{token_key}", cost, limit.per_minute_token, "API_COST_PER_MINUTE_TOKEN")
    except OverLimit:
        minute, _left = _minute()
        COUNTERS.bump(f"api-cost:user:{user_key}:{minute}", -cost, timeout=2 * MINUTE_S)
        raise


def time_limit_passed(cost: int, seconds: int) -> OverLimit:
    message = _(
        "The work did not finish within the time limit of %(s)d s; try again later (a "
        "card sweep keeps what it finished)."
    ) % {"s": seconds}
    return OverLimit(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        message,
        limit="API_WORK_DEADLINE_S",
        allowed=seconds,
        cost=cost,
    )


def deadline_error() -> dict[str, list[str]]:
    """A batch item that the time limit left unsized, in the batch's per-item shape."""
    seconds = limits().deadline_s
    message = _(
        "Not sized: the request's time limit of %(s)d s passed first; send this item again."
    ) % {"s": seconds}
    return {"deadline": [message]}
