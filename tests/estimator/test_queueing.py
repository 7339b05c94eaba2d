"""The exact finite-source queue M/M/c//N (estimator/queueing.py): closed forms where they
exist, a discrete-event simulation, and Hypothesis properties."""

from __future__ import annotations

import heapq
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.capacity import erlang_c, wait_quantile_s
from estimator.queueing import finite_source_queue


def test_one_server_two_users_by_hand() -> None:
    # N = 2, c = 1, think 1 s, service 1 s: p(n+1)/p(n) = (N - n) S / (Z min(n+1, c))
    # p1 = 2 p0, p2 = 1 x p1 = 2 p0 -> p = (1/5, 2/5, 2/5).
    # busy = p1 + p2 = 0.8; throughput = 0.8 / 1 s = 0.8 req/s.
    # An arrival sees pi(n) ~ (N - n) p(n): (2/5, 2/5, 0) -> waits when n >= 1: 1/2.
    # Its wait is one exponential service (rate 1): P(W > t) = 0.5 e^-t,
    # p95: 0.5 e^-t = 0.05 -> t = ln 10 = 2.3026 s.
    q = finite_source_queue(users=2, servers=1, think_s=1.0, service_s=1.0)
    assert q.utilisation == pytest.approx(0.8)
    assert q.throughput_per_s == pytest.approx(0.8)
    assert q.wait_probability == pytest.approx(0.5)
    assert q.wait_exceeds(1.0) == pytest.approx(0.5 * math.exp(-1.0))
    assert q.wait_quantile_s(0.95) == pytest.approx(math.log(10), rel=1e-6)
    assert q.wait_quantile_s(0.5) == 0.0  # half the arrivals find the server free


def test_enough_servers_nobody_waits() -> None:
    q = finite_source_queue(users=10, servers=10, think_s=5.0, service_s=2.0)
    assert q.wait_probability == 0.0
    assert q.wait_quantile_s(0.95) == 0.0
    # every user alternates think and service: throughput = N / (Z + S) = 10 / 7
    assert q.throughput_per_s == pytest.approx(10 / 7)


def test_many_users_approach_erlang_c() -> None:
    # With N large and the per-user rate small, the finite source tends to M/M/c at the
    # same offered load (Kleinrock vol. 1, 3.9): N = 20,000, offered 40 Erlang on 45 servers.
    users, servers, service = 20_000, 45, 1.0
    think = users * service / 40.0 - service
    q = finite_source_queue(users=users, servers=servers, think_s=think, service_s=service)
    assert q.wait_probability == pytest.approx(erlang_c(servers, 40.0), rel=0.02)


def _simulate(
    users: int, servers: int, think: float, service: float, seed: int
) -> tuple[float, float, float]:
    """Discrete-event simulation of the closed loop: (utilisation, P(wait), wait p95)."""
    rng = random.Random(seed)
    events: list[tuple[float, int, int]] = []  # (time, kind 0 = arrival 1 = done, user)
    for u in range(users):
        heapq.heappush(events, (rng.expovariate(1 / think), 0, u))
    busy, queue, waits = 0, [], []
    busy_time, last, horizon, warmup = 0.0, 0.0, 60_000.0, 2_000.0
    while events:
        now, kind, user = heapq.heappop(events)
        if now > horizon:
            break
        if now > warmup:
            busy_time += busy * (now - max(last, warmup))
        last = now
        if kind == 0:
            if busy < servers:
                busy += 1
                if now > warmup:
                    waits.append(0.0)
                heapq.heappush(events, (now + rng.expovariate(1 / service), 1, user))
            else:
                queue.append((now, user))
        else:
            if queue:
                since, nxt = queue.pop(0)
                if now > warmup:
                    waits.append(now - since)
                heapq.heappush(events, (now + rng.expovariate(1 / service), 1, nxt))
            else:
                busy -= 1
            heapq.heappush(events, (now + rng.expovariate(1 / think), 0, user))
    waits.sort()
    p_wait = sum(w > 0 for w in waits) / len(waits)
    return busy_time / ((horizon - warmup) * servers), p_wait, waits[int(0.95 * len(waits))]


def test_matches_a_discrete_event_simulation() -> None:
    # The planner's worked example scaled down: 40 users, 10 slots, think 30 s, service 7.5 s
    # (offered ~ 40 x 7.5 / 37.5 = 8 of 10 slots).
    q = finite_source_queue(users=40, servers=10, think_s=30.0, service_s=7.5)
    util, p_wait, p95 = _simulate(40, 10, 30.0, 7.5, seed=7)
    assert q.utilisation == pytest.approx(util, abs=0.02)
    assert q.wait_probability == pytest.approx(p_wait, abs=0.03)
    assert q.wait_quantile_s(0.95) == pytest.approx(p95, abs=0.6)


@settings(max_examples=60, deadline=None)
@given(
    users=st.integers(1, 400),
    servers=st.integers(1, 120),
    think=st.floats(0.5, 120.0),
    service=st.floats(0.1, 60.0),
)
def test_properties(users: int, servers: int, think: float, service: float) -> None:
    q = finite_source_queue(users=users, servers=servers, think_s=think, service_s=service)
    assert 0.0 <= q.utilisation <= 1.0 + 1e-9
    assert 0.0 <= q.wait_probability <= 1.0 + 1e-9
    # Little's law over the loop: throughput <= N / (Z + S) (equal without waiting)
    assert q.throughput_per_s <= users / (think + service) * (1 + 1e-9)
    # P(W > t) falls with t; the p95 wait is no shorter than the p50
    assert q.wait_exceeds(0.0) >= q.wait_exceeds(service) - 1e-12
    assert q.wait_quantile_s(0.95) >= q.wait_quantile_s(0.5)
    more = finite_source_queue(users=users, servers=servers + 1, think_s=think, service_s=service)
    assert more.wait_probability <= q.wait_probability + 1e-9


@settings(max_examples=300, deadline=None)
@given(
    users=st.integers(1, 3000),
    extra=st.integers(0, 3000),
    think=st.floats(0.5, 120.0),
    service=st.floats(0.2, 60.0),
)
def test_mmc_at_the_loops_own_rate_never_waits_less_than_the_exact_queue(
    users: int, extra: int, think: float, service: float
) -> None:
    # The planner sizes closed loops on M/M/c with arrivals at users / (S + think): that
    # must never show less waiting than the exact finite-source queue with the same S, or
    # a plan could pass that the exact queue misses.
    servers = 1 + extra % (users + 5)
    offered = users * service / (service + think)
    if offered >= servers:
        return  # M/M/c unstable: the planner refuses the replica count anyway
    wait = erlang_c(servers, offered)
    mmc_p95 = wait_quantile_s(
        quantile=0.95, wait_probability=wait, servers=servers, offered_load=offered,
        service_s=service,
    )  # fmt: skip
    exact = finite_source_queue(users=users, servers=servers, think_s=think, service_s=service)
    assert exact.wait_probability <= wait + 1e-9
    assert exact.wait_quantile_s(0.95) <= mmc_p95 + 1e-6
