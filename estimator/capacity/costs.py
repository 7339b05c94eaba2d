"""A plan's money and hardware: rent, owning, break-even, the purchase price and the
machines (estimator/cost.py's formulas per replica)."""

from __future__ import annotations

import math
from typing import Any

from estimator.capacity.curves import per_user_tokens_per_s
from estimator.capacity.sizing import _mix, _Sizing
from estimator.capacity.types import Candidate, Horizon, Load, Plan, ServiceLevel, _Costs
from estimator.cost import (
    Ownership,
    monthly_rent_usd,
    rent_vs_buy,
    system_power_w,
    system_purchase_usd,
)


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
    price (Candidate.price_key), not per candidate: many quants share one card."""
    tp = candidate.tensor_parallel
    host = not candidate.host_included
    key = candidate.price_key
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
    costs = cache[key] = _Costs(rent, owned, break_even, cheapest)
    return costs
