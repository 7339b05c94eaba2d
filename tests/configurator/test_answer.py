"""The configurator's answer panel: fit, decode speed, TTFT, context and
concurrency and the cost per 1M output tokens at the top of the results, one sentence, the
section nav; the cost from the cheapest fitting cloud offer, else from owning the hardware;
positive "short by" wording; plural forms; the results part's query count."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation

from catalog.models import Accelerator, LLMModel
from estimator import cost
from estimator.units import GIB
from pricing import costs
from pricing.models import BillingModel, CloudOffer, CloudProvider
from tests.cast import CastTestCase
from tests.configurator.test_views import GLM_AIR, a100, add_cards

Q = {"quant": "Q4_K_M", "ctx": "8192"}
ANSWERS = ("verdict", "decode", "ttft", "context", "cost")


def answer_html(body: str, name: str) -> str:
    """The text of one data-answer element (its tags stripped, spaces collapsed)."""
    found = re.search(rf'<(\w+)[^>]*data-answer="{name}"[^>]*>(.*?)</\1>', body, re.S)
    assert found is not None, name
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(2)).split())


class PanelCase(CastTestCase):
    """GLM-4.5-Air (its real config) on an A100 80GB PCIe priced at 10,000 USD and 350 W,
    a provider with a website, and a second card whose offers must never count."""

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
            vendor="NVIDIA", name="Other", slug="other", memory_gb=80, bandwidth_gbps=2000
        )
        cls.acme = CloudProvider.objects.create(
            name="Acme GPU",
            slug="acme",
            billing_model=BillingModel.NEOCLOUD,
            website="https://acme.example/pricing",
        )

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def offer(self, sku: str, per_hour: str, gpus: int = 1, **extra: Any) -> CloudOffer:
        fields: dict[str, Any] = {
            "provider": self.acme,
            "sku": sku,
            "accelerator": self.card,
            "gpu_count": gpus,
            "on_demand_per_hour": Decimal(per_hour),
            "checked_at": timezone.now(),
            **extra,
        }
        offer: CloudOffer = CloudOffer.all_orgs.create(**fields)
        return offer

    def url(self, card: str = "nvidia-a100-80gb-pcie") -> str:
        return reverse("configurator:configure", args=["glm-4-5-air", card])

    def get(self, card: str = "nvidia-a100-80gb-pcie", **params: str) -> Any:
        return self.client.get(self.url(card), {**Q, **params})

    def results(self, **params: str) -> Any:
        """The results part alone, as the form's HTMX swap asks for it."""
        return self.client.get(self.url(), {**Q, **params}, HTTP_HX_REQUEST="true")


