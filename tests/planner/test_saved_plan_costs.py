"""A saved plan keeps its cheapest plan's monthly cost with its basis (planner.snapshots.
PlanCost), and the report, the shared page, the saved list and the API show it. The worked
example is tests/planner/test_saved_plans.py's: the cheapest plan buys 6 RTX PRO 6000 at
8,500 USD for 2,242.75 USD a month."""

from __future__ import annotations

from django.urls import reverse
from django.utils import translation

from sizing_site.planner import services
from sizing_site.tenancy.access import tenant_for
from tests.planner.test_saved_plans import SavedPlanTestCase


class PlanCostTest(SavedPlanTestCase):
    def test_the_cheapest_plans_cost_is_kept_with_its_basis(self) -> None:
        cost = self.saved.frozen.cost
        assert cost is not None and cost.basis == "owned"
        # Bought: 6 replicas of one card, each 8,500 USD + a 2,000 USD host = 63,000 USD,
        # over the planner's default 36 months at 100 % busy; 2,242.75 USD a month.
        assert (cost.cards, cost.purchase_usd, cost.months) == (6, 63000, 36)
        assert cost.utilisation == 1.0 and cost.usd_per_card == 8500
        assert abs(cost.monthly_usd - 2242.75) < 0.01
        client = self.as_user(self.bob)
        with translation.override("en"):
            report = client.get(reverse("planner:saved-report", args=["org-a", self.saved.code]))
            listed = client.get(reverse("planner:saved", args=["org-a"]))
        for page in (report, listed):
            text = page.content.decode()
            assert "owned: 63,000 USD over 3 years" in text
            assert "for the whole load at the service level" in text
        answer = client.get(f"/api/v1/o/org-a/plans/saved/{self.saved.code}/").json()
        assert answer["cost"]["basis"] == "owned" and answer["cost"]["purchase_usd"] == 63000
        assert answer["snapshot"]["cost"] == answer["cost"]

    def test_the_shared_page_shows_the_basis_in_german(self) -> None:
        link = services.plan_share_link_create(
            tenant=tenant_for(self.dave, "org-a"), user=self.dave, plan=self.saved, expires_at=None
        )
        with translation.override("de"):
            page = self.client.get(reverse("planner:shared", args=[link.token]))
        assert page.status_code == 200
        assert "63.000" in page.content.decode()  # German thousands separator
