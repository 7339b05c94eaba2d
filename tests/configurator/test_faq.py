"""The configurator's FAQ: at least eight questions, each answered in a
sentence with this pair's own figures, the cost answers read per request (never from the
catalog-only fragment cache)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from estimator.units import GIB
from tests.configurator.test_answer import PanelCase, answer_html


def faq(body: str) -> dict[str, str]:
    """The FAQ's answers by their data-faq name, tags stripped and spaces collapsed."""
    section = body.split('<section class="card faq" id="faq">')[1].split("</section>")[0]
    return {
        name: " ".join(re.sub(r"<[^>]+>", " ", text).split())
        for name, text in re.findall(r'<p data-faq="([\w-]+)">(.*?)</p>', section, re.S)
    }


def questions(body: str) -> list[str]:
    section = body.split('id="faq"')[1].split("</section>")[0]
    return re.findall(r"<h3>(.*?)</h3>", section, re.S)


class Faq(PanelCase):
    def page(self, **params: str) -> tuple[Any, str, dict[str, str]]:
        response = self.get(**params)
        assert response.status_code == 200
        body = response.content.decode()
        return response, body, faq(body)

    def test_at_least_eight_questions_each_with_an_answer(self) -> None:
        for params in ({}, {"quant": "Q8_0"}, {"seqs": "4"}):
            _, body, answers = self.page(**params)
            asked = questions(body)
            assert len(asked) >= 8, params
            assert len(asked) == len(answers) and all(answers.values()), params
            assert len(set(asked)) == len(asked), params  # no question twice

    def test_the_answers_carry_the_pages_figures(self) -> None:
        self.offer("acme-1", "2.00")
        response, body, answers = self.page(seqs="2")
        result, answer = response.context["result"], response.context["answer"]
        spare = result.fit.reserve_bytes / GIB
        need = result.per_device_bytes / GIB
        assert answers["fit"] == (
            f"Yes: Q4_K_M weights at 8,192 tokens of context need {need:.1f} GiB on 1 GPU, "
            f"with {spare:.1f} GiB to spare."
        )
        one = result.decode_tokens_per_s
        assert answers["speed"] == (
            f"About {round(one.estimate)} tokens per second for one sequence with Q4_K_M "
            f"weights in llama.cpp (between {one.low:.1f} and {one.high:.1f})."
        )
        assert answers["concurrency"] == (
            f"Up to {result.max_concurrent_sequences} sequences of 8,192 tokens fit in memory "
            f"at once. At 2 sequences it decodes "
            f"{result.aggregate_decode_tokens_per_s.estimate:.0f} tokens per second in all."
        )
        ttft, prefill = result.ttft_s, result.prefill_tokens_per_s.estimate
        assert answers["ttft"] == (
            f"About {ttft.estimate:.2f} s (between {ttft.low:.2f} and {ttft.high:.2f} s): the "
            f"prompt is read at about {prefill:,.0f} tokens per second."
        )
        assert answers["context"] == (
            f"Up to {result.max_context_tokens:,} tokens per sequence with 2 concurrent sequences."
        )
        # The panel's own cost figure, and the figures it comes from.
        usd = answer.per_million
        assert usd == answer.cloud.per_million_all
        assert answers["cost"].startswith(
            f"About {usd:.2f} USD on the cheapest cloud offer, Acme GPU acme-1 at 2.00 USD/h"
        )
        assert f"{usd:.2f} USD" in answer_html(body, "cost")
        assert f"Owning the hardware: about {answer.owned_per_million:.2f} USD" in answers["cost"]
        months = response.context["rent_vs_buy"].break_even_months
        assert answers["rent"].startswith(
            f"Buying pays off after {months:.1f} months against renting Acme GPU 8 h a day"
        )

    def test_best_quant_gpus_and_finetuning_answers(self) -> None:
        response, _, answers = self.page(quant="")  # "best that fits"
        figures = response.context["faq"]
        best = figures.best_quant
        # One A100 (80 GiB) at 8K: Q5_K_M is the least compressed GGUF of the ladder that
        # fits (the page's own default quant, test_views); BF16 (106B x 2 bytes = ~197 GiB)
        # takes 4 of them (2 x ~78 GiB usable is too little), the model's 131,072-token
        # context at Q4_K_M 2 of them.
        assert best.quant == "Q5_K_M" == response.context["setup"].quant
        assert answers["quant"] == (
            f"Q5_K_M: the least compressed format that fits one A100 80GB PCIe at 8,192 tokens "
            f"of context, {best.per_device_bytes / GIB:.1f} GiB, about "
            f"{best.decode_tokens_per_s:.0f} tokens per second."
        )
        assert (figures.full_precision.quant, figures.full_precision.gpus) == ("BF16", 4)
        assert answers["gpus-precision"] == (
            "4 × A100 80GB PCIe hold BF16 weights at 8,192 tokens of context."
        )
        full = self.page(quant="Q4_K_M")[0].context["faq"].full_context
        assert (full.context_tokens, full.gpus) == (131072, 2)
        assert self.page(quant="Q4_K_M")[2]["gpus-context"] == (
            "2 × A100 80GB PCIe hold Q4_K_M weights with 131,072 tokens of context."
        )
        rows = {row.method: row for row in response.context["finetune"]}
        qlora = rows["qlora"].per_device_bytes / GIB
        lora = rows["lora"].per_device_bytes / GIB
        said = answers["finetune"]
        assert f"QLoRA needs {qlora:.1f} GiB per GPU" in said
        assert f"LoRA needs {lora:.1f} GiB per GPU" in said

    def test_does_not_fit_answers_say_so_with_the_shortfall(self) -> None:
        response, _, answers = self.page(quant="Q8_0")
        short = -response.context["result"].fit.reserve_bytes / GIB
        assert answers["fit"].startswith(
            "Not with Q8_0 weights at 8,192 tokens of context on 1 GPU"
        )
        assert answers["fit"].endswith(f"{short:.1f} GiB short.")
        assert answers["speed"].startswith("It does not run in this configuration")
        assert answers["cost"] == "Nothing: this configuration does not run."

    def test_without_an_offer_the_cost_and_rent_answers_use_owning(self) -> None:
        response, _, answers = self.page()
        owned = response.context["answer"].owned_per_million
        assert answers["cost"] == (
            f"Owning the hardware: about {owned:.2f} USD, the purchase over 3 years and the "
            "electricity, busy 50 % of every day."
        )
        month = response.context["owner_month"]
        # 12,000 USD / 36 months = 333.33 + 500 W x 8 h x 365/12 d = 121.67 kWh x 0.15 =
        # 18.25 USD: 351.58 USD a month, rounded to 352.
        assert abs(month.total_usd - (12000 / 36 + 0.5 * 8 * 365 / 12 * 0.15)) < 1e-9
        assert answers["rent"] == (
            "No cloud offer to compare with: owning costs about 352 USD a month at 8 h a day."
        )

    def test_a_price_change_shows_without_a_catalog_edit(self) -> None:
        offer = self.offer("acme-1", "2.00")
        _, body, answers = self.page()
        offer.on_demand_per_hour = Decimal("4.00")
        offer.save()  # a price refresh: no catalog version change
        _, body_after, answers_after = self.page()
        assert "at 2.00 USD/h" in answers["cost"] and "at 4.00 USD/h" in answers_after["cost"]
        # the answer panel too: twice the price per hour, twice the price per 1M tokens
        assert "rented: 2.00 USD/h on Acme GPU" in answer_html(body, "cost")
        assert "rented: 4.00 USD/h on Acme GPU" in answer_html(body_after, "cost")
