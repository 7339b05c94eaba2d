"""The compare page's column editor in a real browser, in English and German, at desktop
and phone width: pick a model and a card by typing (the combobox's options, by keyboard
and by pointer), add the column in place (no reload; the address follows), see the cost
row, remove a column in place, and no serious accessibility violation with the options
open."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    CARD,
    DESKTOP,
    MODEL,
    PHONE,
    NewPage,
    Server,
    overflow,
    run_axe,
    settle,
    visit,
)


def columns_in(url: str) -> list[str]:
    query = parse_qs(urlsplit(url).query)
    return [query[f"c{n}"][0] for n in range(1, 5) if f"c{n}" in query]


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1366", "390"])
def test_pick_add_see_the_cost_and_remove_in_place(
    new_page: NewPage, server: Server, demo_state: Path, viewport: dict[str, int], lang: str
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{lang}/compare/?c1={MODEL}:{CARD}:Q4_K_M:1&ctx=8192"))
    expect(page.locator("table.compare thead th")).to_have_count(1 + 1)
    page.evaluate("() => { window.__browserTestMark = 'still here'; }")

    # The model by keyboard: type part of its name, arrow down to its option, Enter.
    model = page.locator("input[name=m2]")
    model.click()
    model.press_sequentially("llama 3.1 8b", delay=20)
    options = page.locator("#m2-options [role=option]")
    expect(options.first).to_be_visible()
    expect(model).to_have_attribute("aria-expanded", "true")
    values = options.evaluate_all("els => els.map(e => e.dataset.value)")
    wanted = values.index("Llama 3.1 8B Instruct")
    for _ in range(wanted + 1):
        model.press("ArrowDown")
    expect(model).to_have_attribute("aria-activedescendant", f"m2-option-{wanted}")
    expect(options.nth(wanted)).to_have_attribute("aria-selected", "true")
    model.press("Enter")
    expect(model).to_have_value("Llama 3.1 8B Instruct")
    expect(page.locator("#m2-options")).to_be_hidden()

    # The card by pointer: type "3090", pick the option.
    card = page.locator("input[name=a2]")
    card.click()
    card.fill("3090")
    option = page.locator("#a2-options [role=option]", has_text="RTX 3090").first
    expect(option).to_be_visible()
    violations = run_axe(page, server)  # with the options open
    assert violations == [], violations
    option.click()
    expect(card).to_have_value(re.compile(r"RTX 3090$"))

    # Add it in place: the table gains a column, the address names it, no reload.
    page.locator("button[data-action=add]").click()
    page.wait_for_url(re.compile(r"[?&]c2="))
    settle(page, watch)
    expect(page.locator("table.compare thead th")).to_have_count(1 + 2)
    assert columns_in(page.url) == [
        f"{MODEL}:{CARD}:Q4_K_M:1",
        f"{MODEL}:nvidia-geforce-rtx-3090::1",
    ]
    assert page.evaluate("() => window.__browserTestMark") == "still here", "the page reloaded"

    # The cost row: a figure in USD with its basis in each column.
    cells = page.locator("tr[data-row=cost] td")
    expect(cells).to_have_count(2)
    for n in range(2):
        expect(cells.nth(n)).to_contain_text("USD")
        expect(cells.nth(n).locator("[data-cost]")).to_have_count(1)
    expect(page.locator("tr[data-row=hardware_price] td").first).to_contain_text("USD")
    # No star on the memory rows.
    expect(page.locator("tr[data-row=utilisation] .best-mark")).to_have_count(0)

    # Remove the first column in place.
    page.locator("a[data-action=remove]").first.click()
    page.wait_for_url(lambda url: "c2=" not in url)
    settle(page, watch)
    expect(page.locator("table.compare thead th")).to_have_count(1 + 1)
    assert columns_in(page.url) == [f"{MODEL}:nvidia-geforce-rtx-3090::1"]
    assert page.evaluate("() => window.__browserTestMark") == "still here", "the page reloaded"
    expect(page.locator("#compare-status")).to_be_focused()

    assert run_axe(page, server) == []
    assert overflow(page) == ""
    assert watch.problems == []
