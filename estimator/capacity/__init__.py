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

from estimator.api import RequestError
from estimator.capacity.curves import per_user_tokens_per_s, replica_curve, slots_at
from estimator.capacity.planner import plan
from estimator.capacity.queue import erlang_c, wait_quantile_s
from estimator.capacity.types import (
    DEFAULT_LADDER,
    MAX_CACHED_PROMPT_SHARE,
    MAX_REPLICAS,
    Candidate,
    Horizon,
    Load,
    NearMiss,
    Plan,
    PlanResult,
    ReplicaCurve,
    ServiceLevel,
)

__all__ = [
    "DEFAULT_LADDER",
    "MAX_CACHED_PROMPT_SHARE",
    "MAX_REPLICAS",
    "Candidate",
    "Horizon",
    "Load",
    "NearMiss",
    "Plan",
    "PlanResult",
    "ReplicaCurve",
    "RequestError",
    "ServiceLevel",
    "erlang_c",
    "per_user_tokens_per_s",
    "plan",
    "replica_curve",
    "slots_at",
    "wait_quantile_s",
]
