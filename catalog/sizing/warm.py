"""Warm the sizing cache after a catalog change (catalog.tasks.warm_sizing_cache): every
model on every card at the explore pages' defaults, which fills both explore pages.

One sweep per model covers its "model on every card" page; the same sweeps, read per card,
fill every "card across every model" page, so a card page costs no estimate of its own.
Entries go in under the catalog version the warm-up started with (pinned before it reads
any row), so an edit made while it runs is not hidden by what it stores.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from catalog.sizing.cache import pinned_version, store
from catalog.sizing.candidates import (
    DEFAULT_CONTEXT_TOKENS,
    default_floor,
    explore_models,
    ladder_down_to,
    offers_context,
    quant_ladder,
    sweep_accelerators,
)
from catalog.sizing.specs import model_context_limit
from catalog.sizing.sweeps import CardFit, card_parts, fits_by_pair, model_parts, one_card
from estimator.api import RequestError


@dataclass(frozen=True)
class WarmReport:
    models: int  # model pages filled
    cards: int  # card pages filled
    seconds: float

    def as_dict(self) -> dict[str, int]:
        return {key: round(value) for key, value in asdict(self).items()}


def warm_pages() -> WarmReport:
    started = time.monotonic()
    with pinned_version():
        matrix = hardware.support_matrix()
        cards = sweep_accelerators()
        choices = [matrix.default_for(card) for card in cards]
        ladder = quant_ladder()
        quants = ladder_down_to(ladder, default_floor(ladder))
        models = explore_models()
        # Per model, each card's answer at the card page's context (CardFit or the
        # estimator's refusal), in card order.
        at_default: dict[int, list[CardFit | str]] = {}
        model_pages = 0
        for model in models:
            limit = model_context_limit(model)
            page_context = min(DEFAULT_CONTEXT_TOKENS, limit or DEFAULT_CONTEXT_TOKENS)
            fits = None
            if limit is not None:  # else the model page is a 404
                try:
                    fits = fits_by_pair(model, cards, choices, quants, page_context)
                except RequestError:
                    pass
                else:
                    parts = model_parts(model, cards, choices, quants, page_context)
                    store("model-on-cards", parts, tuple(fits))
                    model_pages += 1
            if offers_context(model, DEFAULT_CONTEXT_TOKENS):
                at_default[model.pk] = (
                    list(fits)
                    if fits is not None and page_context == DEFAULT_CONTEXT_TOKENS
                    else _per_card(model, cards, choices, quants)
                )
        eligible = [model for model in models if model.pk in at_default]
        for index, (card, choice) in enumerate(zip(cards, choices, strict=True)):
            answers = tuple(at_default[model.pk][index] for model in eligible)
            parts = card_parts(card, choice, eligible, quants, DEFAULT_CONTEXT_TOKENS)
            store("models-on-card", parts, answers)
    return WarmReport(models=model_pages, cards=len(cards), seconds=time.monotonic() - started)


def _per_card(
    model: LLMModel,
    cards: list[Accelerator],
    choices: list[hardware.EngineChoice | None],
    quants: list[str],
) -> list[CardFit | str]:
    """The card page's answers when the model page's sweep does not give them (another
    context, or the whole sweep refused): card by card, as the card page computes them."""
    try:
        return list(fits_by_pair(model, cards, choices, quants, DEFAULT_CONTEXT_TOKENS))
    except RequestError:
        return [
            one_card(model, card, choice, quants, DEFAULT_CONTEXT_TOKENS)
            for card, choice in zip(cards, choices, strict=True)
        ]
