"""axe-core (vendored, static/vendor/axe-core/) on the main pages: no violation of impact
"serious" or "critical" at desktop width, nor at phone width with the header's menu open."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import DESKTOP, PHONE, NewPage, Saved, Server, run_axe, visit
from tests.browser.test_pages import PAGES, page_path

MAIN_PAGES = [
    "login",
    "shared-link",
    "home",
    "models",
    "model",
    "accelerators",
    "accelerator",
    "prices",
    "search",
    "compare-4",
    "model-on-every-card",
    "card-across-models",
    "configurator",
    "org-dashboard",
    "org-members",
    "org-reports",
    "org-report",
]


@pytest.mark.parametrize("name", MAIN_PAGES)
def test_no_serious_accessibility_violations(
    name: str, new_page: NewPage, server: Server, saved: Saved, demo_state: Path
) -> None:
    who = PAGES[name][0]
    state = demo_state if who == "demo" else None
    page, watch = new_page(viewport=DESKTOP, state=state, shared=True)
    path = page_path(name, "en", saved)
    visit(page, watch, server.at(path))
    violations = run_axe(page, server)
    assert violations == [], f"{path}: " + "; ".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes']}" for v in violations
    )


def test_phone_header_with_its_menu_open(
    new_page: NewPage, server: Server, saved: Saved, demo_state: Path
) -> None:
    page, _watch = new_page(viewport=PHONE, state=demo_state)
    page.goto(server.at(page_path("org-reports", "en", saved)), wait_until="networkidle")
    page.locator(".menu-toggle").click()
    violations = run_axe(page, server)
    assert violations == [], "; ".join(
        f"{v['id']}: {v['help']} at {v['nodes']}" for v in violations
    )