class AnswerPanel(PanelCase):
    def test_the_panel_opens_the_results_with_every_answer(self) -> None:
        response = self.results()
        assert response.status_code == 200
        body = response.content.decode()
        assert body.lstrip().startswith('<div id="results"')
        panel = body.index('id="answer"')
        # first in the results: before the memory section and everything after it
        assert panel < body.index('id="memory"') < body.index('id="speed"')
        for name in ANSWERS:
            assert f'data-answer="{name}"' in body, name
        result = response.context["result"]
        decode = answer_html(body, "decode")
        assert decode.startswith(
            f"Decode, one user {result.decode_tokens_per_s.estimate:.1f} tok/s"
        )
        low, high = result.decode_tokens_per_s.low, result.decode_tokens_per_s.high
        assert f"{low:.1f}–{high:.1f} tok/s" in decode  # its range
        assert answer_html(body, "ttft") == (
            f"Time to first token {result.ttft_s.estimate:.2f} s for a 512-token prompt"
        )
        context = answer_html(body, "context")
        assert f"{result.max_context_tokens:,} tokens" in context
        assert f"up to {result.max_concurrent_sequences} sequences at 8,192 tokens" in context
        # The nav links every section the brief lists, by its id on the page.
        nav = body.split('class="section-nav"')[1].split("</nav>")[0]
        for anchor in ("memory", "speed", "commands", "recommendations", "offers"):
            assert f'href="#{anchor}"' in nav, anchor
        for anchor in ("rent-vs-buy", "quant-matrix", "context-chart", "finetune", "faq"):
            assert f'href="#{anchor}"' in nav, anchor
        full = self.get().content.decode()
        for anchor in re.findall(r'href="#([\w-]+)"', nav):
            assert f'id="{anchor}"' in full, anchor

    def test_the_cost_is_the_cheapest_offers_at_the_aggregate_speed(self) -> None:
        self.offer("acme-1", "2.00")
        self.offer("acme-1-dear", "3.00")
        self.offer("acme-2", "5.00", gpus=2)  # 2.50 a GPU-hour: not the cheapest
        self.offer("cheap-other-card", "0.10", accelerator=self.other)
        self.offer("negotiated", "0.05", organization=self.org_a)  # not public
        self.offer("euro", "1.00", currency="EUR")  # not USD: not comparable
        response = self.results(seqs="2")
        answer = response.context["answer"]
        assert answer.cloud.offer.sku == "acme-1"
        aggregate = response.context["result"].aggregate_decode_tokens_per_s.estimate
        # price/h / (aggregate tok/s x 3,600) x 1e6 from the page's own figure: at two
        # sequences GLM-4.5-Air Q4_K_M on the A100 decodes ~147 tok/s in all (today's
        # calibration), so 2.00 / (146.7 x 3,600) x 1e6 = 2.00 / 528,120 x 1e6 = 3.79 USD.
        expected = 2.00 / (aggregate * 3600) * 1e6
        assert 100 < aggregate < 250 and 2.2 < expected < 5.6
        assert answer.per_million == cost.usd_per_million_tokens(2.00, aggregate)
        text = answer_html(response.content.decode(), "cost")
        # The basis is named: rented, at which hourly price, from which provider.
        assert text.startswith(
            f"Per 1M output tokens {expected:.2f} USD rented: 2.00 USD/h on Acme GPU"
        )
        assert answer_html(response.content.decode(), "cost-basis") == (
            "rented: 2.00 USD/h on Acme GPU"
        )
        sentence = answer_html(response.content.decode(), "sentence")
        assert f"at about {expected:.2f} USD per million tokens on Acme GPU." in sentence

    def test_the_serving_points_cost_is_on_the_panel(self) -> None:
        # vLLM: the panel also prices the serving point, the most users at 20 tok/s each
        # and a 1 s first token: the offer's hour over that point's aggregate tok/s.
        self.offer("acme-1", "2.00")
        response = self.results(engine="vllm", quant="awq-int4", seqs="2")
        assert response.status_code == 200
        answer = response.context["answer"]
        point = response.context["result"].serving["at_users"]
        assert answer.serving_users == point["users"] > 2
        aggregate = point["aggregate_tokens_per_s"].estimate
        assert answer.serving_per_million == cost.usd_per_million_tokens(2.00, aggregate)
        text = answer_html(response.content.decode(), "cost")
        assert f"at {answer.serving_users:,} users: {answer.serving_per_million:.2f} USD" in text

    def test_without_an_offer_the_cost_is_owning_the_hardware(self) -> None:
        response = self.results()
        answer = response.context["answer"]
        assert answer.cloud is None
        speed = response.context["result"].aggregate_decode_tokens_per_s.estimate
        # pricing.costs.owned_ownership(10,000 USD, 350 W, 1 card): 12,000 USD with the
        # host over 36 months = 333.33 USD a month; 350 + 150 W at 24 h x 0.5 x 365/12 d
        # = 365 busy hours = 182.5 kWh x 0.15 = 27.375 USD a month. (333.33 + 27.375) / 365
        # = 0.98824 USD per busy hour; / (speed x 3,600) x 1e6 per 1M tokens.
        per_hour = (12000 / 36 + 0.5 * 365 * 0.15) / 365
        assert abs(per_hour - 0.98824) < 1e-5
        expected = per_hour / (speed * 3600) * 1e6
        assert abs(answer.per_million - expected) < 1e-9
        text = answer_html(response.content.decode(), "cost")
        # The basis is named: owned, the purchase with its host, over how many years.
        assert text == (
            f"Per 1M output tokens {expected:.2f} USD owned: 12,000 USD over 3 years · busy "
            "50 % of the day"
        )
        assert answer_html(response.content.decode(), "cost-basis") == (
            "owned: 12,000 USD over 3 years"
        )
        sentence = answer_html(response.content.decode(), "sentence")
        assert sentence.endswith(
            f"at about {expected:.2f} USD per million tokens if you own the hardware."
        )

    def test_a_typed_price_years_and_busy_share_make_the_owned_cost(self) -> None:
        typed = {"hw_usd": "20000", "power_w": "1000", "kwh_usd": "0.2", "years": "2"}
        response = self.results(**typed, busy="25")
        speed = response.context["result"].aggregate_decode_tokens_per_s.estimate
        # 20,000 USD over 24 months = 833.33 USD a month; 1 kW x 24 h x 0.25 x 365/12 d =
        # 182.5 busy hours = 182.5 kWh x 0.20 = 36.50 USD. (833.33 + 36.50) / 182.5 h =
        # 4.7662 USD per busy hour.
        per_hour = (20000 / 24 + 182.5 * 0.2) / 182.5
        assert abs(per_hour - 4.7662) < 1e-4
        expected = per_hour / (speed * 3600) * 1e6
        assert abs(response.context["answer"].per_million - expected) < 1e-9
        assert f"{expected:.2f} USD" in answer_html(response.content.decode(), "cost")
        # A busier machine spreads the same month over more tokens.
        busier = self.results(**typed, busy="100").context["answer"].per_million
        assert busier < expected

    def test_a_card_without_price_or_offer_asks_for_the_price(self) -> None:
        Accelerator.objects.filter(pk=self.card.pk).update(price_usd=None)
        body = self.results().content.decode()
        assert answer_html(body, "cost") == (
            "Per 1M output tokens — Enter the hardware price for the cost of owning it"
        )
        assert 'href="#rent-vs-buy"' in body
        # typed in the rent-or-buy form, the price gives the owner's cost
        typed = self.results(hw_usd="12000", power_w="500")
        assert typed.context["answer"].per_million is not None

    def test_an_apple_base_configuration_price_is_labelled(self) -> None:
        apple = Accelerator.objects.create(
            vendor="Apple",
            name="Mac Studio M3 Ultra (512GB)",
            slug="mac-studio-512",
            memory_gb=512,
            memory_gib=512,
            memory_kind="unified",
            architecture="Apple M3",
            bandwidth_gbps=819,
            price_usd=3999,  # "from $3,999": the 96 GB model's price
        )
        body = self.get(card=apple.slug).content.decode()
        assert "Uses the base configuration's price" in answer_html(body, "cost")
        assert "The catalog's 3,999 USD is the base configuration's price" in body
        typed = self.get(card=apple.slug, hw_usd="11500", power_w="300").content.decode()
        assert "base configuration" not in typed  # a typed price is the real one


