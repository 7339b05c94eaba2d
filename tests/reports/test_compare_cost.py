"""The saved configurations' compare page shows each snapshot's cost as saved, in the
explore compare page's cost and price rows (the same table and the same star rules)."""

from __future__ import annotations

from decimal import Decimal

from django.utils import timezone

from catalog.models import Accelerator
from pricing.models import CloudOffer, CloudProvider
from sizing_site.reports.selectors import compare_cost
from tests.reports.base import ReportsTestCase


class SavedCompareCost(ReportsTestCase):
    def test_the_cost_row_shows_each_snapshots_cost_as_saved(self) -> None:
        # A 2-GPU offer at 3.00 USD/h: the saved setup (2 x A100) pays all of it.
        provider = CloudProvider.objects.create(name="Acme GPU", slug="acme-gpu")
        CloudOffer.all_orgs.create(
            provider=provider,
            sku="acme-2xa100",
            accelerator=Accelerator.objects.get(slug="nvidia-a100-80gb-pcie"),
            gpu_count=2,
            on_demand_per_hour=Decimal("3.00"),
            checked_at=timezone.now(),
        )
        rented = self.save_as(self.alice, "rented")
        saved_cost = rented.frozen.cost
        assert saved_cost is not None and saved_cost.basis == "rented"
        self.client.force_login(self.bob)
        url = self.url("compare", "org-a") + f"?c={self.saved.code}&c={rented.code}"
        response = self.client.get(url)
        assert response.status_code == 200
        rows = {row.label: row for row in response.context["rows"]}
        # The first was saved before the offer existed and the card has no catalog price:
        # no cost. The second: 3.00 USD/h over the aggregate decode speed, as saved.
        before, after = rows["cost"].values
        assert before is None or before["usd_per_million"] is None
        assert after["usd_per_million"] == saved_cost.usd_per_million
        decode = rented.snapshot["result"]["aggregate_decode_tokens_per_s"]["estimate"]
        assert abs(after["usd_per_million"] - 3.00 / (decode * 3600) * 1e6) < 1e-9
        assert rows["cloud_price"].values == [None, 3.0]
        body = response.content.decode()
        assert "Cost per 1M output tokens" in body and "rented: Acme GPU at 3.00 USD/h" in body

    def test_a_snapshot_without_a_cost_has_no_cost_column(self) -> None:
        assert compare_cost(None) is None
