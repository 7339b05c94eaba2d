"""Queueing: Erlang C over the sequence slots of all replicas, and the wait quantiles."""

from __future__ import annotations

import math

# Erlang B is started this many standard deviations (sqrt(a)) below the offered load: the
# recurrence damps an error in its start by prod(j / a) ~ exp(-7^2 / 2) ~ 2e-11 (see erlang_c).
_ERLANG_START_SIGMAS = 7.0
# Past this 1/B the recurrence stops: C < 1e-12 / (1 - a/c), reported as 0 (no wait).
_NEGLIGIBLE_INVERSE_B = 1e12


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
