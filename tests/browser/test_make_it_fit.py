"""Make it fit in a real browser: Llama-3.1-8B Q8_0 on an RTX 4090 (the seed catalog) with
8 sequences of 32,768 tokens does not fit, 3 do. The answer says so, and the plan's "lower
the sequences to 3" is a link: clicked, htmx swaps the form and the results, the address
moves to seqs=3, and the verdict changes to one that runs. In English and German, at
1366 x 900 and 390 x 844; the page stays within the viewport and axe finds nothing serious."""

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
    localized_numbers_in_attributes,
    overflow,
    run_axe,
    settle,
    visit,
)

EIGHT = "engine=llama.cpp&quant=Q8_0&ctx=32768&seqs=8"


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_clicking_fewer_sequences_changes_the_verdict(
    language: str,
    viewport: dict[str, int],
    new_page: NewPage,
    server: Server,
    demo_state: Path,
) -> None:
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/models/{MODEL}/on/{CARD}/?{EIGHT}"))
    expect(page.locator("#answer")).to_have_class(re.compile(r"\banswer-does_not_fit\b"))
    expect(page.locator('#answer [data-answer="sequences"]')).to_contain_text("3")
    if language == "en":
        expect(page.locator('#answer [data-answer="sentence"]')).to_contain_text(
            "fits 3 of the 8 sequences at 32,768 tokens: lower the sequences to 3"
        )
    option = page.locator('#plan li[data-fit-option="fewer_sequences"] a')
    expect(option).to_have_count(1)
    assert "seqs=3" in (option.get_attribute("href") or "")
    # Every option offered runs: no option is marked as not fitting.
    expect(page.locator("#plan [data-fit-verdict=does_not_fit]")).to_have_count(0)
    assert overflow(page) == ""
    assert localized_numbers_in_attributes(page, language) == []
    assert run_axe(page, server) == []

    page.evaluate("() => { window.__browserTestMark = 'still here'; }")
    with page.expect_response(lambda r: r.request.headers.get("hx-target") == "cfg-layout"):
        option.click()
    page.wait_for_function("() => location.search.includes('seqs=3')")
    settle(page, watch)
    assert page.evaluate("() => window.__browserTestMark") == "still here", "the page reloaded"
    assert parse_qs(urlsplit(page.url).query)["seqs"] == ["3"]
    expect(page.locator("#answer")).to_have_class(re.compile(r"\banswer-(comfortable|tight)\b"))
    expect(page.locator('#answer [data-answer="sequences"]')).to_have_count(0)
    assert page.locator("#id_seqs").input_value() == "3"  # the form shows the state applied
    expect(page.locator('#answer [data-answer="verdict"]')).to_be_in_viewport()
    assert overflow(page) == ""
    assert watch.problems == []
