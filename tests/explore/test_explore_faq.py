"""The model page's generated FAQ: at least eight questions, each answered from the page's
own rows (and the same filters at 32K and 128K tokens), with worked figures."""

from __future__ import annotations

import math
import re
from typing import Any

from django.template.defaultfilters import floatformat
from django.urls import reverse

from catalog.sizing import candidates
from pricing.models import CloudOffer
from sizing_site.explore import tables
from sizing_site.explore.faq import FaqItem
from tests.explore.seeded import SeededCase

GIB = 2**30
LLAMA_70B = "llama-3-3-70b-instruct"
LLAMA_8B = "llama-3-1-8b-instruct"
MISTRAL_7B = "mistral-7b-instruct-v0-3"  # reads at most 32,768 tokens
RTX_4090 = "nvidia-geforce-rtx-4090"


class ModelFaq(SeededCase):
    def page(self, slug: str, query: str = "") -> tuple[str, Any]:
        response = self.client.get(reverse("explore:model-gpus", args=[slug]) + query)
        assert response.status_code == 200
        return response.content.decode(), response.context

    def faq(self, context: Any) -> dict[str, FaqItem]:
        items: list[FaqItem] = context["faq"]
        return {item.question: item for item in items}

    def test_at_least_eight_distinct_questions_each_answered_on_the_page(self) -> None:
        body, context = self.page(LLAMA_70B)
        items: list[FaqItem] = context["faq"]
        assert len(items) >= 8
        assert len({i.question for i in items}) == len(items)
        faq = re.search(r'<section class="card faq".*?</section>', body, re.S)
        assert faq is not None
        assert faq.group(0).count("<dt>") == len(items)
        for item in items:
            assert item.answer and "(s)" not in item.answer
            assert item.question in body
        assert "How to choose" in body  # the short guide under it

    def test_smallest_fastest_and_cheapest_quote_the_rows(self) -> None:
        _, context = self.page(LLAMA_70B)
        table = context["table"]
        faq = self.faq(context)
        smallest = faq["What is the smallest card that runs Llama 3.3 70B Instruct?"]
        row = table.smallest
        assert str(row.accelerator) in smallest.answer
        assert f"{floatformat(row.accelerator.capacity_gib, '1g')} GiB" in smallest.answer
        assert f"runs {row.fit.quant}" in smallest.answer
        fastest = faq["Which card runs Llama 3.3 70B Instruct fastest?"]
        speed = table.fastest.fit.decode_tokens_per_s
        assert str(table.fastest.accelerator) in fastest.answer
        assert f"about {floatformat(speed.estimate, '1g')} tokens per second" in fastest.answer
        # Every card that is calibrated and fits is at most as fast.
        assert all((r.fit.calibrated_speed or 0) <= speed.estimate for r in table.rows if r.fits)
        cheapest = faq["Which card is the cheapest way to run Llama 3.3 70B Instruct?"]
        buy = min(
            (r for r in table.rows if r.fits and r.accelerator.price_usd),
            key=lambda r: r.accelerator.price_usd,
        )
        assert f"{buy.accelerator!s} at {floatformat(buy.accelerator.price_usd, '0g')} USD" in (
            cheapest.answer
        )
        assert f"{table.unpriced} cards that run it have no price" in cheapest.answer

    def test_32k_and_128k_answers_match_a_sweep_at_that_context(self) -> None:
        _, context = self.page(LLAMA_70B)
        faq = self.faq(context)
        model = candidates.explore_model(slug=LLAMA_70B)
        ladder = candidates.quant_ladder()
        quants = candidates.ladder_down_to(ladder, candidates.default_floor(ladder))
        now = context["table"].fitting
        counts = [now]
        for ctx in (32768, 131072):
            table = tables.model_card_table(
                model=model,
                accelerators=candidates.sweep_accelerators(),
                quants=quants,
                context_tokens=ctx,
            )
            answer = faq[f"What changes at {floatformat(ctx, '0g')} tokens of context?"].answer
            assert (
                f"{table.fitting} of {table.candidates} cards run it ({now} at 8,192 tokens)"
                in answer
            )
            assert table.smallest is not None
            assert str(table.smallest.accelerator) in answer
            counts.append(table.fitting)
        # More context, fewer cards: 8K >= 32K >= 128K, and 128K loses some.
        assert counts == sorted(counts, reverse=True) and counts[2] < counts[0]

    def test_a_model_with_a_shorter_context_says_its_limit(self) -> None:
        _, context = self.page(MISTRAL_7B)
        faq = self.faq(context)
        answer = faq["What changes at 131,072 tokens of context?"].answer
        assert answer == "Mistral 7B Instruct v0.3 reads at most 32,768 tokens of context."

    def test_apple_or_not_and_multi_gpu(self) -> None:
        _, context = self.page(LLAMA_70B)
        table = context["table"]
        faq = self.faq(context)
        ranked = tables.sorted_rows([r for r in table.rows if r.fits], "-speed", tables.CARD_SORTS)
        apple = next(r for r in ranked if r.accelerator.vendor == "Apple")
        other = next(r for r in ranked if r.accelerator.vendor != "Apple")
        answer = faq["Should I buy an Apple machine for Llama 3.3 70B Instruct?"].answer
        assert f"fastest Apple machine that runs it is {apple.accelerator}" in answer
        assert f"fastest other card is {other.accelerator}" in answer
        # Multi-GPU: the nearest curated miss needs ceil(need / usable) cards by memory.
        miss = table.nearest_miss
        n = math.ceil(miss.fit.need_bytes / miss.fit.usable_bytes)
        assert n >= 2
        split = faq["Can I split Llama 3.3 70B Instruct over several GPUs?"]
        assert f"about {n} × {miss.accelerator}" in split.answer
        ((label, url),) = split.links
        assert label == f"Open {n} × {miss.accelerator} in the configurator"
        configure = reverse("configurator:configure", args=[LLAMA_70B, miss.accelerator.slug])
        assert url.startswith(configure) and f"gpus={n}" in url

    def test_rent_or_buy_worked_example(self) -> None:
        # Only the 4090 is shown, and it has both a catalog price and a cloud offer.
        _, context = self.page(LLAMA_8B, "?q=GeForce+RTX+4090&vendor=NVIDIA")
        offer = (
            CloudOffer.objects.public()
            .filter(accelerator__slug=RTX_4090, on_demand_per_hour__isnull=False)
            .order_by("on_demand_per_hour")
            .select_related("provider")
            .first()
        )
        assert offer is not None
        rate = float(offer.on_demand_per_hour)
        answer = self.faq(context)["Should I rent or buy the hardware for Llama 3.1 8B Instruct?"]
        # Rent 12 h a day: rate x 12 x 365/12 days; own: 1,599 + 2,000 USD host, 450 + 150 W
        # x 12 h x 365/12 days x 0.15 USD/kWh = 32.85 USD a month; break-even:
        # 3,599 / (rent - 32.85) months.
        rent = rate * 12 * 365 / 12
        energy = 0.6 * 12 * 365 / 12 * 0.15
        months = 3599 / (rent - energy)
        assert f"at {floatformat(rate, '2g')} USD an hour for 12 hours a day" in answer.answer
        assert f"costs {floatformat(rent, '0g')} USD a month" in answer.answer
        assert f"(3,599 USD with its host) costs {floatformat(energy, '0g')} USD" in answer.answer
        assert f"after about {floatformat(months, '0g')} months" in answer.answer

    def test_confidence_counts_match_the_rows(self) -> None:
        _, context = self.page(LLAMA_70B)
        rows = [r for r in context["table"].rows if r.fits]
        counts = {
            level: sum(1 for r in rows if r.confidence == level)
            for level in ("high", "medium", "low")
        }
        answer = self.faq(context)["How sure are these speeds?"].answer
        assert f"high {counts['high']}, medium {counts['medium']}, low {counts['low']}" in answer
        assert "at most 1.6×" in answer and "at most 2.5×" in answer
