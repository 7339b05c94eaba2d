"""The planner's TPOT bound, prompt-cache share, purchase price and machines
(estimator/capacity.py, docs/capacity.md): worked examples with the arithmetic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from estimator.api import RequestError, estimate, parse_request
from estimator.capacity import (
    Candidate,
    Load,
    ReplicaCurve,
    ServiceLevel,
    plan,
    replica_curve,
)

CONFIGS = Path(__file__).resolve().parents[2] / "estimator/data/validation/configs"
H100 = {"name": "H100 SXM5 80GB", "memory_gb": 80, "bandwidth_gbps": 3350,
        "fp16_tflops": 989.4, "fp8_tflops": 1979, "int8_tops": 1979,
        "interconnect_gbps": 450}  # fmt: skip

# Per-user speed against sequences: steps of 25 ms (1), 28.57 ms (2) and 40 ms (4).
CURVE = ReplicaCurve(
    points=((1, 40.0), (2, 35.0), (4, 25.0)), max_sequences=4, prefill_tokens_per_s=1e15, ttft_s=0
)
LOAD = Load(requests_per_minute=60, prompt_tokens=1, output_tokens=100)


def _request(**serving: Any) -> dict[str, Any]:
    config = json.loads((CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text())
    request: dict[str, Any] = {
        "model": {"hf_config": config},
        "device": {**H100, "count": 1},
        "engine": {"name": "vllm"},
        "weights": {"format": "hf", "dtype": "bf16"},
        "workload": {"context_tokens": 8192, "prompt_tokens": 4000, "output_tokens": 200},
    }
    if serving:
        request["serving"] = serving
    return request


def test_a_tpot_bound_stricter_than_the_speed_takes_fewer_slots() -> None:
    # 20 tok/s alone: every point is fast enough, 4 slots (40 ms steps, 25 tok/s).
    # TPOT p95 <= 30 ms asks 1000 / 30 = 33.3 tok/s: a 30 ms step. Between 2 (28.57 ms) and
    # 4 sequences (40 ms) the step grows 5.71 ms a sequence: int((30 - 28.57) / 5.71) = 0
    # more, so 2 slots, at 35 tok/s: 1000 / 35 = 28.6 ms a token.
    rented = [Candidate(label="x", curve=CURVE, rent_usd_per_card_hour=1.0)]
    loose = plan(
        load=LOAD, service=ServiceLevel(ttft_p95_s=60, tokens_per_s_per_user=20), candidates=rented
    )
    tight = plan(
        load=LOAD,
        service=ServiceLevel(ttft_p95_s=60, tokens_per_s_per_user=20, tpot_p95_ms=30),
        candidates=rented,
    )
    assert loose.cheapest is not None and tight.cheapest is not None
    assert loose.cheapest.slots_per_replica == 4
    assert loose.cheapest.tpot_p95_ms == pytest.approx(40.0, rel=1e-6)
    assert tight.cheapest.slots_per_replica == 2
    assert tight.cheapest.tpot_p95_ms == pytest.approx(1000 / 35, rel=1e-6)
    assert tight.cheapest.tpot_p95_ms <= 30


def test_a_tpot_no_point_reaches_names_the_tpot_with_its_fix() -> None:
    # 10 ms a token is 100 tok/s; one sequence alone runs at 40 tok/s, 25 ms a token.
    result = plan(
        load=LOAD,
        service=ServiceLevel(ttft_p95_s=60, tokens_per_s_per_user=20, tpot_p95_ms=10),
        candidates=[Candidate(label="x", curve=CURVE, rent_usd_per_card_hour=1.0)],
    )
    miss = result.nearest_miss
    assert result.cheapest is None and miss is not None
    assert miss.field == "service.tpot_p95_ms"
    assert miss.achievable == pytest.approx(25.0)
    assert miss.fixes == (("service.tpot_p95_ms", pytest.approx(25.0)),)


@pytest.mark.parametrize("bad", [0.0, -5.0, float("inf"), float("nan")])
def test_a_tpot_bound_must_be_a_positive_number(bad: float) -> None:
    with pytest.raises(RequestError) as error:
        plan(load=LOAD,
             service=ServiceLevel(ttft_p95_s=60, tokens_per_s_per_user=20, tpot_p95_ms=bad),
             candidates=[Candidate(label="x", curve=CURVE)])  # fmt: skip
    assert error.value.field == "service.tpot_p95_ms"


def test_bought_cards_are_priced_with_one_host_a_replica() -> None:
    # 60 requests a minute of 100 tokens at 20 tok/s: 2 replicas of 2 cards (see the plan).
    # Buying: per replica 2 x 8,500 USD + the 2,000 USD host allowance = 19,000 USD, so
    # 38,000 USD for two replicas, in 2 hosts.
    candidate = Candidate(label="card", curve=CURVE, tensor_parallel=2,
                          purchase_usd_per_card=8500, power_w_per_card=600)  # fmt: skip
    best = plan(load=LOAD, service=ServiceLevel(ttft_p95_s=60, tokens_per_s_per_user=20),
                candidates=[candidate]).cheapest  # fmt: skip
    assert best is not None
    assert best.purchase_usd == pytest.approx((2 * 8500 + 2000) * best.replicas)
    assert best.hosts == best.replicas


def test_modules_are_counted_in_whole_servers() -> None:
    # An HGX H100 server: 296,644 USD for 8 modules (the catalog's source), 37,080.5 USD a
    # module, host included. 2 modules a replica; the plan's cards / 8, rounded up, servers.
    candidate = Candidate(label="sxm", curve=CURVE, tensor_parallel=2,
                          purchase_usd_per_card=296_644 / 8, host_included=True,
                          cards_per_host=8)  # fmt: skip
    best = plan(load=Load(requests_per_minute=600, prompt_tokens=1, output_tokens=100),
                service=ServiceLevel(ttft_p95_s=60, tokens_per_s_per_user=20),
                candidates=[candidate]).cheapest  # fmt: skip
    assert best is not None
    assert best.purchase_usd == pytest.approx(296_644 / 8 * best.cards)
    assert best.hosts == -(-best.cards // 8)


def test_rented_cards_have_no_purchase_price_and_no_hosts() -> None:
    rented = [Candidate(label="c", curve=CURVE, rent_usd_per_card_hour=2.0)]
    service = ServiceLevel(ttft_p95_s=60, tokens_per_s_per_user=20)
    best = plan(load=LOAD, service=service, candidates=rented).cheapest
    assert best is not None
    assert best.purchase_usd is None and best.hosts is None


def test_a_prompt_cache_share_shortens_ttft_and_prefill_but_not_the_kv_pool() -> None:
    # Half of each 4,000-token prompt from the prefix cache: the no-load TTFT loses
    # 0.5 x 4,000 / prefill rate, the prefill rate per prompt token doubles, and the KV
    # admission (the whole prompt held) does not change.
    plain = replica_curve(parse_request(_request()))
    cached = replica_curve(parse_request(_request()), cached_prompt_share=0.5)
    assert cached.max_sequences == plain.max_sequences
    assert cached.prefill_tokens_per_s == pytest.approx(2 * plain.prefill_tokens_per_s)
    assert cached.ttft_s == pytest.approx(
        plain.ttft_s - 0.5 * 4000 / plain.prefill_tokens_per_s, rel=1e-9
    )
    # with less prefill in every step, every user decodes at least as fast
    for (n, slow), (m, fast) in zip(plain.points, cached.points, strict=True):
        assert n == m and fast >= slow
    assert cached.points[-1][1] > plain.points[-1][1]


def test_a_prompt_cache_share_past_95_percent_is_refused() -> None:
    with pytest.raises(RequestError) as error:
        replica_curve(parse_request(_request()), cached_prompt_share=0.96)
    assert error.value.field == "serving.cached_prompt_share"
    with pytest.raises(RequestError) as error:
        estimate(_request(cached_prompt_share=0.96))
    assert error.value.field == "serving.cached_prompt_share"


def test_the_serving_point_serves_more_users_with_a_prompt_cache() -> None:
    plain = estimate(_request())["serving"]
    cached = estimate(_request(cached_prompt_share=0.75))["serving"]
    assert plain["cached_prompt_share"] == 0 and cached["cached_prompt_share"] == 0.75
    assert cached["kv_admission_sequences"] == plain["kv_admission_sequences"]
    assert cached["users"] > plain["users"]
