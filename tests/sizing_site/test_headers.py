"""Security headers and the request guard: CSP on HTML pages, no-store on share pages, and
400 (before any view or query) for NUL bytes and undecodable query strings."""

from __future__ import annotations

from django.conf import settings
from django.test import RequestFactory
from django.urls import reverse
from django.utils import translation

from sizing_site.guards import refusal
from sizing_site.reports.services import share_link_create
from sizing_site.tenancy.access import tenant_for
from tests.reports.base import ReportsTestCase

GUARD = "sizing_site.guards.RequestGuardMiddleware"


def test_the_guard_runs_before_sessions_locale_and_views() -> None:
    middleware = list(settings.MIDDLEWARE)
    assert GUARD in middleware
    # After CSP (so a 400 carries the policy too), before anything that reads the
    # session, the language or the database.
    assert middleware.index("csp.middleware.CSPMiddleware") < middleware.index(GUARD)
    for later in (
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.locale.LocaleMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
    ):
        assert middleware.index(GUARD) < middleware.index(later), later


def test_refusal_names_nul_and_bad_utf8_and_passes_everything_else() -> None:
    factory = RequestFactory()
    assert refusal(factory.get("/en/models/", {"q": "café ²"})) is None
    assert refusal(factory.get("/en/models/?q=caf%C3%A9+x")) is None
    assert refusal(factory.get("/en/models/?q=a%00b")) == "The query contains a NUL character."
    assert refusal(factory.get("/en/models/?q=a%FFb")) == "The query is not valid UTF-8."
    assert refusal(factory.get("/en/models/a%00b/")) == "The address contains a NUL character."
    # "%2500" is the text "%00", not a NUL byte: a search may look for it.
    assert refusal(factory.get("/en/models/?q=%2500")) is None


class GuardAndHeaders(ReportsTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def configurator(self) -> str:
        return reverse("configurator:configure", args=[self.model.slug, self.card.slug])

    def test_a_nul_byte_in_the_share_route_is_400_for_anyone(self) -> None:
        response = self.client.get("/en/r/abc%00def/")
        assert response.status_code == 400
        assert response.content == b"The address contains a NUL character."

    def test_a_nul_byte_or_bad_utf8_in_a_query_is_400_before_the_view(self) -> None:
        self.client.force_login(self.bob)
        url = self.configurator()
        for query in ("ctx=1%00", "ctx=%00&part=analysis", "q=%C3", "ctx=\x00"):
            response = self.client.get(f"{url}?{query}", headers={"HX-Request": "true"})
            assert response.status_code == 400, query
        assert self.client.get(url, {"ctx": "8192"}).status_code == 200

    def test_every_html_page_carries_the_strict_policy(self) -> None:
        self.client.force_login(self.bob)
        for url in (
            reverse("home"),
            reverse("catalog:model-list"),
            self.configurator(),
            reverse("reports:list", args=["org-a"]),
            reverse("explore:compare") + "?c1=glm-4-5-air:nvidia-a100-80gb-pcie:Q4_K_M:²",
        ):
            response = self.client.get(url)
            assert response["Content-Type"].startswith("text/html"), url
            policy = response["Content-Security-Policy"]
            assert "default-src 'self'" in policy, url
            assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy, url

    def test_the_share_page_is_never_stored(self) -> None:
        link = share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        response = self.client.get(reverse("reports:shared", args=[link.token]))
        assert response.status_code == 200
        cache_control = {part.strip() for part in response["Cache-Control"].split(",")}
        assert {"no-store", "private"} <= cache_control
        assert "Content-Security-Policy" in response
