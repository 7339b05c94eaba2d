"""What a plan says beyond its cost: the TPOT bound and the prompt-cache share as inputs,
the purchase price and machines in all, the hardware of a replica, and which candidates
were not planned and why (sizing_site.planner, docs/capacity.md)."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from catalog.models import Accelerator
from sizing_site.planner import curves, selectors, sources
from sizing_site.planner.forms import DEFAULTS
from sizing_site.tenancy.access import tenant_for
from tests.planner.test_planner import EXAMPLE, MODEL, PlannerTestCase


class PlanDetailsTest(PlannerTestCase):
    def test_a_tpot_bound_holds_in_every_plan(self) -> None:
        # 30 tok/s is 33.3 ms a token; a 25 ms bound (40 tok/s) is the stricter.
        response = self.post({**EXAMPLE, "tpot_p95_ms": 25})
        assert response.status_code == 200, response.content
        plans = response.json()["plans"]
        assert plans
        for plan in plans:
            assert plan["tpot_p95_ms"] <= 25 + 1e-9
            assert plan["tokens_per_s_per_user"] >= 40 - 1e-9
            assert (
                plan["tpot_p95_ms"] * plan["tokens_per_s_per_user"] == 1000
                or abs(plan["tpot_p95_ms"] * plan["tokens_per_s_per_user"] - 1000) < 1e-6
            )

    def test_a_prompt_cache_makes_the_cheapest_plan_no_dearer(self) -> None:
        plain = self.post(EXAMPLE).json()["cheapest"]
        cached = self.post({**EXAMPLE, "prompt_cache_percent": 80}).json()["cheapest"]
        assert cached["monthly_usd"] <= plain["monthly_usd"]
        assert cached["ttft_p95_s"] <= 1.5

    def test_bad_tpot_and_cache_values_name_their_fields(self) -> None:
        for body, field in (
            ({**EXAMPLE, "tpot_p95_ms": 0}, "tpot_p95_ms"),
            ({**EXAMPLE, "prompt_cache_percent": 96}, "prompt_cache_percent"),
            ({**EXAMPLE, "prompt_cache_percent": "half"}, "prompt_cache_percent"),
        ):
            response = self.post(body)
            assert response.status_code == 400, body
            assert field in response.json()["errors"], response.json()

    def test_the_totals_are_the_cheapest_plans(self) -> None:
        answer = self.post(EXAMPLE).json()
        cheapest, totals = answer["cheapest"], answer["totals"]
        assert totals == {
            "cards": cheapest["cards"],
            "replicas": cheapest["replicas"],
            "machines": cheapest["hosts"],
            "purchase_usd": cheapest["purchase_usd"],
            "monthly_rent_usd": cheapest["monthly_rent_usd"],
            "monthly_usd": cheapest["monthly_usd"],
        }

    def test_bought_modules_come_in_whole_servers_and_cards_with_a_host_each(self) -> None:
        answer = self.post({**EXAMPLE, "users": 2000}).json()
        seen = set()
        for plan in answer["plans"]:
            source, hardware = plan["source"], plan["hardware_per_replica"]
            assert hardware["cards"] == plan["tensor_parallel"]
            if source is None or source["kind"] != sources.BUY:
                assert plan["purchase_usd"] is None or source["kind"] == sources.BUY
                continue
            card = Accelerator.objects.get(slug=source["accelerator"])
            seen.add(hardware["machine"])
            if hardware["machine"] == "server":
                # an HGX / OAM server of server_modules modules, at its price over them
                modules = card.server_modules
                assert hardware["cards_per_machine"] == modules
                assert plan["hosts"] == -(-plan["cards"] // modules)
                assert (
                    plan["purchase_usd"] == (float(card.server_price_usd) / modules * plan["cards"])
                    or abs(
                        plan["purchase_usd"]
                        - float(card.server_price_usd) / modules * plan["cards"]
                    )
                    < 1e-6
                )
            else:
                # PCIe cards: the card's price each, plus a 2,000 USD host a replica
                assert hardware["machine"] == "host"
                assert plan["hosts"] == plan["replicas"]
                expected = (float(card.price_usd) * plan["tensor_parallel"] + 2000) * plan[
                    "replicas"
                ]
                assert abs(plan["purchase_usd"] - expected) < 1e-6
        assert seen, "no bought plan in the answer"

    def test_candidates_past_the_limit_are_listed_with_the_reason(self) -> None:
        inputs = curves.CurveInputs(
            context_tokens=int(DEFAULTS["context_tokens"]),
            prompt_tokens=int(DEFAULTS["prompt_tokens"]),
            output_tokens=int(DEFAULTS["output_tokens"]),
        )
        everything = selectors.candidate_set(
            model=selectors.planner_model(slug=MODEL),
            tenant=tenant_for(self.bob, "org-a"),
            inputs=inputs,
        )
        few = selectors.candidate_set(
            model=selectors.planner_model(slug=MODEL),
            tenant=tenant_for(self.bob, "org-a"),
            inputs=inputs,
            limit=3,
        )
        past = [c for c in few.left_out_candidates if c.reason == selectors.LIMIT]
        assert few.left_out > 0 and len(past) == few.left_out
        # the ones past the limit are those the full set plans beyond its first three
        listed = {(c.label, c.engine, c.tensor_parallel) for c in past}
        planned = {(c.label, c.engine, c.tensor_parallel) for c in everything.candidates}
        assert listed & planned

    def test_the_page_shows_the_totals_the_hardware_and_the_tpot(self) -> None:
        client = Client()
        client.force_login(self.bob)
        query = {"model": MODEL, "users": "200", "tpot_p95_ms": "25", "prompt_cache_percent": "50"}
        response = client.get(reverse("planner:plan", args=["org-a"]), query)
        assert response.status_code == 200, response.content[:500]
        html = response.content.decode()
        assert 'id="plan-totals"' in html
        assert "Hardware per replica" in html and "TPOT p95 (ms)" in html
        assert 'name="tpot_p95_ms"' in html and 'name="prompt_cache_percent"' in html
