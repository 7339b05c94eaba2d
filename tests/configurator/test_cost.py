"""Cost on the configurator: the cloud offers that fit, "Cloud from $X/h" and
rent vs buy, every figure from estimator.cost through pricing.costs."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.formats import date_format

from catalog.models import Accelerator, LLMModel
from catalog.sizing.cache import bump_catalog_version
from estimator import cost
from estimator.api import result_to_dict
from pricing import costs
from pricing.models import CloudOffer, CloudProvider, PriceSource, SourceKind
from tests.cast import CastTestCase
from tests.configurator.test_views import GLM_AIR, a100

Q = {"quant": "Q4_K_M", "ctx": "8192"}


class ConfiguratorCost(CastTestCase):
    model: LLMModel
    card: Accelerator
    other: Accelerator
    acme: CloudProvider

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.model = LLMModel.objects.create(
            name="GLM-4.5-Air", slug="glm-4-5-air", hf_repo="zai-org/GLM-4.5-Air", config=GLM_AIR
        )
        cls.card = Accelerator.objects.create(**a100(), price_usd=10000, tdp_w=350)
        cls.other = Accelerator.objects.create(
            vendor="NVIDIA",
            name="Other",
            slug="other",
            memory_gb=80,
            bandwidth_gbps=2000,
            architecture="Hopper",
        )
        cls.acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def offer(self, sku: str, per_hour: str | None, gpus: int = 1, **extra: Any) -> CloudOffer:
        fields: dict[str, Any] = {
            "provider": self.acme,
            "sku": sku,
            "accelerator": self.card,
            "gpu_count": gpus,
            "on_demand_per_hour": Decimal(per_hour) if per_hour is not None else None,
            "checked_at": timezone.now(),
            **extra,
        }
        offer: CloudOffer = CloudOffer.all_orgs.create(**fields)
        return offer

    def url(self) -> str:
        return reverse("configurator:configure", args=["glm-4-5-air", "nvidia-a100-80gb-pcie"])

    def get(self, **params: str) -> Any:
        return self.client.get(self.url(), {**Q, **params})

    def test_the_offers_table_prices_each_fitting_offer_by_the_estimators_formula(self) -> None:
        self.offer("acme-1", "0.44")
        self.offer("acme-8", "3.00", gpus=8)
        self.offer("acme-spot-only", None, spot_per_hour=Decimal("0.10"))  # no on-demand price
        self.offer("acme-other", "0.10", accelerator=self.other)  # another GPU
        self.offer("acme-org", "0.05", organization=self.org_a)  # negotiated, not public
        response = self.get(seqs="4")
        assert response.status_code == 200
        result = result_to_dict(response.context["result"])
        one = result["decode_tokens_per_s"]["estimate"]
        four = result["aggregate_decode_tokens_per_s"]["estimate"]
        assert four > one  # four sequences decode more tokens per second in all
        rows = response.context["offers"]
        # The one-GPU setup pays one GPU's share of an instance: acme-8's 3.00 USD/h over
        # 8 GPUs is 0.375 USD/h, cheaper than acme-1's 0.44 USD/h for one GPU.
        assert [r.offer.sku for r in rows] == ["acme-8", "acme-1"]
        assert [(r.gpus, r.offer_gpus, r.split) for r in rows] == [(1, 8, True), (1, 1, False)]
        body = response.content.decode()
        assert "1 of 8 GPUs of a 3.00 USD/h instance" in body
        for row, price in zip(rows, (3.00 / 8, 0.44), strict=True):
            # USD/h / (tok/s x 3,600) x 1e6, e.g. 0.44 / (99.8 x 3,600) x 1e6 = 1.22 at 99.8 tok/s
            assert row.per_million_one == cost.usd_per_million_tokens(price, one)
            assert row.per_million_all == cost.usd_per_million_tokens(price, four)
            assert f'<td class="num">{row.per_million_all:.2f} USD</td>' in body
            assert f'<td class="num">{row.per_million_one:.2f} USD</td>' in body
        assert "Per 1M output tokens at 4 sequences" in body

    def test_the_issues_worked_example_is_one_dollar_twenty_two(self) -> None:
        offer = CloudOffer(on_demand_per_hour=Decimal("0.44"), gpu_count=1)
        speed = 99.8  # tok/s, one sequence and all of them
        [row] = costs.offer_costs(
            [offer], one_sequence_tokens_per_s=speed, all_sequences_tokens_per_s=speed
        )
        # 0.44 / (99.8 x 3,600) x 1,000,000 = 0.44 / 359,280 x 1e6 = 1.2247 USD
        assert row.per_million_all == pytest.approx(1.2247, abs=1e-4)

    def test_offers_need_at_least_the_configured_gpus(self) -> None:
        self.offer("acme-1", "0.44")
        self.offer("acme-2", "1.00", gpus=2)
        rows = self.get(gpus="2").context["offers"]
        assert [r.offer.sku for r in rows] == ["acme-2"]

    def test_the_recommendation_shows_the_cheapest_fitting_offer(self) -> None:
        self.offer("acme-1", "0.44")
        self.offer("acme-1b", "0.60")
        self.offer("acme-cheap-other", "0.10", accelerator=self.other)
        response = self.get()
        assert response.context["recommended"].cloud.offer.sku == "acme-1"
        assert "Cloud from $0.44/h" in response.content.decode()

    def test_without_offers_the_page_says_so(self) -> None:
        body = self.get().content.decode()
        assert "No public cloud offer with these GPUs runs this configuration." in body
        assert "There is no cloud offer to compare with" in body

    def test_stale_prices_are_flagged_with_their_age(self) -> None:
        feed = PriceSource.all_orgs.create(provider=self.acme, kind=SourceKind.FEED)
        old = self.offer(
            "acme-old", "0.44", checked_at=timezone.now() - timedelta(days=10), source=feed
        )
        self.offer("acme-new", "0.50")
        body = self.get().content.decode()
        # Once in the offer's row, as a badge with the date it was last checked (no "stale:
        # 1 week old" beside it); the answer panel and the recommendation flag it too.
        date = date_format(timezone.localtime(old.checked_at))
        badge = f'<span class="badge stale">stale since {date}</span>'
        table = body.split('id="offers"')[1].split("</table>")[0]
        assert table.count(badge) == 1 and table.count("stale since") == 1
        assert body.count(badge) == 3 and "stale: " not in body

    def test_rent_vs_buy_worked_example(self) -> None:
        self.offer("acme-1", "2.00")
        self.offer("acme-1-dear", "5.00")
        params = {
            "hours": "10",
            "hw_usd": "20000",
            "power_w": "1000",
            "kwh_usd": "0.2",
            "pue": "1.2",
        }
        response = self.get(**params)
        assert response.status_code == 200
        compared = response.context["rent_vs_buy"]
        # electricity: 1 kW x 1.2 PUE x 10 h x 365/12 days = 365 kWh x 0.20 USD = 73.00 USD
        assert compared.monthly_energy_usd == pytest.approx(73.0)
        # rent: the cheapest offer, 2.00 USD/h x 10 h x 365/12 days = 608.33 USD
        assert compared.monthly_rent_usd == pytest.approx(608.3333, abs=1e-4)
        # break even: 20,000 / (608.33 - 73.00) = 20,000 / 535.33 = 37.36 months
        assert compared.break_even_months == pytest.approx(37.36, abs=0.01)
        body = response.content.decode()
        for text in ("73.00 USD", "608.33 USD", "37.4 months", "Acme GPU acme-1 at 2.00 USD/h"):
            assert text in body, text

    def test_rent_vs_buy_defaults_come_from_the_catalog(self) -> None:
        self.offer("acme-2", "4.00", gpus=2)
        rent = self.get(gpus="2").context["rent"]
        # 2 x 10,000 USD + the 2,000 USD host allowance; 2 x 350 W TDP + 150 W for the host
        assert rent["hw_usd"].value() == "22000.0"
        assert rent["power_w"].value() == "850"
        assert rent["kwh_usd"].value() == "0.15" and rent["pue"].value() == "1.0"

    def test_rent_vs_buy_without_a_catalog_price_asks_for_one(self) -> None:
        Accelerator.objects.filter(pk=self.card.pk).update(price_usd=None)
        self.offer("acme-1", "2.00")
        response = self.get()
        assert response.status_code == 200 and response.context["rent_vs_buy"] is None
        assert "enter them to compare" in response.content.decode()

    def test_bad_rent_vs_buy_inputs_are_a_form_error_not_a_500(self) -> None:
        self.offer("acme-1", "2.00")
        cases = [
            ("hours", "abc"),
            ("hours", "25"),
            ("hours", "0"),
            ("hw_usd", "-1"),
            ("hw_usd", ""),
            ("power_w", "inf"),
            ("kwh_usd", "-0.1"),
            ("pue", "0.5"),
        ]
        for name, value in cases:
            response = self.get(**{name: value})
            assert response.status_code == 400, (name, value)
            assert name in response.context["rent"].errors, (name, value)
            assert response.context["rent_vs_buy"] is None
            body = response.content.decode()
            assert f'id="err-{name}"></span>' not in body  # the error is shown by its field
            htmx = self.client.get(
                self.url(), {**Q, name: value, "part": "analysis"}, HTTP_HX_REQUEST="true"
            )
            assert htmx.status_code == 400 and htmx.content.decode().lstrip().startswith(
                '<div id="analysis"'
            )

    def _queries(self) -> int:
        """Cold: a new catalog version empties the sizing cache, so every query of the
        sizing path is counted, not only the prices'."""
        bump_catalog_version()
        with CaptureQueriesContext(connection) as ctx:
            assert self.get(seqs="2").status_code == 200
        return len(ctx.captured_queries)

    def test_the_page_query_count_stays_flat_as_offers_grow(self) -> None:
        self.offer("acme-0", "1.00")
        few = self._queries()
        for i in range(1, 40):
            self.offer(f"acme-{i}", f"{1 + i / 10:.2f}", gpus=1 + i % 8)
        assert len(self.get(seqs="2").context["offers"]) == 40
        assert self._queries() == few


