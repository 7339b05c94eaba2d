"""The configurator answers in its first screen: at 1366 x 900, the verdict, decode tok/s,
TTFT and a cost per 1M tokens (#answer, built by the configurator's answer panel) are
visible and end above the fold, for a card with a cloud offer and a purchase price
(RTX 4090) and for one with a purchase price only (RTX 3090: the cost of owning it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CARD, CARD_2, DESKTOP, MODEL, NewPage, Server

ANSWERS = ["verdict", "decode", "ttft", "cost"]


@pytest.mark.parametrize("card", [CARD, CARD_2])
def test_verdict_speed_ttft_and_cost_in_the_first_viewport(
    card: str, new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=DESKTOP, state=demo_state)
    page.goto(server.at(f"/en/models/{MODEL}/on/{card}/"), wait_until="networkidle")
    fold = DESKTOP["height"]
    for answer in ANSWERS:
        figure = page.locator(f'#answer [data-answer="{answer}"]')
        expect(figure).to_have_count(1)
        expect(figure).to_be_visible()
        assert figure.inner_text().strip(), f"{answer} is empty"
        box = figure.bounding_box()
        assert box is not None
        # Measured from the top of the page as loaded (not scrolled).
        assert box["y"] + box["height"] <= fold, f"{answer} ends at {box['y'] + box['height']} px"
    assert page.evaluate("() => window.scrollY") == 0
    assert watch.problems == []
