"""The capacity planner (estimator/capacity.py, docs/capacity.md): queueing arithmetic,
curves, the planner's worked example step by step, properties and bad input."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.api import RequestError, parse_request
from estimator.capacity import (
    MAX_REPLICAS,
    Candidate,
    Horizon,
    Load,
    ReplicaCurve,
    ServiceLevel,
    erlang_c,
    per_user_tokens_per_s,
    plan,
    replica_curve,
    slots_at,
    wait_quantile_s,
)
from estimator.queueing import finite_source_queue

CONFIGS = Path(__file__).resolve().parents[2] / "estimator/data/validation/configs"

# --- queueing ----------------------------------------------------------------------------


def _erlang_c_by_sums(c: int, a: float) -> float:
    """The textbook closed form, summed directly (Kleinrock vol. 1 eq. 3.42):
    C = (a^c / c! x c / (c - a)) / (sum_{k<c} a^k / k! + a^c / c! x c / (c - a))."""
    terms = [1.0]  # a^k / k!, built by products so that a^c alone never overflows
    for k in range(1, c + 1):
        terms.append(terms[-1] * a / k)
    tail = terms[c] * c / (c - a)
    return tail / (math.fsum(terms[:c]) + tail)


def test_it_gives_the_textbook_erlang_c_for_two_servers() -> None:
    # c = 2, a = 1: tail = 1/2 x 2/1 = 1; sum = 1 + 1 = 2; C = 1 / 3
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3, rel=1e-12)


def test_it_gives_the_textbook_erlang_c_for_ten_servers() -> None:
    # c = 10, a = 8 (80 % busy): C = 0.4092 in the Erlang C tables
    assert erlang_c(10, 8.0) == pytest.approx(0.40918, abs=5e-6)


@pytest.mark.parametrize(("c", "a"), [(1, 0.5), (5, 0.5), (75, 61.7), (120, 100.0), (150, 140.0)])
def test_its_windowed_recurrence_matches_the_closed_form(c: int, a: float) -> None:
    assert erlang_c(c, a) == pytest.approx(_erlang_c_by_sums(c, a), rel=1e-9)


def test_it_saturates_at_or_above_full_load() -> None:
    assert erlang_c(4, 4.0) == 1.0
    assert erlang_c(4, 9.0) == 1.0
    assert erlang_c(4, 0.0) == 0.0


def test_it_takes_wait_quantiles_from_the_exponential_tail() -> None:
    # P(W > t) = C exp(-(c - a) t / S): C = 0.5, c = 2, a = 1, S = 10 s
    # p95: 10 x ln(0.5 / 0.05) / (2 - 1) = 10 ln 10 = 23.03 s; p50: 10 x ln(0.5 / 0.5) = 0
    args: dict[str, Any] = {"wait_probability": 0.5, "servers": 2, "offered_load": 1.0}
    assert wait_quantile_s(quantile=0.95, service_s=10, **args) == pytest.approx(23.02585)
    assert wait_quantile_s(quantile=0.5, service_s=10, **args) == 0.0
    # fewer than 5 % wait: no wait at p95
    args["wait_probability"] = 0.04
    assert wait_quantile_s(quantile=0.95, service_s=10, **args) == 0.0


# --- curves -------------------------------------------------------------------------------

TWO_POINTS = ReplicaCurve(
    points=((1, 50.0), (3, 25.0)), max_sequences=3, prefill_tokens_per_s=1e9, ttft_s=0.1
)


def test_it_interpolates_the_step_time_linearly() -> None:
    # steps 1/50 = 0.02 s and 1/25 = 0.04 s; at n = 2: 0.03 s = 33.33 tok/s
    assert per_user_tokens_per_s(TWO_POINTS, 2) == pytest.approx(100 / 3)
    assert per_user_tokens_per_s(TWO_POINTS, 3) == pytest.approx(25.0)


def test_it_counts_the_slots_that_keep_the_speed() -> None:
    # 30 tok/s = 0.0333 s a step: n = 1 + (0.0333 - 0.02) / (0.04 - 0.02) x 2 = 2.33 -> 2
    assert slots_at(TWO_POINTS, 30) == 2
    assert slots_at(TWO_POINTS, 25) == 3
    assert slots_at(TWO_POINTS, 10) == 3  # the KV limit
    assert slots_at(TWO_POINTS, 60) == 0


def test_it_sizes_an_open_loop_by_erlang_c() -> None:
    # One sequence a replica at 40 tok/s, 400 output tokens, no-load TTFT 0: S = 10 s.
    # 48 requests a minute: lambda = 0.8/s, a = 8. At 10 replicas C(10, 8) = 0.4092:
    # p95 wait = 10 x ln(0.4092 / 0.05) / (10 - 8) = 10.51 s <= 11 s. At 9: C(9, 8) = 0.6
    # and p95 = 10 x ln(0.6 / 0.05) / 1 = 24.9 s: too slow.
    # (The target is a hair below 40 tok/s: prefill takes a share, ~1e-15, of every replica.)
    curve = ReplicaCurve(points=((1, 40.0),), max_sequences=1, prefill_tokens_per_s=1e15, ttft_s=0)
    result = plan(
        load=Load(requests_per_minute=48, prompt_tokens=1, output_tokens=400),
        service=ServiceLevel(ttft_p95_s=11, tokens_per_s_per_user=39.9),
        candidates=[Candidate(label="flat", curve=curve, rent_usd_per_card_hour=1.0)],
    )
    best = result.cheapest
    assert best is not None
    assert best.replicas == 10
    assert best.service_time_s == pytest.approx(10.0)
    assert best.utilisation == pytest.approx(0.8, rel=1e-6)
    assert best.wait_probability == pytest.approx(0.40918, abs=1e-4)
    assert best.ttft_p95_s == pytest.approx(10 * math.log(0.40918 / 0.05) / 2, rel=1e-4)
    # rent: 10 cards x 1 USD/h x 24 h x 365/12 d = 7,300 USD a month
    assert best.monthly_rent_usd == pytest.approx(7300)


# --- the planner's worked example (docs/capacity.md) -----------------------------------------

L40S = {"name": "L40S", "memory_gb": 48, "bandwidth_gbps": 864, "fp16_tflops": 362,
        "fp8_tflops": 733, "int8_tops": 733, "interconnect_gbps": 32}  # fmt: skip
H100 = {"name": "H100 SXM5 80GB", "memory_gb": 80, "bandwidth_gbps": 3350,
        "fp16_tflops": 989.4, "fp8_tflops": 1979, "int8_tops": 1979,
        "interconnect_gbps": 450}  # fmt: skip
PRO_6000 = {"name": "RTX PRO 6000 Blackwell", "memory_gb": 96, "bandwidth_gbps": 1792,
            "fp16_tflops": 503.8, "fp8_tflops": 1007.6, "int8_tops": 1007.6,
            "interconnect_gbps": 64}  # fmt: skip
FP8 = {"format": "hf", "dtype": "fp8"}
Q4_K_M = {"format": "gguf", "quant": "Q4_K_M"}
EXAMPLE_LOAD = Load(users=200, think_s=30, prompt_tokens=1000, output_tokens=400)
EXAMPLE_SLO = ServiceLevel(ttft_p95_s=1.5, tokens_per_s_per_user=30, spare_replicas=1)


def _request(device: dict[str, Any], tp: int, engine: str, weights: dict[str, Any]) -> dict:
    config = json.loads((CONFIGS / "Qwen__Qwen3-32B.json").read_text())
    return {
        "model": {"hf_config": config},
        "device": {**device, "count": tp},
        "engine": {"name": engine},
        "weights": weights,
        "workload": {"context_tokens": 8192, "prompt_tokens": 1000, "output_tokens": 400,
                     "tensor_parallel": tp},
    }  # fmt: skip


@functools.cache
def _example() -> tuple[Candidate, ...]:
    # Example prices, inputs of the example and not catalog facts: the org's 4 x L40S
    # machine is already paid for (350 W a card); H100 SXM rents at 2.99 USD/h a card; an
    # RTX PRO 6000 costs 8,500 USD (600 W), or rents at 1.79 USD/h.
    ours = {"label": "4x L40S (ours)", "cards_available": 4, "power_w_per_card": 350}
    cloud = {"label": "H100 cloud", "rent_usd_per_card_hour": 2.99}
    buy = {"label": "RTX PRO 6000 (buy)", "purchase_usd_per_card": 8500,
           "power_w_per_card": 600, "rent_usd_per_card_hour": 1.79}  # fmt: skip
    rows: list[tuple[dict[str, Any], dict[str, Any], int, str, dict[str, Any], str]] = [
        *[(ours, L40S, tp, "vllm", FP8, "fp8") for tp in (1, 2, 4)],
        (ours, L40S, 1, "llama.cpp", Q4_K_M, "Q4_K_M"),
        *[(cloud, H100, tp, "vllm", FP8, "fp8") for tp in (1, 2)],
        *[(buy, PRO_6000, tp, "vllm", FP8, "fp8") for tp in (1, 2)],
        (buy, PRO_6000, 1, "llama.cpp", Q4_K_M, "Q4_K_M"),
    ]
    return tuple(
        Candidate(engine=engine, quant=quant, tensor_parallel=tp,
                  curve=replica_curve(parse_request(_request(device, tp, engine, weights))),
                  **offer)
        for offer, device, tp, engine, weights, quant in rows
    )  # fmt: skip


def test_it_builds_a_replica_curve_from_the_estimator() -> None:
    curve = _example()[-1].curve  # RTX PRO 6000, llama.cpp Q4_K_M
    # 34 sequences of 8,192 tokens fit; ladder 1, 2, 4, 8, 16, 32 and the limit 34
    assert curve.max_sequences == 34
    assert [n for n, _ in curve.points] == [1, 2, 4, 8, 16, 32, 34]
    assert curve.points[0][1] == pytest.approx(59.45, rel=1e-3)
    assert curve.prefill_tokens_per_s == pytest.approx(3350.2, rel=1e-3)
    assert curve.ttft_s == pytest.approx(0.3153, rel=1e-3)
    # speeds fall as sequences share the card
    speeds = [speed for _, speed in curve.points]
    assert speeds == sorted(speeds, reverse=True)


def test_it_builds_a_serving_curve_for_vllm() -> None:
    curve = _example()[6].curve  # RTX PRO 6000, vLLM FP8, TP 1
    # vLLM-like engines: the batched serving model's closed-loop curve, the other users'
    # prompts already in each step (no prefill share taken out again), up to the
    # sequences the KV pool admits at 1,000 + 400 / 2 tokens (157), not 8,192-token ones
    assert curve.prefill_in_steps
    assert curve.max_sequences == 157
    assert [n for n, _ in curve.points] == [1, 2, 4, 8, 16, 32, 64, 128, 157]
    speeds = [speed for _, speed in curve.points]
    assert speeds == sorted(speeds, reverse=True)


def test_it_works_the_example_step_by_step() -> None:
    result = plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=_example())
    best = result.cheapest
    assert best is not None
    # vLLM FP8 on one RTX PRO 6000 a replica now beats llama.cpp Q4_K_M: batched serving
    # runs 16 users a card at 30 tok/s where llama.cpp runs 12 (and only 34 sequences fit).
    assert (best.label, best.engine, best.quant, best.tensor_parallel) == (
        "RTX PRO 6000 (buy)", "vllm", "fp8", 1)  # fmt: skip
    curve = _example()[6].curve
    (n16, v16), (n32, v32) = curve.points[4], curve.points[5]
    # 1. Slots: 30 tok/s is a step of 0.033333 s, between n = 16 (1 / v16) and 32:
    #    n = 16 + (0.033333 - 1 / v16) / (1 / v32 - 1 / v16) x 16 = 16.5 -> 16 slots. The
    #    curve already carries the prompts' prefill: no share taken out (p = 0).
    n = n16 + (1 / 30 - 1 / v16) / (1 / v32 - 1 / v16) * (n32 - n16)
    assert n == pytest.approx(16.5, abs=0.1)
    assert best.slots_per_replica == 16 and best.prefill_busy_share == 0
    # 2. Speed at 16 slots: v16 = 30.28 tok/s; service S = 0.2292 + 400 / 30.28 = 13.439 s.
    assert best.tokens_per_s_per_user == pytest.approx(v16) == pytest.approx(30.28, rel=1e-3)
    service_s = curve.ttft_s + 400 / v16
    assert best.service_time_s == pytest.approx(service_s) == pytest.approx(13.439, rel=1e-3)
    # 3. Users served faster than the target come back sooner: the rate is 200 / (S + 30)
    #    = 4.6041/s with the plan's own S, a = 4.6041 x 13.439 = 61.88 of c = 5 x 16 = 80
    #    slots (utilisation 0.774), Erlang C(80, 61.88) = 0.018 <= 0.05: no wait at p95, TTFT
    #    p95 = p50 = the no-load 0.2292 s <= 1.5 s. The exact finite-source queue M/M/c//N
    #    (N = 200, 30 s think, the same S) waits less: throughput 4.604/s, 0.4 % wait.
    assert best.arrival_rate_per_s == pytest.approx(200 / (service_s + 30))
    assert best.utilisation == pytest.approx(0.774, abs=1e-3)
    assert best.wait_probability == pytest.approx(0.0177, abs=1e-3)
    exact = finite_source_queue(users=200, servers=80, think_s=30, service_s=service_s)
    assert exact.throughput_per_s == pytest.approx(4.604, abs=1e-3)
    assert exact.utilisation <= best.utilisation and exact.wait_probability < 0.005
    assert exact.wait_quantile_s(0.95) == 0.0
    assert best.ttft_p95_s == best.ttft_p50_s == pytest.approx(curve.ttft_s)
    # 4. Four replicas (c = 64) miss: the exact queue is 95 % busy, 48 % of the requests
    #    wait and the p95 wait is 3.39 s > 1.5 - 0.2292.
    four = finite_source_queue(users=200, servers=64, think_s=30, service_s=service_s)
    assert four.wait_probability == pytest.approx(0.473, abs=1e-3)
    assert four.wait_quantile_s(0.95) == pytest.approx(3.391, abs=1e-2)
    # 5. The spare replica: 5 + 1 = 6 cards. Owning a replica a month: (8,500 + 2,000 host)
    #    / 36 = 291.67 + (600 + 150) W x 24 h x 365/12 d = 547.5 kWh x 0.15 = 82.13 USD:
    #    373.79 x 6 = 2,242.75. Renting: 1.79 x 730 h = 1,306.70 x 6 = 7,840.20.
    #    Break-even: 10,500 / (1,306.70 - 82.13) = 8.57 months.
    assert (best.replicas, best.cards) == (6, 6)
    assert best.monthly_owned_usd == pytest.approx(2242.75, abs=0.01)
    assert best.monthly_rent_usd == pytest.approx(7840.20, abs=0.01)
    assert best.monthly_usd == best.monthly_owned_usd
    assert best.break_even_months == pytest.approx(8.574, rel=1e-3)
    # llama.cpp Q4_K_M on the same card still plans, dearer: 6 + 1 cards, 2,616.54 USD
    q4 = next(p for p in result.plans if p.quant == "Q4_K_M")
    assert (q4.cards, q4.monthly_usd) == (7, pytest.approx(2616.54, abs=0.01))


def test_it_ranks_the_example_by_speed_and_headroom() -> None:
    result = plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=_example())
    assert result.fastest is not None and result.most_headroom is not None
    # H100 TP 2: no-load TTFT 0.141 s, 104 slots a replica, 1 + 1 replicas = 4 cards
    assert (result.fastest.label, result.fastest.tensor_parallel) == ("H100 cloud", 2)
    assert (result.fastest.replicas, result.fastest.cards) == (2, 4)
    assert result.fastest.monthly_rent_usd == pytest.approx(4 * 2.99 * 730)
    assert result.most_headroom.utilisation == min(p.utilisation for p in result.plans)
    costs = [p.monthly_usd or math.inf for p in result.plans]
    assert costs == sorted(costs)
    assert result.nearest_miss is None


def test_it_names_the_nearest_miss_when_our_machine_cannot_do_it() -> None:
    ours = [c for c in _example() if c.label == "4x L40S (ours)"]
    result = plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=ours)
    assert result.plans == () and result.cheapest is None
    miss = result.nearest_miss
    assert miss is not None
    # vLLM FP8 on one L40S: one user alone decodes at 24.0 tok/s < 30
    assert (miss.engine, miss.tensor_parallel) == ("vllm", 1)
    assert miss.field == "service.tokens_per_s_per_user"
    assert miss.achievable == pytest.approx(24.03, rel=1e-3)
    assert miss.fixes == (("service.tokens_per_s_per_user", miss.achievable),)
    # llama.cpp Q4_K_M on one L40S reaches 30 tok/s but needs far more cards than 4
    cards = next(m for m in result.misses if m.engine == "llama.cpp")
    assert cards.field == "cards_available"
    assert cards.achievable == 4
    assert cards.required > 4
    assert cards.fixes[0] == ("cards_available", cards.required)


def test_it_refuses_a_device_without_a_prefill_rate() -> None:
    device = {k: v for k, v in H100.items() if not k.endswith(("tflops", "tops"))}
    with pytest.raises(RequestError) as error:
        replica_curve(parse_request(_request(device, 1, "vllm", FP8)))
    assert error.value.field == "device.fp16_tflops"


# --- bad input ------------------------------------------------------------------------------

FLAT = Candidate(label="flat", curve=TWO_POINTS, rent_usd_per_card_hour=1.0)


@pytest.mark.parametrize(
    ("load", "service", "field"),
    [
        (Load(users=0, prompt_tokens=10, output_tokens=10), None, "load.users"),
        (Load(users=-3, prompt_tokens=10, output_tokens=10), None, "load.users"),
        (Load(prompt_tokens=10, output_tokens=10), None, "load.users"),
        (Load(users=5, requests_per_minute=5, prompt_tokens=10, output_tokens=10), None,
         "load.users"),
        (Load(requests_per_minute=-1, prompt_tokens=10, output_tokens=10), None,
         "load.requests_per_minute"),
        (Load(users=5, think_s=-1, prompt_tokens=10, output_tokens=10), None, "load.think_s"),
        (Load(users=5, prompt_tokens=10, output_tokens=0), None, "load.output_tokens"),
        (None, ServiceLevel(ttft_p95_s=0, tokens_per_s_per_user=10), "service.ttft_p95_s"),
        (None, ServiceLevel(ttft_p95_s=math.nan, tokens_per_s_per_user=10),
         "service.ttft_p95_s"),
        (None, ServiceLevel(ttft_p95_s=1, tokens_per_s_per_user=-5),
         "service.tokens_per_s_per_user"),
        (None, ServiceLevel(ttft_p95_s=1, tokens_per_s_per_user=5, spare_replicas=-1),
         "service.spare_replicas"),
    ],
)  # fmt: skip
def test_it_names_the_field_of_bad_input(
    load: Load | None, service: ServiceLevel | None, field: str
) -> None:
    with pytest.raises(RequestError) as error:
        plan(
            load=load or Load(users=5, prompt_tokens=10, output_tokens=10),
            service=service or ServiceLevel(ttft_p95_s=1, tokens_per_s_per_user=10),
            candidates=[FLAT],
        )
    assert error.value.field == field


def test_it_refuses_no_candidates_and_a_model_that_fits_nowhere() -> None:
    load = Load(users=5, prompt_tokens=10, output_tokens=10)
    service = ServiceLevel(ttft_p95_s=1, tokens_per_s_per_user=10)
    with pytest.raises(RequestError) as error:
        plan(load=load, service=service, candidates=[])
    assert error.value.field == "candidates"
    nowhere = ReplicaCurve(points=(), max_sequences=0, prefill_tokens_per_s=1, ttft_s=1)
    with pytest.raises(RequestError) as error:
        plan(load=load, service=service, candidates=[Candidate(label="x", curve=nowhere)])
    assert error.value.field == "candidates"


def test_it_explains_an_slo_below_the_no_load_ttft() -> None:
    # no-load TTFT 0.1 s; asking 0.05 s: relax TTFT p95 to 0.1 s
    result = plan(
        load=Load(users=2, prompt_tokens=10, output_tokens=10),
        service=ServiceLevel(ttft_p95_s=0.05, tokens_per_s_per_user=10),
        candidates=[FLAT],
    )
    assert result.nearest_miss is not None
    assert result.nearest_miss.field == "service.ttft_p95_s"
    assert result.nearest_miss.fixes == (("service.ttft_p95_s", 0.1),)


def test_it_gives_every_user_a_slot_without_think_time() -> None:
    # think_s 0: 7 users need 7 slots; 2 a replica at 30 tok/s -> 4 replicas, nobody waits
    result = plan(
        load=Load(users=7, prompt_tokens=10, output_tokens=10),
        service=ServiceLevel(ttft_p95_s=1, tokens_per_s_per_user=30),
        candidates=[FLAT],
    )
    assert result.cheapest is not None
    assert (result.cheapest.replicas, result.cheapest.slots_per_replica) == (4, 2)
    assert result.cheapest.ttft_p95_s == pytest.approx(0.1)


# --- properties -----------------------------------------------------------------------------


@st.composite
def curves(draw: st.DrawFn) -> ReplicaCurve:
    """A replica whose step time grows linearly with the sequences (as the estimator's)."""
    base_s = draw(st.floats(0.005, 0.05))
    per_sequence_s = draw(st.floats(0.0, 0.005))
    limit = draw(st.integers(1, 300))
    ladder = sorted({n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256) if n <= limit} | {limit})
    return ReplicaCurve(
        points=tuple((n, 1 / (base_s + per_sequence_s * n)) for n in ladder),
        max_sequences=limit,
        prefill_tokens_per_s=draw(st.floats(500, 50_000)),
        ttft_s=draw(st.floats(0.02, 1.0)),
    )


