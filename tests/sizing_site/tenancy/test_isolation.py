"""Walk every URL and API route that takes an org or a code: another tenant gets 404."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.models import User
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import translation

from sizing_site.reports.models import ShareLink
from sizing_site.reports.services import share_link_create
from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Invitation, Role
from tests.reports.base import ReportsTestCase


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


def token_routes() -> Iterator[tuple[str, str, set[str]]]:
    """Every pattern taking a share `token` (public: the token is the credential)."""
    for name, route, params in all_routes():
        if "token" in params:
            yield name, route, params


def all_routes() -> Iterator[tuple[str, str, set[str]]]:
    def walk(
        patterns: list[URLPattern | URLResolver], prefix: str
    ) -> Iterator[tuple[str, str, set[str]]]:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
                continue
            yield pattern.name or route, route, set(pattern.pattern.converters)

    yield from walk(get_resolver().url_patterns, "/")


# Invitee routes: the org is in the path, but the rightful caller is the invitee, not a member.
INVITEE_PREFIX = "/<slug:org_slug>/invitations/"


class CrossTenantTests(ReportsTestCase):
    link: ShareLink
    erin: User
    invitation: Invitation

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        tenant = tenant_for(cls.alice, "org-a")
        cls.link = share_link_create(
            tenant=tenant, user=cls.alice, configuration=cls.saved, expires_at=None
        )
        # Erin has an account in no org and an open invitation to org A.
        cls.erin = User.objects.create_user("erin", "erin@c.example", "pw-erin-123")
        cls.invitation = services.invitation_create(
            tenant=tenant, identifier="erin@c.example", role=Role.VIEWER
        )

    def rightful_user(self, route: str) -> User:
        return self.erin if INVITEE_PREFIX in route else self.alice

    def fill(self, route: str, params: set[str]) -> str:
        url = route.replace("<slug:org_slug>", "org-a")
        # Each code route gets a real row of org A of the kind it expects.
        code = self.bob_membership.code
        if "/reports/links/<uuid:code>" in route:
            code = self.link.code
        elif "/invitations/<uuid:code>" in route:
            code = self.invitation.code
        elif "/reports/<uuid:code>" in route:
            code = self.saved.code
        elif "/share-links/<uuid:code>" in route:
            code = self.link.code
        elif "/configurations/<uuid:code>" in route:
            code = self.saved.code
        url = url.replace("<uuid:code>", str(code))
        assert "<" not in url, f"test does not know how to fill {route}"
        return url

    def test_every_tenant_route_takes_the_org_in_its_path(self) -> None:
        routes = list(tenant_routes())
        assert len(routes) >= 6
        names = {name for name, _route, _params in routes}
        assert {"invitation-revoke", "invitation-accept", "invitation-decline"} <= names
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
        with translation.override("en"):
            for name, route, params in tenant_routes():
                url = self.fill(route, params)
                self.client.force_login(self.rightful_user(route))
                response = self.client.get(url)
                # POST-only routes answer 405 to GET; everything else renders.
                assert response.status_code in (200, 405), (name, url, response.status_code)

    def test_every_token_route_answers_404_to_a_wrong_or_dead_token(self) -> None:
        routes = list(token_routes())
        assert routes, "no route takes a token"
        other_org = share_link_create(
            tenant=tenant_for(self.charlie, "org-b"),
            user=self.charlie,
            configuration=self.save_as(self.charlie, "B's", org="org-b"),
            expires_at=None,
        )
        with translation.override("en"):
            for name, route, _params in routes:
                live = route.replace("<str:token>", self.link.token)
                assert self.client.get(live).status_code == 200, name
                for token in ("x" * 43, self.link.token[:-1], str(self.saved.code)):
                    url = route.replace("<str:token>", token)
                    for user in (None, self.alice, self.charlie):
                        if user is not None:
                            self.client.force_login(user)
                        assert self.client.get(url).status_code == 404, (name, token)
                        self.client.logout()
                # Org B turning public links off hides B's tokens, not A's.
                self.client.force_login(self.charlie)
                self.client.post("/en/o/org-b/reports/links/policy/", {})
                self.client.logout()
                other = route.replace("<str:token>", other_org.token)
                assert self.client.get(other).status_code == 404, name
                assert self.client.get(live).status_code == 200, name
