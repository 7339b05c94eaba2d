"""Phones and wide tables. At 390 x 844 the configurator opens with its answer (the verdict
ends within the first screen), its long sections are folds (<details class="fold">) so the
page is a fraction of its former length, and its setup form follows the results; every
table either fits its box or scrolls inside it with its first column kept in view. At
1366 x 900 the folds are open with no summary, and every column of the fleet's table is
on the screen. In English and German.

Measured when the folds came in (Chromium 156, llama-3-1-8b-instruct on an RTX 4090): the
page was 11,972 px tall at 390 px in English and 12,504 px in German, with the verdict's
top at 912 px, below the first screen; with the folds it is 2,649 and 2,772 px with the
verdict ending at 324 px. The fleet's last column ended at 1,454 px on a 1,366 px screen,
now at 1,220 px."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    CONFIGURE,
    DESKTOP,
    ORG,
    PHONE,
    NewPage,
    Server,
    overflow,
    run_axe,
    visit,
)

LANGUAGES = ["en", "de"]
# Well above the 2,772 px measured in German (room for a longer answer or another fold),
# and well below the 11,972 px the page had before.
PHONE_PAGE_MAX_PX = 4500

# Each table in <main>: its box (the nearest ancestor that scrolls sideways, else its
# parent), whether anything between the table and <body> clips it, and where its first
# column sits once the box is scrolled to its far end.
TABLES_JS = """() => {
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const clips = (el) => ['hidden', 'clip'].includes(getComputedStyle(el).overflowX);
  const out = [];
  for (const table of document.querySelectorAll('main table')) {
    if (!table.getClientRects().length) continue;  // inside a closed fold
    let box = null, clipped = null;
    for (let p = table.parentElement; p && p !== document.body; p = p.parentElement) {
      if (!box && scrolls(p)) box = p;
      if (!box && clips(p)) clipped = p.tagName.toLowerCase() + (p.id ? '#' + p.id : '');
    }
    const holder = box || table.parentElement;
    const name = (table.closest('[id]') || {}).id || '?';
    const right = (el) => el.getBoundingClientRect().right;
    const entry = {name, tableWidth: Math.ceil(table.getBoundingClientRect().width),
                   boxWidth: holder.clientWidth, boxScrollWidth: holder.scrollWidth,
                   scrolls: Boolean(box), clipped, firstColumnShift: 0};
    if (box && box.scrollWidth > box.clientWidth) {
      const left = box.getBoundingClientRect().left;
      box.scrollLeft = box.scrollWidth;
      const cells = table.querySelectorAll(':scope > * > tr > :first-child');
      for (const cell of cells) {
        entry.firstColumnShift = Math.max(
          entry.firstColumnShift, Math.round(left - cell.getBoundingClientRect().left));
      }
      box.scrollLeft = 0;
    }
    entry.overhang = Math.round(right(table) - (holder.getBoundingClientRect().left
                                                + holder.scrollWidth));
    out.push(entry);
  }
  return out;
}"""


def _configure(language: str) -> str:
    return CONFIGURE.replace("/en/", f"/{language}/", 1)


def _table_problems(tables: list[dict[str, Any]]) -> list[str]:
    problems = []
    for t in tables:
        fits = t["tableWidth"] <= t["boxWidth"] + 1
        if t["clipped"]:
            problems.append(f"{t['name']}: clipped by {t['clipped']}")
        if not fits and not t["scrolls"]:
            problems.append(f"{t['name']}: {t['tableWidth']} px in a {t['boxWidth']} px box")
        if t["overhang"] > 1:
            problems.append(f"{t['name']}: {t['overhang']} px beyond its box's scroll width")
        if t["firstColumnShift"] > 1:
            problems.append(f"{t['name']}: first column scrolls away ({t['firstColumnShift']} px)")
    return problems


@pytest.mark.parametrize("language", LANGUAGES)
def test_on_a_phone_the_answer_comes_first_and_the_page_is_short(
    language: str, new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=PHONE, state=demo_state)
    visit(page, watch, server.at(_configure(language)))
    verdict = page.locator('#answer [data-answer="verdict"]')
    expect(verdict).to_be_visible()
    box = verdict.bounding_box()
    assert box is not None
    assert box["y"] + box["height"] <= PHONE["height"], (
        f"verdict ends at {box['y'] + box['height']}"
    )
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < PHONE_PAGE_MAX_PX, f"the page is {height} px tall"
    # The long sections are closed folds; the setup form follows the results, open.
    expect(page.locator("details.fold:not(.cfg-setup)[open]")).to_have_count(0)
    assert page.locator("details.fold:not(.cfg-setup)").count() >= 8
    answer_bottom = page.locator("#answer").bounding_box()
    form_top = page.locator(".cfg-side form.cfg-form").bounding_box()
    assert answer_bottom is not None and form_top is not None
    assert form_top["y"] > answer_bottom["y"] + answer_bottom["height"]
    expect(page.locator("#id_ctx")).to_be_visible()
    assert overflow(page) == ""
    assert watch.problems == []


def test_on_a_phone_a_section_link_opens_its_fold(
    new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=PHONE, state=demo_state)
    visit(page, watch, server.at(CONFIGURE))
    expect(page.locator("#offers table")).to_be_hidden()
    page.locator('#answer a[href="#offers"]').first.click()
    expect(page.locator("#fold-offers")).to_have_attribute("open", "")
    expect(page.locator("#offers table")).to_be_visible()
    # A fold opened by the visitor stays open when a change swaps the results in again.
    page.locator("#fold-memory > summary").click()
    page.locator("#id_ctx").fill("16384")
    page.locator("#id_ctx").dispatch_event("change")
    expect(page.locator("#id_ctx")).to_have_value("16384")
    page.wait_for_url(lambda url: "ctx=16384" in url)
    expect(page.locator("#memory .membar")).to_be_visible()
    assert watch.problems == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_on_a_phone_every_table_scrolls_in_its_box_with_its_first_column_in_view(
    language: str, new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=PHONE, state=demo_state)
    visit(page, watch, server.at(_configure(language)))
    closed = page.locator("details.fold:not([open]) > summary")
    while closed.count():
        closed.first.click()
    tables = page.evaluate(TABLES_JS)
    names = {t["name"] for t in tables}
    assert {"offers", "quant-matrix", "finetune"} <= names, names
    assert _table_problems(tables) == []
    assert overflow(page) == ""
    violations = run_axe(page, server)
    assert violations == [], "; ".join(
        f"{v['id']}: {v['help']} at {v['nodes']}" for v in violations
    )
    assert watch.problems == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_on_a_wide_screen_the_folds_are_open_without_a_summary(
    language: str, new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=DESKTOP, state=demo_state)
    visit(page, watch, server.at(_configure(language)))
    for section in ("memory", "speed", "offers", "quant-matrix", "faq"):
        expect(page.locator(f"#{section} h2").first).to_be_visible()
    expect(page.locator("details.fold > summary:visible")).to_have_count(0)
    assert watch.problems == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1366", "390"])
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_column_of_the_fleet_table_can_be_seen(
    language: str, viewport: dict[str, int], new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/o/{ORG}/fleet/"))
    table = page.locator("table.fleet").first
    expect(table).to_be_visible()
    if viewport is DESKTOP:
        # The last column, tok/s per user, ends on the screen and inside the table's box.
        last = table.locator("thead th").last.bounding_box()
        wrapper = page.locator(".table-scroll:has(table.fleet)").first
        sizes = wrapper.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert last is not None
        assert last["x"] + last["width"] <= DESKTOP["width"], last
        assert sizes[0] <= sizes[1], f"the table scrolls: {sizes}"
    assert _table_problems(page.evaluate(TABLES_JS)) == []
    assert overflow(page) == ""
    assert watch.problems == []
