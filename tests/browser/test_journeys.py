"""The main journeys, in a real browser against a real server: log in, search, size a
model on a card (HTMX swaps, the address follows), save, report, share, open the shared
link logged out, switch language keeping the state, compare four columns."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import (
    CARD,
    CARD_2,
    CONFIGURE,
    DESKTOP,
    MODEL,
    ORG,
    PHONE,
    NewPage,
    Server,
    create_share_link,
    log_in,
    overflow,
    save_configuration,
)


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def mark_document(page: Page) -> None:
    """A mark on the window and one on #results: a reload loses the first, a swap the second."""
    page.evaluate("() => { window.__browserTestMark = 'still here'; }")
    page.evaluate(
        "() => document.querySelector('#results').setAttribute('data-browser-test', 'old')"
    )


def assert_swapped_without_reload(page: Page) -> None:
    assert page.evaluate("() => window.__browserTestMark") == "still here", "the page reloaded"
    expect(page.locator("#results")).to_have_count(1)
    expect(page.locator("#results[data-browser-test]")).to_have_count(0)


def type_value(page: Page, selector: str, value: str) -> None:
    """Type into a field, then leave it: the change event sends the form."""
    field = page.locator(selector)
    field.fill(value)
    field.dispatch_event("change")


def change_and_wait(page: Page, action: Callable[[], object]) -> None:
    """Run `action` (which changes a field of the configurator form) and wait for the HTMX
    request it triggers and for htmx to settle the swap."""
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true") as got:
        action()
    assert got.value.status in (200, 400), got.value.status
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def other_option(page: Page, select: str) -> str:
    """The value of the first option of `select` that is not the selected one."""
    value = page.evaluate(
        """(sel) => {
          const s = document.querySelector(sel);
          const o = Array.from(s.options).find(o => !o.selected && o.value && !o.disabled);
          return o ? o.value : null;
        }""",
        select,
    )
    assert value, f"{select} offers no other choice"
    return str(value)


def test_login_then_search_finds_the_model(new_page: NewPage, server: Server) -> None:
    page, watch = new_page()
    page.goto(server.at("/en/"))
    # A visitor's landing page: what the portal answers, the demo login, a way in.
    expect(page.locator("h1")).to_contain_text("Which hardware runs which model")
    expect(page.locator(".demo-login")).to_contain_text("demo")
    page.locator("main a.button.primary").click()
    page.wait_for_url(re.compile(r"/en/accounts/login/"))
    log_in(page, server)
    page.goto(server.at("/en/"))
    search = page.locator("main input[type=search]").first
    search.fill("llama 3.1 8b")
    # The suggestions come by HTMX as one types, without leaving the page.
    expect(page.locator("#suggestions a").first).to_be_visible()
    expect(page.locator(f'#suggestions a[href*="{MODEL}"]').first).to_be_visible()
    search.press("Enter")
    page.wait_for_url(re.compile(r"/en/search/\?q="))
    expect(page.locator(f'main a[href*="{MODEL}"]').first).to_be_visible()
    # The header's search box goes to the same page.
    header_search = page.locator("#topsearch-q")
    header_search.fill("4090")
    header_search.press("Enter")
    page.wait_for_url(re.compile(r"/en/search/\?q=4090"))
    expect(page.locator(f'main a[href*="{CARD}"]').first).to_be_visible()
    assert watch.problems == []


