"""The org area in a browser, in English and German at desktop and phone width: the
overview lists every feature with its count, an invitation to an e-mail address shows a
sign-up link with a working copy button, the invitee signs up through it and the admin
approves the account; a new API token has its copy button too."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import (
    DESKTOP,
    ORG,
    PHONE,
    NewPage,
    Server,
    Watch,
    overflow,
    run_axe,
    visit,
)

VARIANTS = {
    "en-1366": ("en", DESKTOP),
    "en-390": ("en", PHONE),
    "de-1366": ("de", DESKTOP),
    "de-390": ("de", PHONE),
}
FEATURES = ("members", "own", "fleet", "planner", "reports", "prices", "tokens", "activity")
PASSWORD = "Correct-Horse-42-battery"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_overview_lists_every_feature(
    variant: str, new_page: NewPage, server: Server, demo_state: Path
) -> None:
    language, viewport = VARIANTS[variant]
    page, watch = new_page(viewport=viewport, state=demo_state)
    visit(page, watch, server.at(f"/{language}/o/{ORG}/"))
    for feature in FEATURES:
        card = page.locator(f"#overview-{feature}")
        expect(card).to_be_visible()
        # Each card links somewhere and says how many (a digit in its count line); the
        # activity card names the latest entry instead, or that there is none.
        assert card.locator("a").count() >= 1, feature
        if feature != "activity":
            assert re.search(r"\d", card.inner_text()), feature
    assert page.locator(f'#overview-own a[href="/{language}/o/{ORG}/own/models/"]').count() == 1
    assert overflow(page) == ""
    assert run_axe(page, server) == []
    assert watch.problems == []


def invite(page: Page, server: Server, watch: Watch, language: str, address: str) -> None:
    visit(page, watch, server.at(f"/{language}/o/{ORG}/members/"))
    page.fill("#id_identifier", address)
    page.locator(f'form[action="/{language}/o/{ORG}/members/"] button[type=submit]').click()
    page.wait_for_load_state("load")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_sign_up_link_is_copied_used_and_approved(
    variant: str, new_page: NewPage, server: Server, demo_state: Path
) -> None:
    language, viewport = VARIANTS[variant]
    page, watch = new_page(viewport=viewport, state=demo_state)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    name = f"new{uuid.uuid4().hex[:8]}"
    invite(page, server, watch, language, f"{name}@example.com")
    link = page.locator("#signup-url")
    expect(link).to_be_visible()
    address = link.inner_text().strip()
    assert re.fullmatch(r"http://[^/]+/join/[A-Za-z0-9_-]{43}/", address), address
    button = page.locator('button[data-copy="signup-url"]')
    expect(button).to_be_visible()
    assert (button.get_attribute("aria-label") or "").strip()
    button.click()
    expect(page.locator("#new-signup-link .copy-status")).not_to_be_empty()
    assert page.evaluate("navigator.clipboard.readText()") == address
    assert overflow(page) == ""
    assert run_axe(page, server) == []

    # The invitee, signed in nowhere, makes the account through the link.
    invitee, invitee_watch = new_page(viewport=viewport)
    invitee.context.add_cookies([{"name": "django_language", "value": language, "url": server.url}])
    visit(invitee, invitee_watch, address)
    assert f"/{language}/join/" in invitee.url
    invitee.fill("#id_username", name)
    invitee.fill("#id_password1", PASSWORD)
    invitee.fill("#id_password2", PASSWORD)
    invitee.locator("main form button[type=submit]").click()
    invitee.wait_for_load_state("load")
    expect(invitee.locator("main h1")).to_be_visible()
    assert invitee.locator("#id_username").count() == 0  # the form is gone: created
    assert invitee_watch.problems == []

    # The admin approves it from the members page's "awaiting approval" list.
    visit(page, watch, server.at(f"/{language}/o/{ORG}/members/"))
    row = page.locator("#awaiting-approval tr", has_text=name)
    expect(row).to_have_count(1)
    row.locator('form[action$="/approve/"] button').click()
    page.wait_for_load_state("load")
    expect(page.locator("#awaiting-approval tr", has_text=name)).to_have_count(0)
    assert watch.problems == []


@pytest.mark.parametrize("language", ["en", "de"])
def test_a_new_api_token_has_a_copy_button(
    language: str, new_page: NewPage, server: Server, demo_state: Path
) -> None:
    page, watch = new_page(viewport=DESKTOP, state=demo_state)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    visit(page, watch, server.at(f"/{language}/account/tokens/"))
    page.fill("#id_name", f"browser {language}")
    page.locator('form[action$="/account/tokens/"] button[type=submit]').click()
    page.wait_for_load_state("load")
    token = page.locator("#new-token").inner_text().strip()
    assert token.startswith("rs_")
    button = page.locator('button[data-copy="new-token"]')
    expect(button).to_be_visible()
    assert (button.get_attribute("aria-label") or "").strip()
    button.click()
    expect(page.locator(".copy-status")).not_to_be_empty()
    assert page.evaluate("navigator.clipboard.readText()") == token
    assert watch.problems == []
