"""Every GET page of the portal, in a real browser at phone (390 x 844) and desktop
(1366 x 900) width: it answers 200, logs no console error, no request fails or answers
an error (favicon included), the page is no wider than the viewport, and no number a
machine reads back (form values, links, data-* and hx-* attributes) is written with
grouping or a decimal comma.

English at both widths, German at phone width (longer words, and decimals written with a
comma, which the attribute check catches)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from sizing_site.fleet.management.commands.seed_demo import (
    DEMO_MACHINE_CODE,
    DEMO_OWN_CARD,
    DEMO_OWN_MODEL,
)
from tests.browser.conftest import (
    CARD,
    CARD_2,
    DESKTOP,
    MODEL,
    MOE_MODEL,
    ORG,
    PHONE,
    NewPage,
    Saved,
    Server,
    localized_numbers_in_attributes,
    overflow,
    visit,
)

# The demo org's inventory machine (seed_demo), for its edit, delete and history pages.
DEMO_MACHINE = DEMO_MACHINE_CODE

COMPARE_4 = "&".join(
    f"c{n}={MODEL}:{card}:Q4_K_M:{gpus}"
    for n, (card, gpus) in enumerate([(CARD, 1), (CARD_2, 1), (CARD_2, 2), (CARD, 2)], start=1)
)

# name: (who is logged in, path after the language prefix). {report}, {other}, {shared}
# and {code}/{code2} come from the saved configurations (the `saved` fixture).
PAGES: dict[str, tuple[str, str]] = {
    "login": ("anonymous", "accounts/login/"),
    "landing": ("anonymous", ""),
    "shared-link": ("anonymous", "{shared}"),
    "home": ("demo", ""),
    "invitations": ("demo", "invitations/"),
    "password-change": ("demo", "accounts/password/"),
    "api-tokens": ("demo", "account/tokens/"),
    "models": ("demo", "models/"),
    "model": ("demo", f"models/{MODEL}/"),
    "model-moe": ("demo", f"models/{MOE_MODEL}/"),
    "accelerators": ("demo", "accelerators/"),
    "accelerator": ("demo", f"accelerators/{CARD}/"),
    "prices": ("demo", "prices/"),
    "search": ("demo", "search/?q=llama"),
    "compare-4": ("demo", f"compare/?{COMPARE_4}&ctx=8192"),
    "model-on-every-card": ("demo", f"models/{MODEL}/gpus/"),
    "card-across-models": ("demo", f"gpus/{CARD}/"),
    "configurator": ("demo", f"models/{MODEL}/on/{CARD}/"),
    "configurator-moe-2-gpus": ("demo", f"models/{MOE_MODEL}/on/{CARD_2}/?gpus=2&ctx=32768"),
    "org-dashboard": ("demo", f"o/{ORG}/"),
    "org-members": ("demo", f"o/{ORG}/members/"),
    "org-reports": ("demo", f"o/{ORG}/reports/"),
    "org-report": ("demo", "{report}"),
    "org-report-recompute": ("demo", "{report}recompute/"),
    "org-reports-compare": ("demo", f"o/{ORG}/reports/compare/?c={{code}}&c={{code2}}"),
    "org-share-links": ("demo", f"o/{ORG}/reports/links/"),
    "org-activity": ("demo", f"o/{ORG}/activity/"),
    "org-price-feed": ("demo", f"o/{ORG}/prices/feed/"),
    "org-fleet": ("demo", f"o/{ORG}/fleet/"),
    "org-fleet-new": ("demo", f"o/{ORG}/fleet/machines/new/"),
    "org-fleet-edit": ("demo", f"o/{ORG}/fleet/machines/{DEMO_MACHINE}/edit/"),
    "org-fleet-delete": ("demo", f"o/{ORG}/fleet/machines/{DEMO_MACHINE}/delete/"),
    "org-fleet-history": ("demo", f"o/{ORG}/fleet/machines/{DEMO_MACHINE}/history/"),
    "org-planner": ("demo", f"o/{ORG}/planner/?model={MODEL}&users=200&n_plus_one=on"),
    "org-saved-plans": ("demo", f"o/{ORG}/planner/saved/"),
    "org-saved-plan": ("demo", "{plan}"),
    "shared-plan": ("anonymous", "{shared_plan}"),
    "org-own-models": ("demo", f"o/{ORG}/own/models/"),
    "org-own-model-new": ("demo", f"o/{ORG}/own/models/new/"),
    "org-own-model-hub": ("demo", f"o/{ORG}/own/models/hugging-face/"),
    "org-own-model-edit": ("demo", f"o/{ORG}/own/models/{DEMO_OWN_MODEL}/edit/"),
    "org-own-model-delete": ("demo", f"o/{ORG}/own/models/{DEMO_OWN_MODEL}/delete/"),
    "org-own-model-history": ("demo", f"o/{ORG}/own/models/{DEMO_OWN_MODEL}/history/"),
    "org-own-accelerators": ("demo", f"o/{ORG}/own/accelerators/"),
    "org-own-accelerator-new": ("demo", f"o/{ORG}/own/accelerators/new/"),
    "org-own-accelerator-edit": ("demo", f"o/{ORG}/own/accelerators/{DEMO_OWN_CARD}/edit/"),
    "org-own-accelerator-delete": ("demo", f"o/{ORG}/own/accelerators/{DEMO_OWN_CARD}/delete/"),
    "org-own-accelerator-history": (
        "demo",
        f"o/{ORG}/own/accelerators/{DEMO_OWN_CARD}/history/",
    ),
    "own-model-on-own-card": ("demo", f"models/{DEMO_OWN_MODEL}/on/{DEMO_OWN_CARD}/"),
    "staff-gguf-upload": ("staff", "models/import/gguf/"),
    "staff-config-import": ("staff", "models/import/config/"),
    # Outside the language prefix (a path from the root): the API's Swagger UI.
    "api-docs": ("demo", "/api/v1/docs/"),
}

# Favicon addresses already fetched with 200 (each is fetched once per run).
ICONS_FOUND: set[str] = set()

VARIANTS = {"en-390": ("en", PHONE), "en-1366": ("en", DESKTOP), "de-390": ("de", PHONE)}


def page_path(name: str, language: str, saved: Saved) -> str:
    _who, path = PAGES[name]
    if path.startswith("/"):
        return path
    code, code2 = saved.codes

    # The saved paths carry /en/ (share links none): strip it, the language prefix comes first.
    def bare(saved_path: str) -> str:
        return saved_path.removeprefix("/en/").lstrip("/")

    path = path.format(
        report=bare(saved.report),
        other=bare(saved.other),
        shared=bare(saved.shared),
        plan=bare(saved.plan),
        shared_plan=bare(saved.shared_plan),
        code=code,
        code2=code2,
    )
    return f"/{language}/{path}"


# The URL names the walk visits (PAGES holds their addresses).
WALKED_URL_NAMES: set[str] = {
    "login",
    "reports:shared",
    "home",
    "tenancy:invitations",
    "password_change",
    "tokens:tokens",
    "catalog:model-list",
    "catalog:model-detail",
    "catalog:accelerator-list",
    "catalog:accelerator-detail",
    "pricing:prices",
    "explore:search",
    "explore:compare",
    "explore:model-gpus",
    "explore:gpu-models",
    "configurator:configure",
    "tenancy:dashboard",
    "tenancy:members",
    "reports:list",
    "reports:report",
    "reports:recompute",
    "reports:compare",
    "reports:links",
    "reports:activity",
    "pricing:org-feed",
    "fleet:fleet",
    "fleet:new",
    "fleet:edit",
    "fleet:delete",
    "fleet:history",
    "planner:plan",
    "planner:saved",
    "planner:saved-report",
    "planner:shared",
    "owncatalog:models",
    "owncatalog:model-new",
    "owncatalog:model-hub",
    "owncatalog:model-edit",
    "owncatalog:model-delete",
    "owncatalog:model-history",
    "owncatalog:accelerators",
    "owncatalog:accelerator-new",
    "owncatalog:accelerator-edit",
    "owncatalog:accelerator-delete",
    "owncatalog:accelerator-history",
    "catalog:gguf-upload",
    "catalog:config-import",
}
# Routed URL names the walk leaves out: no page of their own.
NOT_PAGES: set[str] = {
    # POST-only actions (they redirect back to a page above), file downloads, JSON.
    # tenancy:orgs lists a user's organizations; with one (demo) it redirects to its
    # dashboard, which the walk visits.
    "tenancy:orgs",
    "logout",
    "password_change_done",
    "set_language",
    "reports:save",
    "reports:policy",
    "reports:revoke",
    "reports:export-csv",
    "reports:export-json",
    "reports:rename",
    "reports:duplicate",
    "reports:delete",
    "reports:restore",
    "tokens:revoke",
    "reports:share",
    "tenancy:member-role",
    "tenancy:member-remove",
    "tenancy:invitation-revoke",
    "tenancy:invitation-accept",
    "tenancy:invitation-decline",
    "tenancy:signup-approve",
    "tenancy:signup-reject",
    # A sign-up link's page takes a token shown once; tests/browser/test_org_area.py
    # visits it.
    "tenancy:signup",
    # The compare editor's combobox options (an HTMX fragment); tests/browser/
    # test_compare_ui.py drives it.
    "explore:compare-pick",
    "planner:save",
    "planner:saved-recompute",
    "planner:saved-rename",
    "planner:saved-delete",
    "planner:saved-share",
    "planner:saved-revoke",
}


def url_names(patterns: list[URLPattern | URLResolver], prefix: str = "") -> set[str]:
    """Every named route under `patterns`, as "namespace:name" like reverse() takes it."""
    found: set[str] = set()
    for p in patterns:
        if isinstance(p, URLResolver):
            found |= url_names(p.url_patterns, f"{prefix}{p.namespace}:" if p.namespace else prefix)
        elif p.name:
            found.add(prefix + p.name)
    return found


def test_the_walk_covers_every_page_url_name() -> None:
    """Every GET page the portal routes is in PAGES (a new page must join the walk).
    WALKED_URL_NAMES are what the walk visits; the rest (NOT_PAGES) are POST-only actions,
    downloads, the API, admin and health checks."""
    assert len(WALKED_URL_NAMES) <= len(PAGES)
    routed = {
        n
        for n in url_names(get_resolver().url_patterns)
        if not n.startswith(("admin:", "api:", "health", "tenancy:api-"))
    }
    unwalked = routed - WALKED_URL_NAMES - NOT_PAGES
    assert unwalked == set(), f"pages the browser walk does not visit: {sorted(unwalked)}"


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", list(PAGES))
def test_page(
    name: str,
    variant: str,
    new_page: NewPage,
    server: Server,
    saved: Saved,
    demo_state: Path,
    staff_state: Path,
) -> None:
    language, viewport = VARIANTS[variant]
    who = PAGES[name][0]
    state = {"demo": demo_state, "staff": staff_state, "anonymous": None}[who]
    page, watch = new_page(viewport=viewport, state=state, shared=True)
    path = page_path(name, language, saved)
    answer = visit(page, watch, server.at(path))
    problems = []
    if answer is None or answer.status != 200:
        problems.append(f"answered {answer.status if answer else 'nothing'}")
    if urlsplit(page.url).path != urlsplit(server.at(path)).path:
        problems.append(f"ended at {page.url}")
    # The favicon: the page's <link rel="icon"> and /favicon.ico (what other clients ask
    # for); headless Chromium fetches neither by itself.
    icons = [link.get_attribute("href") or "" for link in page.locator('link[rel~="icon"]').all()]
    if not icons:
        problems.append("no <link rel=icon>")
    for href in {*icons, "/favicon.ico"} - ICONS_FOUND:
        status = page.request.get(server.at(href)).status
        if status != 200:
            problems.append(f"favicon {href} answered {status}")
        else:
            ICONS_FOUND.add(href)
    if (wide := overflow(page)) != "":
        problems.append(wide)
    problems += [
        f"localized number in an attribute: {attribute}"
        for attribute in localized_numbers_in_attributes(page, language)
    ]
    problems += watch.problems
    assert problems == [], f"{path} at {viewport['width']} px: " + "; ".join(problems)