def _replicas(curve: ReplicaCurve, users: int, ttft: float, speed: float) -> int | None:
    result = plan(
        load=Load(users=users, think_s=20, prompt_tokens=500, output_tokens=300),
        service=ServiceLevel(ttft_p95_s=ttft, tokens_per_s_per_user=speed),
        candidates=[Candidate(label="c", curve=curve, rent_usd_per_card_hour=1.0)],
    )
    return result.cheapest.replicas if result.cheapest else None


@settings(max_examples=150, deadline=None)
@given(curves(), st.integers(1, 2000), st.integers(1, 2000), st.floats(10, 80))
def test_more_users_never_need_fewer_replicas(
    curve: ReplicaCurve, users: int, more: int, speed: float
) -> None:
    fewer = _replicas(curve, users, 1.5, speed)
    many = _replicas(curve, users + more, 1.5, speed)
    if fewer is None:
        assert many is None or many == MAX_REPLICAS
    elif many is not None:
        assert many >= fewer


@settings(max_examples=150, deadline=None)
@given(curves(), st.integers(1, 2000), st.floats(0.1, 5), st.floats(0, 5), st.floats(10, 80))
def test_a_looser_ttft_never_costs_more(
    curve: ReplicaCurve, users: int, ttft: float, slack: float, speed: float
) -> None:
    strict = _replicas(curve, users, ttft, speed)
    loose = _replicas(curve, users, ttft + slack, speed)
    if strict is not None:
        assert loose is not None and loose <= strict


