"""Walk every URL and API route that takes an org or a code: another tenant gets 404."""

from __future__ import annotations

from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import translation

from tests.cast import CastTestCase


def tenant_routes() -> Iterator[tuple[str, str, set[str]]]:
    """(name, route template, converter names) for every pattern taking org_slug or code."""

    def walk(
        patterns: list[URLPattern | URLResolver], prefix: str
    ) -> Iterator[tuple[str, str, set[str]]]:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
                continue
            params = set(pattern.pattern.converters)
            if params & {"org_slug", "code"}:
                yield pattern.name or route, route, params

    yield from walk(get_resolver().url_patterns, "/")


class CrossTenantTests(CastTestCase):
    def fill(self, route: str, params: set[str]) -> str:
        url = route.replace("<slug:org_slug>", "org-a")
        url = url.replace("<uuid:code>", str(self.bob_membership.code))
        assert "<" not in url, f"test does not know how to fill {route}"
        return url

    def test_every_tenant_route_takes_the_org_in_its_path(self) -> None:
        routes = list(tenant_routes())
        assert len(routes) >= 6
        for name, route, params in routes:
            assert "org_slug" in params, f"{name} ({route}) takes a code without the org"

    def test_a_user_of_another_org_gets_404_on_every_route(self) -> None:
        self.client.force_login(self.charlie)
        checked = 0
        with translation.override("en"):
            for name, route, params in tenant_routes():
                url = self.fill(route, params)
                for method in (self.client.get, self.client.post):
                    response = method(url)
                    assert response.status_code == 404, (name, url, method, response.status_code)
                    checked += 1
        assert checked >= 12

    def test_the_same_routes_work_for_a_member(self) -> None:
        self.client.force_login(self.alice)
        with translation.override("en"):
            for name, route, params in tenant_routes():
                url = self.fill(route, params)
                response = self.client.get(url)
                # POST-only routes answer 405 to GET; everything else renders.
                assert response.status_code in (200, 405), (name, url, response.status_code)
