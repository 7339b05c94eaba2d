"""The planner's inputs and outputs: frozen, keyword-only dataclasses (docs/capacity.md,
"Inputs and defaults"), and the bounds of its search."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

DEFAULT_LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MAX_REPLICAS = 1000  # bounds the search; a plan past it is reported as a miss


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
    # what the per-replica costs depend on, and the key they are kept under for one plan
    # (costs._replica_costs): built once here rather than per candidate in every plan
    price_key: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        key = (
            self.tensor_parallel,
            self.rent_usd_per_card_hour,
            self.purchase_usd_per_card,
            self.power_w_per_card,
            self.electricity_usd_per_kwh,
            self.host_included,
        )
        object.__setattr__(self, "price_key", key)


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


class _Costs(NamedTuple):  # a tuple, not a frozen dataclass: one per price in every plan
    """Per replica and month (costs._replica_costs): rent, owning, the break-even months of
    buying vs renting, and the lower of rent and owning (inf: no price)."""

    rent_usd: float | None
    owned_usd: float | None
    break_even_months: float | None
    cheapest_usd: float


# The most of a prompt the planner takes from the prefix cache: a request always brings
# some new tokens (its question).
MAX_CACHED_PROMPT_SHARE = 0.95
