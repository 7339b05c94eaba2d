"""The model page's answer per row (fit, quant, tok/s with its range, confidence, cost per
1M tokens) and its summary figures (median tok/s of the cards that fit, nearest miss,
smallest cards, top lists), its links to the other sizing views, and flat query counts."""

from __future__ import annotations

import json
import re
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.template.defaultfilters import floatformat
from django.test import Client
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator, LLMModel, QuantFormat
from catalog.sizing import CardFit
from catalog.sizing.cache import bump_catalog_version
from estimator.units import Range
from pricing.models import CloudOffer, CloudProvider
from sizing_site.explore import tables
from sizing_site.explore.costs import Offer, row_cost
from sizing_site.explore.tables import CardRow, confidence
from tests.explore.seeded import SeededCase

GIB = 2**30
LLAMA_70B = "llama-3-3-70b-instruct"
RTX_5090 = "nvidia-geforce-rtx-5090"
# The RTX 5090 row with the quality floor lowered to IQ2_XXS (experimental tier).
LOW_FLOOR_5090 = "?q=RTX+5090&quality=IQ2_XXS"
CONFIGS = Path(__file__).resolve().parents[2] / "catalog/data/configs"


def fit(low: float, high: float, *, calibrated: bool = True, estimate: float = 0.0) -> CardFit:
    speed = Range(estimate or (low + high) / 2, low, high)
    return CardFit(
        "Q4_K_M", "comfortable", 10 * GIB, 20 * GIB, speed, "llama.cpp", "cuda", calibrated
    )


# --- confidence: the thresholds on the range's high / low ratio --------------------------


def test_confidence_follows_the_range_width_and_the_calibration_group() -> None:
    # high <= 1.6x, medium <= 2.5x, low beyond or without a calibration group.
    assert confidence(fit(100, 154)) == "high"  # 1.54x: llama.cpp CUDA consumer
    assert confidence(fit(100, 160)) == "high"  # 1.6x exactly: still high
    assert confidence(fit(100, 161)) == "medium"  # 1.61x
    assert confidence(fit(100, 250)) == "medium"  # 2.5x exactly
    assert confidence(fit(100, 251)) == "low"  # 2.51x
    assert confidence(fit(100, 154, calibrated=False)) == "low"  # a wider group's factors
    no_fit = CardFit(None, "does_not_fit", 30 * GIB, 20 * GIB, None)
    assert confidence(no_fit) == ""


# --- cost per 1M output tokens: owned, else cloud ------------------------------------------


def test_owned_cost_per_million_tokens_worked_example() -> None:
    card = Accelerator(pk=1, name="Card", vendor="V", price_usd=1599)
    row_fit = fit(40, 60, estimate=50)
    cost = row_cost(card, row_fit, offers={}, powers={1: 450.0})
    # purchase 1,599 + 2,000 host = 3,599 USD over 36 months = 99.972 USD a month;
    # power 450 + 150 W = 0.6 kW x 24 h x 0.5 x 365/12 days x 0.15 USD = 32.85 USD a month;
    # busy hours 24 x 0.5 x 365/12 = 365 h -> (99.972 + 32.85) / 365 = 0.36390 USD an hour;
    # at 50 tok/s: 0.36390 / (50 x 3,600) x 1e6 = 2.0216 USD per 1M tokens.
    assert cost is not None and cost.basis == "owned"
    assert cost.usd_per_hour == pytest.approx(0.363896, rel=1e-5)
    assert cost.usd_per_million == pytest.approx(2.02165, rel=1e-5)


def test_a_cloud_offer_comes_before_owning_and_no_price_means_no_cost() -> None:
    card = Accelerator(pk=1, name="Card", vendor="V", price_usd=1599)
    row_fit = fit(40, 60, estimate=50)
    cost = row_cost(card, row_fit, offers={1: Offer(0.34, "RunPod", 1)}, powers={1: 450.0})
    # 0.34 USD an hour / (50 tok/s x 3,600 s) x 1e6 = 1.8889 USD per 1M tokens.
    assert cost is not None and (cost.basis, cost.provider) == ("cloud", "RunPod")
    assert cost.usd_per_million == pytest.approx(1.888889, rel=1e-6)
    unpriced = Accelerator(pk=2, name="Other", vendor="V")
    assert row_cost(unpriced, row_fit, offers={}, powers={}) is None


def test_the_median_is_of_the_calibrated_fitting_rows() -> None:
    card = Accelerator(pk=1, name="Card", vendor="V")
    rows = [
        CardRow(card, fit(10, 14, estimate=12), None),
        CardRow(card, fit(20, 30, estimate=25), None),
        CardRow(card, fit(30, 50, estimate=40), None),
        CardRow(card, fit(900, 1100, estimate=1000, calibrated=False), None),  # not ranked
    ]
    # Calibrated speeds 12, 25, 40 -> the median is 25 (the uncalibrated 1,000 is left out).
    assert tables.median_speed(rows) == (25, 3)


# --- the seeded catalog, through the page ------------------------------------------------


