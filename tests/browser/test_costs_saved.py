"""Cost follows the decision: a saved configuration's report and its shared page show the
cost per 1M output tokens as the configurator showed it when saved, with its basis (rented
from which offer, or owned at which purchase), on a desktop (1366 x 900) and a phone
(390 x 844), in English and German, the figure localised and nothing wider than the
screen. The configuration is conftest's `saved` (Llama 3.1 8B on 2 x RTX 4090, seeded
prices and offers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import DESKTOP, PHONE, NewPage, Saved, Watch, overflow, settle

# The figure as each language writes it: 1.23 in English, 1,23 in German.
FIGURE = {"en": re.compile(r"^\d[\d,]*\.\d{2}$"), "de": re.compile(r"^\d[\d.]*,\d{2}$")}
# The basis as the page words it, in English or German (the de catalogue's msgstrs).
BASIS = re.compile(
    r"(rented: [\d.,]+ USD/h on \S|owned: [\d.,]+ USD over [\d.,]+ years?"
    r"|gemietet: [\d.,]+ USD/h bei \S|eigene Hardware: [\d.,]+ USD über [\d.,]+ Jahre?)"
)


def in_language(path: str, language: str) -> str:
    """The page's address in `language` (the shared address has no prefix)."""
    return re.sub(r"^/(en|de)/", "/", path).replace("/", f"/{language}/", 1)


def check_cost(page: Page, watch: Watch, language: str) -> None:
    settle(page, watch)
    section = page.locator("#cost")
    section.scroll_into_view_if_needed()
    expect(section).to_be_visible()
    figure = section.locator('[data-cost="figure"]').first
    expect(figure).to_be_visible()
    number = figure.inner_text().replace("USD", "").strip()
    assert FIGURE[language].match(number), (language, number)
    basis = section.locator('[data-cost="basis"]').first
    expect(basis).to_be_visible()
    # Translations come later: the basis reads in English until its German text exists.
    assert BASIS.search(basis.inner_text()), basis.inner_text()
    assert not overflow(page), overflow(page)
    assert not watch.problems, watch.problems


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("language", ["en", "de"])
def test_the_report_shows_the_cost_and_its_basis(
    new_page: NewPage, saved: Saved, demo_state: Path, viewport: dict[str, int], language: str
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state, shared=True)
    page.goto(in_language(saved.report, language))
    check_cost(page, watch, language)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("language", ["en", "de"])
def test_the_shared_page_shows_the_cost_and_its_basis(
    new_page: NewPage, saved: Saved, viewport: dict[str, int], language: str
) -> None:
    page, watch = new_page(viewport=viewport)
    page.goto(in_language(saved.shared, language))
    check_cost(page, watch, language)


def test_the_saved_list_has_a_cost_column(
    new_page: NewPage, saved: Saved, demo_state: Path
) -> None:
    page, watch = new_page(viewport=DESKTOP, state=demo_state, shared=True)
    page.goto("/en/o/demo/reports/")
    settle(page, watch)
    cells = page.locator('td[data-cost="cell"]')
    assert cells.count() >= 2
    expect(page.locator("thead")).to_contain_text("USD per 1M tokens")
    expect(cells.first.locator('[data-cost="basis"]')).to_contain_text(BASIS)