class DoesNotFit(PanelCase):
    def test_short_by_is_a_positive_figure_and_the_sentence_says_no(self) -> None:
        response = self.get(quant="Q8_0")  # 8.5 bits a weight: more than the A100 holds
        result = response.context["result"]
        assert result.fit.verdict == "does_not_fit" and result.fit.reserve_bytes < 0
        short = -result.fit.reserve_bytes / GIB
        body = response.content.decode()
        assert answer_html(body, "verdict") == (
            f"Does it fit? Does not fit short by {short:.2f} GiB per GPU"
        )
        assert f"Short by {short:.2f} GiB." in body  # the memory section
        assert "by -" not in body
        for name in ("decode", "ttft", "cost"):
            assert answer_html(body, name).endswith("— nothing runs"), name
        assert answer_html(body, "sentence").startswith(
            f"No: GLM-4.5-Air Q8_0 does not fit on 1× A100 80GB PCIe with 8,192 tokens of "
            f"context; each GPU is {short:.1f} GiB short."
        )

    def test_no_context_at_all_is_said_in_words_not_zero(self) -> None:
        small = Accelerator.objects.create(
            vendor="NVIDIA",
            name="Small",
            slug="small",
            memory_gb=16,
            memory_gib=16,
            bandwidth_gbps=500,
            architecture="Ampere",
        )
        response = self.get(card=small.slug)  # 106B parameters in 16 GiB: never
        assert response.context["result"].max_context_tokens == 0
        body = response.content.decode()
        assert answer_html(body, "context") == (
            "Longest context — does not fit at any context length"
        )
        assert "None: the weights and the engine's overhead leave no room" in body  # the FAQ
        assert "0 tokens" not in body

    def test_no_page_says_s_in_brackets(self) -> None:
        self.offer("acme-1", "2.00")
        for params in ({"seqs": "1"}, {"seqs": "3"}, {"quant": "Q8_0"}):
            body = self.get(**params).content.decode()
            assert "(s)" not in body, params
            assert "1 concurrent sequences" not in body and "1 sequences" not in body
        one = self.get(seqs="1").content.decode()
        assert "with 1 concurrent sequence." in one
        three = self.get(seqs="3").content.decode()
        assert "with 3 concurrent sequences." in three


