"""What the planner may buy and rent for production: consumer cards only when allowed, SXM
and OAM modules as their share of the server they come in (catalog.hardware.owned_unit)."""

from __future__ import annotations

import pytest

from catalog import hardware
from catalog.models import Accelerator
from sizing_site.planner import curves, selectors, sources
from sizing_site.planner.forms import DEFAULTS
from tests.planner.test_planner import EXAMPLE, MODEL, PlannerTestCase, tenant_for


class ProductionCardsTest(PlannerTestCase):
    def sources(self, *, allow_consumer: bool) -> dict[str, sources.CardSource]:
        return {s.accelerator.slug: s for s in sources.buy_sources(allow_consumer=allow_consumer)}

    def test_consumer_cards_are_left_out_unless_allowed(self) -> None:
        rtx_4090 = "nvidia-geforce-rtx-4090"  # segment "consumer", a catalog price
        assert Accelerator.objects.get(slug=rtx_4090).segment == "consumer"
        assert rtx_4090 not in self.sources(allow_consumer=False)
        assert rtx_4090 in self.sources(allow_consumer=True)
        # a datacenter part stays either way
        assert "nvidia-h100-sxm5-80gb" in self.sources(allow_consumer=False)
        found = selectors.candidate_set(
            model=selectors.planner_model(slug=MODEL),
            tenant=tenant_for(self.bob, "org-a"),
            inputs=curves.CurveInputs(
                context_tokens=int(DEFAULTS["context_tokens"]),
                prompt_tokens=int(DEFAULTS["prompt_tokens"]),
                output_tokens=int(DEFAULTS["output_tokens"]),
            ),
        )
        assert all(s.accelerator.segment != "consumer" for s in found.sources.values())
        allowed = self.post({**EXAMPLE, "allow_consumer_cards": True})
        assert allowed.status_code == 200, allowed.content
        wrong = self.post({**EXAMPLE, "allow_consumer_cards": "yes"})
        assert wrong.status_code == 400 and "allow_consumer_cards" in wrong.json()["errors"]

    def test_sxm_modules_are_bought_as_their_servers_share(self) -> None:
        sources = self.sources(allow_consumer=False)
        h100 = sources["nvidia-h100-sxm5-80gb"]
        # Supermicro HGX H100 8-GPU server, 296,644 USD (catalog source): 37,080.50 a module,
        # host included; 10,200 W for the server: 1,275 W a module
        assert h100.purchase_usd_per_card == pytest.approx(296_644 / 8)
        assert h100.power_w_per_card == pytest.approx(10_200 / 8)
        assert h100.host_included
        # MI300X is an OAM module with no server price in the catalog: not bought at all
        mi300x = Accelerator.objects.get(slug="amd-instinct-mi300x")
        assert hardware.owned_unit(mi300x).basis == "unpriced"
        assert "amd-instinct-mi300x" not in sources
        # a PCIe card is bought as a card in a host
        card = Accelerator.objects.get(slug="nvidia-rtx-pro-6000-blackwell-workstation-edition")
        unit = hardware.owned_unit(card)
        assert (unit.basis, unit.host, unit.price_usd) == ("card", True, card.price_usd)


class PeakAndConservativeTest(PlannerTestCase):
    def test_a_peak_factor_plans_the_busiest_hour(self) -> None:
        # 200 users at a peak-hour factor of 1.5 are planned as 300 users (rounded up)
        peak = self.post({**EXAMPLE, "peak_factor": 1.5}).json()
        three_hundred = self.post({**EXAMPLE, "users": 300}).json()
        assert peak["cheapest"]["cards"] == three_hundred["cheapest"]["cards"]
        assert peak["cheapest"]["monthly_usd"] == three_hundred["cheapest"]["monthly_usd"]
        base = self.post(EXAMPLE).json()
        assert peak["cheapest"]["monthly_usd"] >= base["cheapest"]["monthly_usd"]
        assert self.post({**EXAMPLE, "peak_factor": 0.5}).status_code == 400

    def test_planning_at_the_low_end_never_costs_less(self) -> None:
        base = self.post(EXAMPLE).json()["cheapest"]
        low = self.post({**EXAMPLE, "conservative": True}).json()["cheapest"]
        # org A's negotiated H100 at vLLM FP8, one card a replica, in both; at the low end
        # of vLLM's range (0.60 x the speed, TTFT x 1 / 0.60) it takes 5 + 1 cards, not 2 + 1
        key = ("label", "engine", "quant", "tensor_parallel")
        assert [low[k] for k in key] == [base[k] for k in key]
        assert (base["cards"], low["cards"]) == (3, 6)
        assert low["ttft_p95_s"] > base["ttft_p95_s"]
        assert low["monthly_usd"] == 2 * base["monthly_usd"]
