"""The exact finite-source queue M/M/c//N, for closed-loop users.

N users each think for an exponential time (mean think_s), then send one request that
needs a slot for an exponential service time (mean service_s); c slots serve in parallel,
first come first served. The number of requests in the system is a birth-death process
(the "machine repair" model with c repairmen; Gross & Harris, Fundamentals of Queueing
Theory, section 2.8; Kleinrock, Queueing Systems vol. 1, section 3.9):

    birth rate at n:  (N - n) / think_s          death rate at n:  min(n, c) / service_s
    p(n + 1) / p(n) = (N - n) x service_s / (think_s x min(n + 1, c))

An arriving request sees the system as it is with its own user taken out (the arrival
theorem for closed networks): pi(n) = (N - n) p(n) / sum((N - m) p(m)). It waits when
n >= c, and then for n - c + 1 service completions at rate c / service_s, an Erlang
(gamma) time, so

    P(W > t) = sum over n >= c of pi(n) x P(Poisson(c t / S) <= n - c)

Throughput X = sum p(n) min(n, c) / S; utilisation = sum p(n) min(n, c) / c. Unlike the
M/M/c (Erlang C) approximation with arrivals at users / (S + think), the arrival rate here
follows from the service time itself: users served faster come back sooner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Tail terms below this weight are dropped (their total is far below any quantile asked).
_NEGLIGIBLE = 1e-15
_BISECTION_ROUNDS = 60
# States whose probability is below exp(-_WINDOW_LOG) x the mode's are not summed.
_WINDOW_LOG = 70.0


@dataclass(frozen=True, slots=True)
class FiniteSourceQueue:
    """M/M/c//N in steady state (module docstring)."""

    users: int
    servers: int
    think_s: float
    service_s: float
    throughput_per_s: float  # X, completed requests per second
    utilisation: float  # mean busy slots / c
    wait_probability: float  # P(an arriving request waits)
    # pi(n) for n = c, c + 1, ...: the tail an arrival sees, for the wait quantiles
    tail: tuple[float, ...]

    def wait_exceeds(self, wait_s: float) -> float:
        """P(W > wait_s) for an arriving request."""
        if not self.tail or wait_s < 0:
            return self.wait_probability if wait_s < 0 else 0.0
        x = self.servers * wait_s / self.service_s
        # P(W > t) = sum_k pi(c + k) P(Poisson(x) <= k) = sum_j Poisson(j; x) x T(j),
        # T(j) = sum_{k >= j} pi(c + k): one pass over the tail.
        total, weight = 0.0, math.exp(-x)
        remaining = self.wait_probability
        for j, share in enumerate(self.tail):
            total += weight * remaining
            remaining -= share
            weight *= x / (j + 1)
            if remaining <= _NEGLIGIBLE:
                break
        return min(total, self.wait_probability)

    def wait_quantile_s(self, quantile: float) -> float:
        """The q-quantile of the wait: the least t with P(W > t) <= 1 - q (0 when at least
        a share q of the arrivals find a free slot), by bisection."""
        tail = 1 - quantile
        if self.wait_probability <= tail:
            return 0.0
        low, high = 0.0, self.service_s
        while self.wait_exceeds(high) > tail:
            high *= 2
        for _ in range(_BISECTION_ROUNDS):
            middle = (low + high) / 2
            if self.wait_exceeds(middle) > tail:
                low = middle
            else:
                high = middle
            if high - low <= 1e-9 * max(high, 1e-9):
                break
        return high


def finite_source_queue(
    *, users: int, servers: int, think_s: float, service_s: float
) -> FiniteSourceQueue:
    """Solve M/M/c//N (module docstring) for `users` N, `servers` c, mean think and
    service times. Raises ValueError for think_s <= 0 or service_s <= 0 (with no think
    time every user always has a request: the planner then gives each user a slot).

    The stationary distribution is unimodal (its ratio p(n + 1) / p(n) falls with n), so
    only the states within exp(-_WINDOW_LOG) of the mode are summed, a window of
    O(sqrt(N)) states around it rather than all N + 1: what is left out weighs less than
    1e-30 of the total."""
    if think_s <= 0 or service_s <= 0:
        raise ValueError("think_s and service_s must be positive")
    if users <= 0:
        return FiniteSourceQueue(users, servers, think_s, service_s, 0.0, 0.0, 0.0, ())
    c = max(servers, 1)
    ratio = service_s / think_s

    def step(n: int) -> float:  # log p(n + 1) - log p(n)
        return math.log((users - n) * ratio / min(n + 1, c))

    mode = _mode(users, c, ratio)
    low, high, logs = mode, mode, {mode: 0.0}
    while low > 0 and logs[low] > -_WINDOW_LOG:
        logs[low - 1] = logs[low] - step(low - 1)
        low -= 1
    while high < users and logs[high] > -_WINDOW_LOG:
        logs[high + 1] = logs[high] + step(high)
        high += 1
    probs = [math.exp(logs[n]) for n in range(low, high + 1)]
    norm = sum(probs)
    busy = sum(p * min(n, c) for n, p in zip(range(low, high + 1), probs, strict=True)) / norm
    arrivals = [(users - n) * p for n, p in zip(range(low, high + 1), probs, strict=True)]
    arrivals_total = sum(arrivals)
    first = max(c - low, 0)
    tail = tuple(a / arrivals_total for a in arrivals[first:]) if c <= high else ()
    return FiniteSourceQueue(
        users=users,
        servers=servers,
        think_s=think_s,
        service_s=service_s,
        throughput_per_s=busy / service_s,
        utilisation=busy / c,
        wait_probability=min(1.0, sum(tail)),
        tail=_trim(tail),
    )


def _mode(users: int, servers: int, ratio: float) -> int:
    """The most likely number in the system: the first n whose ratio p(n + 1) / p(n) =
    (N - n) x ratio / min(n + 1, c) is at most 1 (below c it is where (N - n) ratio <=
    n + 1, from c on where (N - n) ratio <= c)."""
    below = math.ceil((users * ratio - 1) / (1 + ratio))
    if below < servers:
        return min(max(below, 0), users)
    return min(max(math.ceil(users - servers / ratio), servers), users)


def _trim(tail: tuple[float, ...]) -> tuple[float, ...]:
    """Drop the tail's negligible end (the terms after which less than _NEGLIGIBLE is left)."""
    remaining = sum(tail)
    for i, share in enumerate(tail):
        remaining -= share
        if remaining <= _NEGLIGIBLE:
            return tail[: i + 1]
    return tail