class ResultsQueries(PanelCase):
    def _queries(self, **params: str) -> CaptureQueriesContext:
        with CaptureQueriesContext(connection) as ctx:
            assert self.results(**params).status_code == 200
        return ctx

    def test_the_results_part_reads_the_offers_once_per_price_version_and_stays_flat(
        self,
    ) -> None:
        self.offer("acme-0", "1.00")
        self.results()  # warm the sizing cache and the card's offer rows
        few = self._queries()
        # session, user, memberships: the offers are cached, and the model, its weights and
        # the card are this process's copies under the catalog version (configurator.rows)
        assert len(few) == 3, [q["sql"][:80] for q in few.captured_queries]
        assert not [q for q in few.captured_queries if "pricing_cloudoffer" in q["sql"]]
        for i in range(1, 40):  # each save starts a new price version
            self.offer(f"acme-{i}", f"{1 + i / 10:.2f}", gpus=1 + i % 8)
        cold = self._queries()
        offers = [q["sql"] for q in cold.captured_queries if "pricing_cloudoffer" in q["sql"]]
        assert len(offers) == 1 and len(cold) == len(few) + 1  # the rows, read once
        assert len(self._queries()) == len(few)
        add_cards(30)  # a catalog write too: a new catalog version, the sizing cache cold
        self.results()
        assert len(self._queries()) == len(few)
        self.results(seqs="2")  # another setup: sized once, then read from the cache
        assert len(self._queries(seqs="2")) == len(few)


def test_base_configuration_prices_are_read_from_the_catalogs_words() -> None:
    def card(vendor: str, price: float | None, notes: str = "", source: str = "") -> Accelerator:
        sources = {"price_usd": source} if source else {}
        return Accelerator(vendor=vendor, name="x", price_usd=price, notes=notes, sources=sources)

    assert costs.base_configuration_price(card("Apple", 3999))
    assert not costs.base_configuration_price(card("Apple", None))  # no price, nothing to label
    assert costs.base_configuration_price(card("NVIDIA", 3999, source="Spark from $3,999"))
    assert costs.base_configuration_price(card("AMD", 1999, notes="Base price is for 64 GB."))
    assert not costs.base_configuration_price(card("NVIDIA", 1599, source="MSRP $1,599"))


def test_owning_a_month_and_a_typed_system() -> None:
    # 20,000 USD over 2 years, 1 kW at 24 h x 0.25 x 365/12 d = 182.5 kWh x 0.20 = 36.50 USD
    own = costs.owned_system(20000, 1000, years=2, utilization=0.25, usd_per_kwh=0.2)
    month = costs.owner_month(own)
    assert abs(month.amortization_usd - 833.3333) < 1e-4
    assert abs(month.energy_usd - 36.5) < 1e-9
    assert abs(month.total_usd - 869.8333) < 1e-4
    # at 100 tok/s: 869.83 / 182.5 h = 4.7662 USD/h / (100 x 3,600) x 1e6 = 13.24 USD
    assert abs(costs.owned_usd_per_million(own, 100) - 13.2395) < 1e-4  # type: ignore[operator]