class ModelPageAnswers(SeededCase):
    def page(self, query: str = "") -> tuple[str, Any]:
        response = self.client.get(reverse("explore:model-gpus", args=[LLAMA_70B]) + query)
        assert response.status_code == 200
        return response.content.decode(), response.context

    def test_median_speed_of_the_fitting_cards_from_the_pages_own_rows(self) -> None:
        body, context = self.page("?show_all=on")
        rows = context["table"].rows
        speeds = [r.fit.calibrated_speed for r in rows if r.fits and r.fit.calibrated_speed]
        assert len(speeds) >= 3
        median = statistics.median(speeds)
        assert context["table"].median_speed == median
        shown = floatformat(median, "1g")
        assert (
            f"Median speed of the {len(speeds)} cards with a calibrated speed: {shown} tok/s."
            in body
        )

    def test_the_nearest_miss_is_the_curated_card_short_of_the_least_memory(self) -> None:
        body, context = self.page("?show_all=on")
        misses = [
            r
            for r in context["table"].rows
            if r.fit.verdict == "does_not_fit" and r.accelerator.curated
        ]
        assert misses
        nearest = min(misses, key=lambda r: r.fit.need_bytes - r.fit.usable_bytes)
        table_miss = context["table"].nearest_miss
        assert table_miss.accelerator == nearest.accelerator
        short = nearest.fit.need_bytes - nearest.fit.usable_bytes
        assert table_miss.shortfall_bytes == short > 0
        # need - usable of that row, in GiB with two decimals, positive.
        shown = floatformat(short / GIB, "2g")
        summary = re.search(r'data-summary="miss">(.*?)</dd>', body, re.S)
        assert summary is not None
        assert str(nearest.accelerator) in summary.group(1)
        assert f"short by {shown} GiB" in summary.group(1)

    def test_the_smallest_cards_that_fit_ascend_by_memory(self) -> None:
        body, context = self.page()
        table = context["table"]
        fitting = [r for r in table.rows if r.fits]
        memories = [r.accelerator.capacity_gib for r in table.smallest_cards]
        assert 1 < len(memories) <= tables.SMALLEST_N
        assert memories == sorted(memories)
        assert memories[0] == min(r.accelerator.capacity_gib for r in fitting)
        assert table.smallest == table.smallest_cards[0]
        listed = re.search(r'data-summary="smallest-list">(.*?)</ol>', body, re.S)
        assert listed is not None
        names = re.findall(r">([^<]+)</a>", listed.group(1))
        assert names == [str(r.accelerator) for r in table.smallest_cards]

    def test_a_rows_owned_cost_is_worked_from_its_own_speed(self) -> None:
        # 70B in 32 GB needs fewer than 4 bits a weight: below the default "good" floor,
        # so the filter asks for the lower tiers explicitly.
        body, context = self.page(LOW_FLOOR_5090)
        row = next(r for r in context["table"].rows if r.accelerator.slug == RTX_5090)
        assert row.fits and row.fit.decode_tokens_per_s is not None
        speed = row.fit.decode_tokens_per_s.estimate
        # RTX 5090: 1,999 USD + 2,000 USD host over 36 months; 575 + 150 W at 0.15 USD/kWh,
        # busy 12 h a day (365 h a month); divided by the row's tok/s x 3,600 s.
        per_hour = ((1999 + 2000) / 36 + 0.725 * 24 * 0.5 * 365 / 12 * 0.15) / 365
        expected = per_hour / (speed * 3600) * 1e6
        assert row.cost.basis == "owned"
        assert row.cost.usd_per_million == pytest.approx(expected, rel=1e-9)
        assert f'{floatformat(expected, "2g")} <small class="muted">owned</small>' in body
        assert row.confidence in ("high", "medium", "low")
        assert f'class="conf conf-{row.confidence}"' in body

    def test_the_cheapest_cloud_offer_prices_a_row_and_a_new_price_shows_at_once(self) -> None:
        provider = CloudProvider.objects.create(name="Acme GPU", slug="acme")
        offer = CloudOffer.all_orgs.create(
            provider=provider,
            sku="1x5090",
            accelerator=Accelerator.objects.get(slug=RTX_5090),
            gpu_count=1,
            on_demand_per_hour="0.8900",
            checked_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
        body, context = self.page(LOW_FLOOR_5090)
        row = next(r for r in context["table"].rows if r.accelerator.slug == RTX_5090)
        speed = row.fit.decode_tokens_per_s.estimate
        # 0.89 USD an hour / (tok/s x 3,600) x 1e6.
        assert row.cost.basis == "cloud" and row.cost.provider == "Acme GPU"
        assert row.cost.usd_per_million == pytest.approx(0.89 / (speed * 3600) * 1e6)
        assert "Acme GPU" in body
        # A price refresh is no catalog edit: the cached table must not keep the old cost.
        CloudOffer.all_orgs.filter(pk=offer.pk).update(on_demand_per_hour="0.4450")
        _, context = self.page(LOW_FLOOR_5090)
        row = next(r for r in context["table"].rows if r.accelerator.slug == RTX_5090)
        assert row.cost.usd_per_million == pytest.approx(0.445 / (speed * 3600) * 1e6)

    def test_the_price_list_says_how_many_fitting_cards_have_no_price(self) -> None:
        body, context = self.page()
        table = context["table"]
        fitting = [r for r in table.rows if r.fits]
        unpriced = sum(1 for r in fitting if not r.accelerator.price_usd)
        assert table.unpriced == unpriced > 0
        assert len(table.top_price) < tables.TOP_N  # few cards have a price
        note = re.search(r'data-summary="unpriced">(.*?)</p>', body, re.S)
        assert note is not None
        assert f"{unpriced} cards that fit have no price in the catalog" in note.group(1)

    def test_the_summary_and_top_lists_link_to_the_configurator(self) -> None:
        body, context = self.page()
        table = context["table"]
        fastest = table.fastest
        configure = reverse("configurator:configure", args=[LLAMA_70B, fastest.accelerator.slug])
        top = re.search(r'data-summary="top-speed">(.*?)</ol>', body, re.S)
        assert top is not None
        assert top.group(1).count('<a href="/en/models/') == len(table.top_speed)
        assert f'href="{configure}?ctx=8192&amp;quant={fastest.fit.quant}&amp;engine=' in body

    def test_the_model_page_links_to_every_other_sizing_view(self) -> None:
        body, context = self.page()
        table = context["table"]
        lead = table.featured
        # The fastest curated card (one people buy) leads the links.
        assert lead == table.top_curated[0] and lead.accelerator.curated
        assert all(
            (r.fit.calibrated_speed or 0) <= (lead.fit.calibrated_speed or 0)
            for r in table.rows
            if r.fits and r.accelerator.curated
        )
        assert f'href="{reverse("catalog:model-detail", args=[LLAMA_70B])}"' in body
        assert reverse("configurator:configure", args=[LLAMA_70B, lead.accelerator.slug]) in body
        assert f'href="{reverse("explore:gpu-models", args=[lead.accelerator.slug])}"' in body
        compare = reverse("explore:compare") + f"?c1={LLAMA_70B}:{lead.accelerator.slug}:"
        assert compare in body

    def test_the_compare_page_links_each_column_to_the_other_views(self) -> None:
        c1 = f"{LLAMA_70B}:{RTX_5090}:Q4_K_M:1"
        response = self.client.get(reverse("explore:compare") + f"?c1={c1}&ctx=8192")
        body = response.content.decode()
        assert reverse("configurator:configure", args=[LLAMA_70B, RTX_5090]) + "?ctx=8192" in body
        assert reverse("explore:model-gpus", args=[LLAMA_70B]) + "?ctx=8192" in body
        assert reverse("explore:gpu-models", args=[RTX_5090]) + "?ctx=8192" in body
        assert 'class="table-scroll"' in body


# --- query counts: flat as the catalog grows -------------------------------------------------


def _llama_config() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text()
    )
    return loaded


