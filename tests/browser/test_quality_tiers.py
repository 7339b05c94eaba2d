"""Quality tiers in a real browser: the configurator's weights select names each format's
tier ("Q4_K_M · recommended", IQ1_S experimental), and the page of a model on every card
shows a tier badge beside each format, apart from the fit badge and never in its green,
with the quality filter's options grouped by tier. In English and German, at 1366 x 900
and 390 x 844; the pages stay within the viewport and axe finds nothing serious."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from estimator.quality import TIERS
from tests.browser.conftest import (
    CARD,
    DESKTOP,
    MODEL,
    PHONE,
    NewPage,
    Server,
    overflow,
    run_axe,
    visit,
)

# The fit badge's green (--ok in static/css/site.css, #1d7a3d).
FIT_GREEN = "rgb(29, 122, 61)"


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_weights_select_names_each_formats_tier(
    language: str,
    viewport: dict[str, int],
    new_page: NewPage,
    server: Server,
    demo_state: Path,
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/models/{MODEL}/on/{CARD}/?engine=llama.cpp"))
    select = page.locator("#id_quant")
    q4 = select.locator('option[value="Q4_K_M"]')
    expect(q4).to_have_count(1)
    expect(q4).to_have_text(re.compile(r"^Q4_K_M · \S+"))
    iq1 = select.locator('option[value="IQ1_S"]')
    expect(iq1).to_have_text(re.compile(r"^IQ1_S · \S+"))
    if language == "en":
        expect(q4).to_have_text("Q4_K_M · recommended")
        expect(iq1).to_have_text("IQ1_S · experimental")
    # Every format offered carries a tier ("Best that fits" is not a format).
    texts = select.locator("option[value]:not([value=''])").all_inner_texts()
    assert texts and all(" · " in text for text in texts), texts
    assert overflow(page) == ""
    assert run_axe(page, server) == []


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_model_on_every_card_shows_tier_badges_apart_from_the_fit(
    language: str,
    viewport: dict[str, int],
    new_page: NewPage,
    server: Server,
    demo_state: Path,
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/models/{MODEL}/gpus/"))
    table = page.locator("#results table.fit-table")
    badges = table.locator(".badge.tier")
    expect(badges.first).to_be_visible()
    tiers = set(badges.evaluate_all("els => els.map(e => e.dataset.tier)"))
    assert tiers and tiers <= set(TIERS), tiers
    # The tier badge is its own element, in the quantization cell, never the fit's green.
    colors = badges.evaluate_all("els => els.map(e => getComputedStyle(e).color)")
    assert FIT_GREEN not in colors
    expect(table.locator("td .fit .badge.tier")).to_have_count(0)
    # The quality filter offers the tiers by name, the default a "good" format.
    groups = page.locator("#id_quality optgroup")
    expect(groups).to_have_count(4)
    selected = page.locator("#id_quality option:checked")
    if language == "en":
        assert groups.evaluate_all("els => els.map(e => e.label)") == [
            "Recommended",
            "Good",
            "Degraded",
            "Experimental",
        ]
        expect(selected).to_contain_text("· good")
    # Rows at a format other than the first row's say so when the formats are mixed.
    if page.locator("[data-formats-mixed]").count():
        assert page.locator("[data-format-diff]").count() > 0
    assert overflow(page) == ""
    assert run_axe(page, server) == []
