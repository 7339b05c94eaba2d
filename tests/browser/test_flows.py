"""Flows that keep the answer, in a real browser, in English and German at 1366 x 900 and
390 x 844: "best that fits" survives a context change; when nothing fits the page sizes the
nearest miss; the language switch works when the cookie names another language; switching
the engine never traps the page on a KV type; seeded prices read "as of", never "stale"."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import (
    CARD,
    DESKTOP,
    MODEL,
    PHONE,
    NewPage,
    Server,
    overflow,
    visit,
)

LANGUAGES = pytest.mark.parametrize("language", ["en", "de"])
VIEWPORTS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
# Llama-3.1-70B on one 24 GB card: even its 4-bit files need about 40 GB.
BIG_MODEL = "llama-3-1-70b-instruct"
# The "good" tier's 4-bit GGUF formats (estimator/quality.py): the nearest miss is one.
FOUR_BIT = re.compile(r"\((IQ4_XS|IQ4_NL|Q4_0|Q4_K_S|Q4_K_M)\)")


def change_and_wait(page: Page, action: Callable[[], object]) -> None:
    """Run `action` (a change to the configurator form) and wait for htmx's answer."""
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true") as got:
        action()
    assert got.value.status == 200, got.value.status
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def type_value(page: Page, selector: str, value: str) -> None:
    """Type into a field, then leave it: the change event sends the form."""
    field = page.locator(selector)
    field.fill(value)
    field.dispatch_event("change")


def selected_quant(page: Page) -> tuple[str, str]:
    """The quant select's value and the selected option's text."""
    option = page.locator("#id_quant option:checked")
    return str(option.get_attribute("value")), option.inner_text()


@LANGUAGES
@VIEWPORTS
def test_best_that_fits_survives_a_context_change(
    language: str, viewport: dict[str, int], new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/models/{MODEL}/on/{CARD}/?engine=llama.cpp"))
    value, first = selected_quant(page)
    assert value == "" and re.search(r"\(\w+\)", first), first
    change_and_wait(page, lambda: type_value(page, "#id_ctx", "131072"))
    # Still "best that fits", re-sized for the longer context: an answer that runs.
    value, second = selected_quant(page)
    assert value == "", second
    expect(page.locator("#answer")).not_to_have_class(re.compile(r"answer-does_not_fit"))
    assert not re.search(r"[?&]quant=[^&]", page.url), page.url  # the address keeps it too
    assert overflow(page) == ""


@LANGUAGES
@VIEWPORTS
def test_when_nothing_fits_the_nearest_miss_is_sized(
    language: str, viewport: dict[str, int], new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/models/{BIG_MODEL}/on/{CARD}/?engine=llama.cpp"))
    expect(page.locator("#answer")).to_have_class(re.compile(r"answer-does_not_fit"))
    value, label = selected_quant(page)
    assert value == "" and FOUR_BIT.search(label), label  # not BF16 or Q8_0


@LANGUAGES
@VIEWPORTS
def test_the_language_switch_works_with_a_cookie_for_another_language(
    language: str, viewport: dict[str, int], new_page: NewPage, server: Server, demo_state: Path
) -> None:
    other = "de" if language == "en" else "en"
    page, watch = new_page(viewport=viewport, state=demo_state)
    # A colleague's link in `language`, opened with a cookie that names the other one.
    page.context.add_cookies([{"name": "django_language", "value": other, "url": server.at("/")}])
    visit(page, watch, server.at(f"/{language}/models/?q=llama"))
    expect(page.locator("html")).to_have_attribute("lang", language)
    if viewport == PHONE:
        page.locator(".menu-toggle").click()
    page.select_option("#language", other)
    page.locator("form.langs button[type=submit]").click()
    page.wait_for_url(re.compile(rf"/{other}/models/\?q=llama"))
    expect(page.locator("html")).to_have_attribute("lang", other)


@LANGUAGES
@VIEWPORTS
def test_switching_the_engine_never_traps_the_page_on_its_kv_type(
    language: str, viewport: dict[str, int], new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/models/{MODEL}/on/{CARD}/?engine=llama.cpp&kv=q8_0"))
    assert page.locator("#id_kv").input_value() == "q8_0"
    change_and_wait(page, lambda: page.select_option("#id_engine", "vllm"))
    # vLLM has no q8_0 cache: f16 instead, with a note, and an answer (no error).
    expect(page.locator("#id_kv")).to_have_value("f16")
    expect(page.locator("#field-kv .field-note")).to_contain_text("q8_0")
    expect(page.locator(".error-summary")).to_have_count(0)
    # A later change still answers.
    change_and_wait(page, lambda: type_value(page, "#id_ctx", "16384"))
    expect(page.locator(".error-summary")).to_have_count(0)
    expect(page.locator("#answer")).to_have_count(1)


@LANGUAGES
@VIEWPORTS
def test_seeded_prices_read_as_of_their_date_and_are_never_stale(
    language: str, viewport: dict[str, int], new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/prices/"))
    expect(page.locator(".badge.stale")).to_have_count(0)
    expect(page.locator("main td time").first).to_be_attached()
    assert overflow(page) == ""