def _add_cards(n: int) -> None:
    start = Accelerator.objects.count()
    Accelerator.objects.bulk_create(
        Accelerator(
            vendor=("NVIDIA", "AMD", "Apple")[i % 3],
            architecture=("Ampere", "RDNA 3", "Apple M2")[i % 3],
            name=f"Card {i}",
            slug=f"card-{i}",
            memory_gb=8 + i % 64,
            bandwidth_gbps=200 + 10 * i,
            fp16_tflops=50,
            price_usd=1000 + i if i % 2 else None,
            tdp_w=300,
            curated=i % 2 == 0,
        )
        for i in range(start, start + n)
    )


@pytest.fixture
def logged_in(client: Client, django_user_model: Any) -> Client:
    translation.activate("en")
    for name, bits, rank in (("BF16", 16, 99), ("Q8_0", 8.5, 90), ("Q4_K_M", 4.5, 70)):
        QuantFormat.objects.create(
            name=name, slug=name.lower(), family="gguf", bits_per_weight=bits, quality_rank=rank
        )
    LLMModel.objects.create(name="Model 0", slug="model-0", config=_llama_config())
    client.force_login(django_user_model.objects.create_user("viewer", password="x"))
    return client


@pytest.mark.django_db
def test_the_model_page_reads_as_few_queries_for_100_cards_as_for_10(
    logged_in: Client, django_assert_max_num_queries: Any
) -> None:
    url = reverse("explore:model-gpus", args=["model-0"]) + "?show_all=on"
    _add_cards(10)
    # Session, user, memberships; the model and its weights, the quant ladder, the cloud
    # offers, all cards, the priced cards' power, the support matrix (rows, engine names).
    with django_assert_max_num_queries(11):
        few = logged_in.get(url)
    assert len(few.context["table"].rows) == 10
    _add_cards(90)
    bump_catalog_version()  # bulk_create sends no signal: start a new catalog version
    with django_assert_max_num_queries(11):
        many = logged_in.get(url)
    assert len(many.context["table"].rows) == 100
    # Warm: the table comes from the shared cache; the offers are read every time.
    with django_assert_max_num_queries(7):
        assert logged_in.get(url).status_code == 200
