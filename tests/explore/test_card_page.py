"""The card page (a card across every model): models grouped by family with variants
folded, the largest model that runs comfortably first, summary and top lists like the
model page, links to the other sizing views, and flat query counts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator, LLMModel, QuantFormat
from catalog.sizing import CardFit
from catalog.sizing.cache import bump_catalog_version
from estimator.units import Range
from pricing.models import CloudOffer
from sizing_site.explore import tables
from sizing_site.explore.tables import ModelRow
from tests.explore.seeded import SeededCase

GIB = 2**30
RTX_4090 = "nvidia-geforce-rtx-4090"
CONFIGS = Path(__file__).resolve().parents[2] / "catalog/data/configs"


def _row(name: str, family: str, params: int, verdict: str, quant: str, speed: float) -> ModelRow:
    model = LLMModel(name=name, slug=name.lower().replace(" ", "-"), family=family)
    model.params_total = params
    fit = CardFit(quant, verdict, 10 * GIB, 20 * GIB, Range(speed, speed * 0.8, speed * 1.2))
    return ModelRow(model, fit)


def test_variants_fold_into_the_shortest_name_and_families_keep_the_sort_order() -> None:
    rows = [
        _row("Big 70B Instruct", "Big", 70_000_000_000, "tight", "IQ3_XS", 10),
        _row("Mid 32B Instruct", "Mid", 32_000_000_000, "comfortable", "Q4_K_M", 30),
        _row("Mid 32B", "Mid", 32_000_000_000, "comfortable", "Q4_K_M", 30),
        _row("Mid 8B", "Mid", 8_000_000_000, "comfortable", "BF16", 60),
        _row("Tiny 0.5B", "Tiny", 500_000_000, "comfortable", "BF16", 400),
    ]
    ordered = tables.sorted_rows(rows, "-comfort", tables.MODEL_SORTS)
    # Comfortable before tight, then the larger first: Mid 32B (x2), Mid 8B, Tiny, Big.
    assert [r.model.name for r in ordered] == [
        "Mid 32B Instruct",
        "Mid 32B",
        "Mid 8B",
        "Tiny 0.5B",
        "Big 70B Instruct",
    ]
    groups = tables.family_groups(ordered)
    assert [g.family for g in groups] == ["Mid", "Tiny", "Big"]
    mid = groups[0]
    # The two 32B variants share one row, led by the shorter name; the family holds 3.
    assert [r.model.name for r in mid.rows] == ["Mid 32B", "Mid 8B"]
    assert [v.name for v in mid.rows[0].variants] == ["Mid 32B Instruct"]
    assert mid.models == 3


class CardPage(SeededCase):
    def page(self, query: str = "") -> tuple[str, Any]:
        response = self.client.get(reverse("explore:gpu-models", args=[RTX_4090]) + query)
        assert response.status_code == 200
        return response.content.decode(), response.context

    def test_the_largest_model_that_runs_comfortably_comes_first(self) -> None:
        body, context = self.page()
        table = context["table"]
        comfortable = [r for r in table.rows if r.fit.verdict == "comfortable"]
        largest = max(r.model.params_total for r in comfortable)
        first = table.rows[0]
        assert first.fit.verdict == "comfortable"
        assert first.model.params_total == largest
        assert table.largest_comfortable.model.params_total == largest
        # The first family on the page is that model's, open; toys are not first.
        assert table.groups[0].lead.model.params_total == largest
        assert table.groups[0].lead.model.params_total >= tables.TOY_PARAMS
        assert body.count('<details class="family" open>') == 1
        first_family = body.index('<details class="family" open>')
        assert body.index(table.groups[0].family, first_family) < body.index(
            "</summary>", first_family
        )
        # Every comfortable row comes before every tight one, each by parameters, largest first.
        ranks = [(r.fit.verdict == "comfortable", r.model.params_total) for r in table.rows]
        assert ranks == sorted(ranks, reverse=True)

    def test_models_are_grouped_by_family_and_variants_are_not_repeated(self) -> None:
        body, context = self.page()
        table = context["table"]
        assert body.count('<details class="family"') == len(table.groups) <= 30
        keys = [
            (
                r.model.family,
                r.model.params_total,
                r.model.params_active,
                r.fit.quant,
                r.fit.verdict,
            )
            for g in table.groups
            for r in g.rows
        ]
        assert len(keys) == len(set(keys))  # one row per variant set
        # Every fitting model is shown exactly once: as a row or as a folded variant.
        shown = [m.name for g in table.groups for r in g.rows for m in (r.model, *r.variants)]
        assert sorted(shown) == sorted(r.model.name for r in table.rows)
        # Llama 3.1 8B and its Instruct share the config: one row, the Instruct folded in.
        llama = next(g for g in table.groups if g.family == "Llama 3.1")
        eight = next(r for r in llama.rows if r.model.slug == "llama-3-1-8b")
        assert "llama-3-1-8b-instruct" in [v.slug for v in eight.variants]
        assert not any(r.model.slug == "llama-3-1-8b-instruct" for r in llama.rows)
        assert 'also: <a href="/en/models/llama-3-1-8b-instruct/gpus/">' in body

    def test_the_summary_and_top_lists_match_the_rows(self) -> None:
        body, context = self.page()
        table = context["table"]
        fitting = [r for r in table.rows if r.fits]
        assert table.fitting == len(fitting)
        assert table.comfortable == sum(1 for r in fitting if r.fit.verdict == "comfortable")
        sizes = [r.model.params_total for r in table.top_largest]
        assert sizes == sorted(sizes, reverse=True) and len(sizes) == tables.TOP_N
        assert all(r.fit.verdict == "comfortable" for r in table.top_largest)
        speeds = [r.fit.calibrated_speed for r in table.top_speed]
        assert speeds == sorted(speeds, reverse=True)
        # No toy model in the "fastest" list, although toys decode fastest.
        assert all(r.model.params_total >= tables.TOY_PARAMS for r in table.top_speed)
        fastest_overall = max(fitting, key=lambda r: r.fit.calibrated_speed or 0)
        assert fastest_overall.model.params_total < tables.TOY_PARAMS
        for name in ("top-largest", "top-speed"):
            listed = re.search(rf'data-summary="{name}">(.*?)</ol>', body, re.S)
            assert listed is not None
            assert listed.group(1).count("<li>") == listed.group(1).count('<a href="/en/models/')
        # The seed's cheapest public offer of a 4090 prices every row: USD an hour /
        # (the row's tok/s x 3,600 s) x 1e6.
        offer = (
            CloudOffer.objects.public()
            .filter(accelerator__slug=RTX_4090, on_demand_per_hour__isnull=False)
            .order_by("on_demand_per_hour")
            .select_related("provider")
            .first()
        )
        assert offer is not None
        rate = float(offer.on_demand_per_hour)
        assert f"renting it: {rate:.2f} USD an hour on {offer.provider.name}" in body
        for row in fitting:
            speed = row.fit.decode_tokens_per_s.estimate
            assert row.cost.basis == "cloud"
            assert row.cost.usd_per_million == pytest.approx(rate / (speed * 3600) * 1e6)

    def test_the_card_page_links_to_every_other_sizing_view(self) -> None:
        body, context = self.page()
        lead = context["table"].largest_comfortable.model
        assert f'href="{reverse("catalog:accelerator-detail", args=[RTX_4090])}"' in body
        assert reverse("configurator:configure", args=[lead.slug, RTX_4090]) + "?ctx=8192" in body
        assert f'href="{reverse("explore:model-gpus", args=[lead.slug])}"' in body
        assert reverse("explore:compare") + f"?c1={lead.slug}:{RTX_4090}:" in body

    def test_another_sort_still_groups_by_family(self) -> None:
        _, context = self.page("?sort=-speed")
        table = context["table"]
        speeds = [r.fit.calibrated_speed or 0 for r in table.rows if r.fit.calibrated_speed]
        assert speeds == sorted(speeds, reverse=True)
        assert table.groups[0].family == (table.rows[0].model.family or table.rows[0].model.name)


def _llama_config() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text()
    )
    return loaded


@pytest.fixture
def logged_in(client: Client, django_user_model: Any) -> Client:
    translation.activate("en")
    for name, bits, rank in (("BF16", 16, 99), ("Q8_0", 8.5, 90), ("Q4_K_M", 4.5, 70)):
        QuantFormat.objects.create(
            name=name, slug=name.lower(), family="gguf", bits_per_weight=bits, quality_rank=rank
        )
    Accelerator.objects.create(
        vendor="NVIDIA",
        architecture="Ampere",
        name="Card 0",
        slug="card-0",
        memory_gb=24,
        bandwidth_gbps=900,
        fp16_tflops=70,
        price_usd=1500,
        tdp_w=350,
    )
    client.force_login(django_user_model.objects.create_user("viewer", password="x"))
    return client


def _add_models(n: int) -> None:
    start = LLMModel.objects.count()
    for i in range(start, start + n):
        LLMModel.objects.create(
            name=f"Model {i}", slug=f"model-{i}", family=f"Family {i % 4}", config=_llama_config()
        )


@pytest.mark.django_db
def test_the_card_page_reads_as_few_queries_for_40_models_as_for_4(
    logged_in: Client, django_assert_max_num_queries: Any
) -> None:
    url = reverse("explore:gpu-models", args=["card-0"]) + "?show_all=on"
    _add_models(4)
    bump_catalog_version()
    # Session, user, memberships; the card, the quant ladder, the cloud offers; then the
    # models with their weights (two), the card's power and the support matrix (two).
    with django_assert_max_num_queries(11):
        few = logged_in.get(url)
    assert few.context["table"].candidates == 4
    _add_models(36)
    bump_catalog_version()
    with django_assert_max_num_queries(11):
        many = logged_in.get(url)
    assert many.context["table"].candidates == 40
    # Same config in each family: the 10 models of a family fold into one row.
    assert [g.models for g in many.context["table"].groups] == [10, 10, 10, 10]