@settings(max_examples=150, deadline=None)
@given(curves(), st.integers(1, 2000), st.floats(10, 80), st.floats(0, 20), st.floats(0, 2))
def test_a_looser_service_level_never_costs_more(
    curve: ReplicaCurve, users: int, speed: float, slower: float, later: float
) -> None:
    strict = _replicas(curve, users, 1.5, speed)
    loose = _replicas(curve, users, 1.5 + later, max(speed - slower, 1))
    if strict is not None:
        assert loose is not None and loose <= strict


@settings(max_examples=150, deadline=None)
@given(st.lists(curves(), min_size=1, max_size=6), st.integers(1, 3000), st.floats(5, 60))
def test_every_plan_runs_below_full_load(
    pool: list[ReplicaCurve], users: int, speed: float
) -> None:
    result = plan(
        load=Load(users=users, think_s=10, prompt_tokens=800, output_tokens=200),
        service=ServiceLevel(ttft_p95_s=2, tokens_per_s_per_user=speed, spare_replicas=1),
        candidates=[
            Candidate(label=str(i), curve=c, purchase_usd_per_card=5000, power_w_per_card=300)
            for i, c in enumerate(pool)
        ],
        horizon=Horizon(months=24),
    )
    for found in (*result.plans, result.fastest, result.most_headroom):
        if found is not None:
            assert 0 < found.utilisation < 1
            assert found.tokens_per_s_per_user >= speed * (1 - 1e-9)
            assert found.ttft_p95_s <= 2 + 1e-9
            assert found.prefill_busy_share < 1