def test_configurator_swaps_results_and_moves_the_address(
    new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(state=demo_state, allow_status={400})
    page.goto(server.at(CONFIGURE), wait_until="networkidle")
    expect(page.locator("#results")).to_be_visible()

    # Quant: another weights format.
    quant = other_option(page, "#id_quant")
    mark_document(page)
    change_and_wait(page, lambda: page.select_option("#id_quant", quant))
    assert_swapped_without_reload(page)
    page.wait_for_function("(q) => location.search.includes('quant=' + q)", arg=quant)
    assert query_of(page.url)["quant"] == [quant]

    # Context: typed, then the change event (leaving the field) sends it.
    mark_document(page)
    change_and_wait(page, lambda: type_value(page, "#id_ctx", "16384"))
    assert_swapped_without_reload(page)
    page.wait_for_function("() => location.search.includes('ctx=16384')")
    assert query_of(page.url)["ctx"] == ["16384"]
    assert page.locator("#id_ctx").input_value() == "16384"

    # Engine: another one; the form keeps what was chosen before.
    engine = other_option(page, "#id_engine")
    mark_document(page)
    change_and_wait(page, lambda: page.select_option("#id_engine", engine))
    assert_swapped_without_reload(page)
    page.wait_for_function("(e) => location.search.includes('engine=' + e)", arg=engine)
    query = query_of(page.url)
    assert query["engine"] == [engine]
    assert query["ctx"] == ["16384"]

    # The pushed address opens the same configuration as a whole page.
    page.reload(wait_until="networkidle")
    assert page.locator("#id_ctx").input_value() == "16384"
    assert page.locator("#id_engine").input_value() == engine
    assert [p for p in watch.problems if "HTTP 400" not in p] == []


def test_save_report_share_and_open_the_link_logged_out(
    new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(state=demo_state)
    report = save_configuration(page, server, "Journey: Llama on a 4090", "?gpus=2&ctx=8192")
    expect(page.locator("h1")).to_have_text("Journey: Llama on a 4090")
    # The report lists the figures it saved: the configuration's GPUs among them.
    expect(page.locator("main")).to_contain_text("4090")
    # It is in the organization's list.
    page.goto(server.at(f"/en/o/{ORG}/reports/"))
    expect(page.locator(f'main a[href="{report}"]')).to_have_count(1)

    shared = create_share_link(page, server, report)
    assert watch.problems == []

    anonymous, anonymous_watch = new_page()
    answer = anonymous.goto(server.at(shared), wait_until="networkidle")
    assert answer is not None and answer.status == 200
    assert "/accounts/login/" not in anonymous.url
    expect(anonymous.locator("main")).to_contain_text("Journey: Llama on a 4090")
    expect(anonymous.locator("main")).to_contain_text("4090")
    assert anonymous_watch.problems == []


def test_language_switch_keeps_the_address_and_its_query(
    new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(state=demo_state)
    page.goto(server.at(CONFIGURE + "?gpus=2"), wait_until="networkidle")
    assert page.locator("#id_gpus").input_value() == "2"
    # An HTMX change pushes a new address; the language switch must carry that one, not
    # the address the page was loaded at (which the server wrote into next=).
    mark_document(page)
    change_and_wait(page, lambda: type_value(page, "#id_ctx", "12288"))
    assert_swapped_without_reload(page)
    page.wait_for_function("() => location.search.includes('ctx=12288')")

    page.select_option("#language", "de")
    page.locator("form.langs button[type=submit]").click()
    page.wait_for_url(re.compile(r"/de/models/"))
    page.wait_for_load_state("networkidle")
    assert urlsplit(page.url).path == f"/de/models/{MODEL}/on/{CARD}/"
    query = query_of(page.url)
    assert query["gpus"] == ["2"] and query["ctx"] == ["12288"], page.url
    assert page.locator("#id_gpus").input_value() == "2"
    assert page.locator("#id_ctx").input_value() == "12288"
    expect(page.locator("html")).to_have_attribute("lang", "de")

    # And back, on a page with a plain query (no HTMX): the server's next= is right too.
    page.goto(server.at("/de/search/?q=4090"))
    page.select_option("#language", "en")
    page.locator("form.langs button[type=submit]").click()
    page.wait_for_url(re.compile(r"/en/search/"))
    assert urlsplit(page.url).path == "/en/search/" and query_of(page.url)["q"] == ["4090"]
    assert watch.problems == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1366", "390"])
def test_compare_with_four_columns(
    new_page: NewPage, server: Server, demo_state: Path, viewport: dict[str, int]
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    three = "&".join(
        f"c{n}={MODEL}:{card}:Q4_K_M:{gpus}"
        for n, (card, gpus) in enumerate([(CARD, 1), (CARD_2, 1), (CARD_2, 2)], start=1)
    )
    page.goto(server.at(f"/en/compare/?{three}&ctx=8192"), wait_until="networkidle")
    expect(page.locator("table.compare thead th")).to_have_count(1 + 3)
    # The form's empty fourth slot adds a column (a slug is read as the row it names).
    page.fill("input[name=m4]", MODEL)
    page.fill("input[name=a4]", CARD)
    page.fill("input[name=g4]", "2")
    page.locator("form.compare-form button.primary").click()
    page.wait_for_url(re.compile(r"[?&]c4="))
    page.wait_for_load_state("networkidle")
    expect(page.locator("table.compare thead th")).to_have_count(1 + 4)
    assert overflow(page) == ""
    assert watch.problems == []


def test_phone_menu_opens_and_closes(new_page: NewPage, server: Server, demo_state: Path) -> None:
    page, watch = new_page(viewport=PHONE, state=demo_state)
    page.goto(server.at("/en/"))
    toggle = page.locator(".menu-toggle")
    expect(toggle).to_be_visible()
    expect(page.locator("#topbar-menu")).to_be_hidden()
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#topbar-menu .mainnav a").first).to_be_visible()
    expect(page.locator("#topsearch-q")).to_be_visible()
    assert overflow(page) == ""
    page.keyboard.press("Escape")
    expect(page.locator("#topbar-menu")).to_be_hidden()
    assert watch.problems == []
