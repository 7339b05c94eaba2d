"""A saved configuration keeps the configurator's cost per 1M output tokens as shown when
saved, with its basis (reports.snapshots.CostFacts): rented from which offer, or owned at
which purchase and assumptions; the report, the shared page, the saved list and the API
show it; a snapshot saved before costs were kept says "not recorded"; a recompute prices
it again. The pair is tests/reports/base.py's: GLM-4.5-Air Q4_K_M at 32K on 2 x A100 80GB
PCIe."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils import timezone, translation

from catalog.models import Accelerator
from estimator import cost
from pricing.models import BillingModel, CloudOffer, CloudProvider
from sizing_site.reports import services
from sizing_site.reports.models import SavedConfiguration
from sizing_site.reports.snapshots import ConfigurationSnapshot
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Role
from tests.reports.base import QUERY, ReportsTestCase
from tests.reports.test_snapshots import stored_v1

API = "/api/v1/o/org-a/configurations/"


def aggregate(configuration: SavedConfiguration) -> float:
    """The saved aggregate decode speed (tok/s) over the configured sequences."""
    speed: float = configuration.frozen.result["aggregate_decode_tokens_per_s"]["estimate"]
    return speed


class CostCase(ReportsTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def offer(self, sku: str, per_hour: str, gpus: int) -> CloudOffer:
        acme, _ = CloudProvider.objects.get_or_create(
            slug="acme", defaults={"name": "Acme GPU", "billing_model": BillingModel.NEOCLOUD}
        )
        offer: CloudOffer = CloudOffer.all_orgs.create(
            provider=acme,
            sku=sku,
            accelerator=self.card,
            gpu_count=gpus,
            on_demand_per_hour=Decimal(per_hour),
            checked_at=timezone.now(),
        )
        return offer

    def price_the_card(self) -> None:
        Accelerator.objects.filter(pk=self.card.pk).update(price_usd=10000, tdp_w=350)

    def save(self, data: dict[str, str] | None = None) -> SavedConfiguration:
        self.client.force_login(self.alice)
        query = "&".join(f"{k}={v}" for k, v in {**QUERY, **(data or {})}.items())
        response = self.client.post(
            self.url("save", "org-a"),
            {
                "name": "costed",
                "model": "glm-4-5-air",
                "accelerator": "nvidia-a100-80gb-pcie",
                "query": query,
            },
        )
        assert response.status_code == 302, response.content
        return SavedConfiguration.objects.for_organization(self.org_a).latest("created")

    def shared_page(self, configuration: SavedConfiguration, lang: str = "en") -> str:
        link = services.share_link_create(
            tenant=tenant_for(self.alice, "org-a", min_role=Role.EDITOR),
            user=self.alice,
            configuration=configuration,
            expires_at=None,
        )
        self.client.logout()
        response = self.client.get(self.url("shared", link.token, lang=lang))
        assert response.status_code == 200
        return str(response.content.decode())


class RentedCostTests(CostCase):
    def test_the_cost_is_the_cheapest_offer_at_the_saved_speed_with_its_offer(self) -> None:
        self.offer("acme-2x", "4.20", gpus=2)
        self.offer("acme-2x-dear", "6.00", gpus=2)
        saved = self.save()
        facts = saved.frozen.cost
        assert facts is not None and facts.basis == "rented"
        assert facts.rented is not None
        assert (facts.rented.provider, facts.rented.instance) == ("Acme GPU", "acme-2x")
        # Both GPUs of the 2-GPU instance: 4.20 USD/h for the setup.
        assert facts.rented.usd_per_hour == 4.20 and facts.rented.gpus == 2
        speed = aggregate(saved)
        # USD/h / (tok/s x 3,600) x 1e6: at one sequence GLM-4.5-Air Q4_K_M on 2 x A100
        # decodes ~60-80 tok/s, so 4.20 / (70 x 3,600) x 1e6 = 4.20 / 252,000 x 1e6 = 16.67.
        expected = 4.20 / (speed * 3600) * 1e6
        assert facts.usd_per_million == cost.usd_per_million_tokens(4.20, speed)
        assert abs(facts.usd_per_million - expected) < 1e-9
        assert facts.sequences == 1 and facts.per_user
        # The card has no catalog price: no owner's figure beside it.
        assert facts.owned is None and facts.owned_usd_per_million is None
        report = self.client.get(self.url("report", "org-a", saved.code)).content.decode()
        assert f"{expected:,.2f} USD" in report
        assert "rented: 4.20 USD/h on Acme GPU" in report
        assert "acme-2x" in report and "per 1M output tokens, one user" in report
        listed = self.client.get(self.url("list", "org-a")).content.decode()
        assert f"{expected:,.2f}" in listed and "rented: 4.20 USD/h on Acme GPU" in listed
        shared = self.shared_page(saved)
        assert f"{expected:,.2f} USD" in shared and "rented: 4.20 USD/h on Acme GPU" in shared

    def test_the_api_answers_the_cost_in_the_list_and_the_snapshot(self) -> None:
        self.offer("acme-2x", "4.20", gpus=2)
        saved = self.save()
        row = next(r for r in self.client.get(API).json()["results"] if r["name"] == "costed")
        assert row["cost"]["basis"] == "rented"
        assert row["cost"]["rented"]["usd_per_hour"] == 4.20
        detail = self.client.get(f"{API}{saved.code}/").json()
        assert detail["snapshot"]["version"] == 3
        assert detail["snapshot"]["cost"] == row["cost"]

    def test_german_pages_localise_the_figures(self) -> None:
        self.offer("acme-2x", "4.20", gpus=2)
        saved = self.save()
        expected = 4.20 / (aggregate(saved) * 3600) * 1e6
        shared = self.shared_page(saved, lang="de")
        assert f"{expected:.2f}".replace(".", ",") in shared  # a decimal comma
        assert "4,20" in shared


class OwnedCostTests(CostCase):
    def test_without_an_offer_the_cost_is_owning_two_cards_and_a_host(self) -> None:
        self.price_the_card()
        saved = self.save()
        facts = saved.frozen.cost
        assert facts is not None and facts.basis == "owned" and facts.rented is None
        owned = facts.owned
        assert owned is not None
        # pricing.costs.owned_ownership(10,000 USD, 350 W, 2 cards): 2 x 10,000 + 2,000 host
        # = 22,000 USD; 2 x 350 + 150 W = 850 W; 36 months, busy 50 %, 0.15 USD/kWh.
        assert (owned.purchase_usd, owned.power_w, owned.years) == (22000, 850, 3)
        assert (owned.utilization, owned.unit, owned.gpus) == (0.5, "card", 2)
        # 22,000 / 36 = 611.11 USD a month; 24 h x 0.5 x 365/12 d = 365 busy hours x
        # 0.85 kW x 0.15 = 46.54 USD; (611.11 + 46.54) / 365 h = 1.8018 USD per busy hour.
        per_hour = (22000 / 36 + 365 * 0.85 * 0.15) / 365
        assert abs(per_hour - 1.8018) < 1e-4
        expected = per_hour / (aggregate(saved) * 3600) * 1e6
        assert abs(facts.usd_per_million - expected) < 1e-9
        report = self.client.get(self.url("report", "org-a", saved.code)).content.decode()
        assert "owned: 22,000 USD over 3 years" in report
        assert "850 W at 0.15 USD/kWh" in report and "50 % of the day" in report

    def test_the_typed_figures_are_kept_and_a_recompute_uses_them(self) -> None:
        self.price_the_card()
        typed = {"hw_usd": "30000", "power_w": "1000", "kwh_usd": "0.2", "years": "2"}
        saved = self.save({**typed, "busy": "25"})
        facts = saved.frozen.cost
        assert facts is not None and facts.owned is not None and facts.owned.typed_price
        # 30,000 over 24 months = 1,250 USD; 24 h x 0.25 x 365/12 d = 182.5 busy hours x
        # 1 kW x 0.20 = 36.50 USD; (1,250 + 36.50) / 182.5 h = 7.0493 USD per busy hour.
        per_hour = (30000 / 24 + 182.5 * 0.2) / 182.5
        assert abs(per_hour - 7.0493) < 1e-4
        expected = per_hour / (aggregate(saved) * 3600) * 1e6
        assert abs(facts.usd_per_million - expected) < 1e-9
        # The saved query carries the figures: the configurator reopens with them and a
        # recompute prices the setup the same way.
        assert saved.query["hw_usd"] == "30000" and saved.query["busy"] == "25"
        page = self.client.get(self.url("recompute", "org-a", saved.code))
        today = page.context["today"]
        assert today.cost is not None
        assert abs(today.cost.usd_per_million - expected) < 1e-9

    def test_a_configuration_nothing_prices_records_no_cost(self) -> None:
        saved = self.save()  # no offer, no catalog price
        assert saved.frozen.cost is None
        report = self.client.get(self.url("report", "org-a", saved.code)).content.decode()
        assert "Cost not recorded" in report


class OldSnapshotTests(CostCase):
    def test_a_snapshot_saved_before_costs_renders_not_recorded_everywhere(self) -> None:
        # Version 2: version 1's last shape with its version key, no "cost".
        v2: dict[str, Any] = {**stored_v1(), "version": 2}
        assert "cost" not in v2
        assert ConfigurationSnapshot.from_json(v2).cost is None
        SavedConfiguration.all_tenants.filter(pk=self.saved.pk).update(snapshot=v2)
        self.client.force_login(self.bob)
        report = self.client.get(self.url("report", "org-a", self.saved.code))
        assert report.status_code == 200
        assert "Cost not recorded" in report.content.decode()
        listed = self.client.get(self.url("list", "org-a"))
        assert listed.status_code == 200 and 'data-cost="none"' in listed.content.decode()
        answer = self.client.get(f"{API}{self.saved.code}/").json()
        assert answer["snapshot"]["cost"] is None
        row = self.client.get(API).json()["results"][0]
        assert row["cost"] is None
        self.client.force_login(self.alice)
        assert "Cost not recorded" in self.shared_page(self.saved)

    def test_another_organisations_member_still_gets_404(self) -> None:
        self.offer("acme-2x", "4.20", gpus=2)
        saved = self.save()
        self.client.force_login(self.charlie)
        assert self.client.get(self.url("report", "org-a", saved.code)).status_code == 404
        assert self.client.get(f"{API}{saved.code}/").status_code == 404


class ApiSaveTests(CostCase):
    def test_the_api_save_takes_rent_figures_and_refuses_bad_ones(self) -> None:
        self.price_the_card()
        self.client.force_login(self.alice)
        body: dict[str, Any] = {"name": "api", "model": "glm-4-5-air", "gpus": 2}
        body |= {"accelerator": "nvidia-a100-80gb-pcie", "quant": "Q4_K_M", "ctx": 32768}
        made = self.client.post(
            API, {**body, "hw_usd": 30000, "years": 2}, content_type="application/json"
        )
        assert made.status_code == 201, made.content
        owned = made.json()["snapshot"]["cost"]["owned"]
        assert (owned["purchase_usd"], owned["years"], owned["typed_price"]) == (30000, 2, True)
        bad = self.client.post(API, {**body, "years": 0}, content_type="application/json")
        assert bad.status_code == 400
        assert "years" in bad.json()["errors"]