@settings(max_examples=120, deadline=None)
@given(
    st.lists(curves(), min_size=1, max_size=4),
    st.integers(1, 1500),
    st.floats(1, 120),
    st.floats(5, 60),
    st.floats(0.3, 5),
)
def test_no_plan_misses_its_level_in_the_exact_closed_queue(
    pool: list[ReplicaCurve], users: int, think: float, speed: float, ttft: float
) -> None:
    # Closed-loop users: check every plan against the exact finite-source queue M/M/c//N
    # with the plan's own service time (not the M/M/c approximation the search starts
    # from): its p95 wait fits in the TTFT budget, and users get the speed.
    load = Load(users=users, think_s=think, prompt_tokens=500, output_tokens=300)
    service = ServiceLevel(ttft_p95_s=ttft, tokens_per_s_per_user=speed)
    candidates = [
        Candidate(label=f"c{i}", curve=c, rent_usd_per_card_hour=1.0) for i, c in enumerate(pool)
    ]
    result = plan(load=load, service=service, candidates=candidates)
    for p in result.plans:
        curve = pool[int(p.label[1:])]
        servers = (p.replicas - p.spare_replicas) * p.slots_per_replica
        exact = finite_source_queue(
            users=users, servers=servers, think_s=think, service_s=p.service_time_s
        )
        assert curve.ttft_s + exact.wait_quantile_s(0.95) <= ttft * (1 + 1e-9)
        assert p.ttft_p95_s <= ttft * (1 + 1e-9)
        assert p.tokens_per_s_per_user >= speed * (1 - 1e-9)