class OfferPerGpuTest(CastTestCase):
    """A setup pays its GPUs' share of an instance (pricing.costs.setup_share_per_hour)."""

    def test_a_two_gpu_setup_pays_two_eighths_of_an_eight_gpu_node(self) -> None:
        node = CloudOffer(on_demand_per_hour=Decimal("24.00"), gpu_count=8)
        # 24.00 USD/h over 8 GPUs = 3.00 a GPU-hour; 2 GPUs: 6.00 USD/h, not 24.00
        [row] = costs.offer_costs(
            [node], one_sequence_tokens_per_s=100, all_sequences_tokens_per_s=400, gpus=2
        )
        assert (row.per_hour, row.instance_per_hour, row.split) == (6.0, 24.0, True)
        # 6.00 / (400 x 3,600) x 1e6 = 4.1667 USD per 1M output tokens
        assert row.per_million_all == pytest.approx(4.1667, abs=1e-4)
        [whole] = costs.offer_costs(
            [node], one_sequence_tokens_per_s=100, all_sequences_tokens_per_s=400
        )
        assert (whole.per_hour, whole.split) == (24.0, False)

    def test_the_explore_tables_rent_one_gpu_of_the_cheapest_per_gpu_offer(self) -> None:
        from sizing_site.explore.costs import cheapest_offers

        provider = CloudProvider.objects.create(name="Node Co", slug="node-co")
        card = Accelerator.objects.create(vendor="Test", name="Card X", slug="card-x")
        for sku, price, gpus in (("one", "4.00", 1), ("eight", "24.00", 8)):
            CloudOffer.all_orgs.create(
                provider=provider, sku=sku, accelerator=card, gpu_count=gpus,
                on_demand_per_hour=Decimal(price), checked_at=timezone.now(),
            )  # fmt: skip
        offer = cheapest_offers()[card.pk]
        # 24.00 / 8 = 3.00 a GPU-hour beats the 4.00 single-GPU instance
        assert (offer.usd_per_hour, offer.gpu_count) == (3.0, 8)
