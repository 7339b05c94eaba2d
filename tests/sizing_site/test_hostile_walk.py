"""A hostile-input walk: every URL pattern, every parameter the pages' forms declare,
hostile values, three kinds of visitor. No answer may be a server error, every HTML page
carries the Content-Security-Policy, and no page of ours has inline style or script.

Bounded: Hypothesis draws EXAMPLES values per route and visitor (fewer for the admin's
dozens of generated routes), with no deadline, no example database and a fixed seed, so a
run takes about the same time everywhere and a failure replays.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import quote

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import translation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sizing_site.reports.services import share_link_create
from sizing_site.tenancy.access import tenant_for
from tests.reports.base import ReportsTestCase

EXAMPLES = 25  # per route and visitor for the portal's own pages
STAFF_EXAMPLES = 10  # staff see the viewer's pages, plus the importers
ADMIN_EXAMPLES = 2  # the admin's ~150 generated routes share one code path per kind

HOSTILE = [
    "\x00",
    "%00",
    "a\x00b",
    "²",
    "٣",
    "-1",
    "-0",
    "0",
    "1e999999",
    "-1e999999",
    "NaN",
    "inf",
    "9" * 30,
    "9" * 5000,
    str(2**63),
    str(-(2**63) - 1),
    "1.5",
    "0x10",
    " 8192 ",
    "",
    "x" * 20_000,
    "Ωμέγα 漢字 🙂",
    "\u202e\u200b",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' OR '1'='1",
    "../../../../etc/passwd",
    '=HYPERLINK("http://evil.example")',
    "glm-4-5-air:nvidia-a100-80gb-pcie:Q4_K_M:²",
    "glm-4-5-air:nvidia-a100-80gb-pcie:Q4_K_M:" + "9" * 5000,
    "analysis",
    "mine",
    "true",
    "on",
]
# Parameters the pages take without a form field naming them (pagination, htmx parts,
# compare columns, admin list options).
EXTRA_PARAMS = ["page", "part", "c", "c1", "c2", "m1", "a1", "q1", "g1", "sort", "view", "q"]
# The admin's own (change list options, filters, autocomplete), its pages are not read.
ADMIN_PARAMS = ["o", "p", "e", "all", "_popup", "_to_field", "app_label", "model_name", "term"]

values = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=40),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)

INLINE = [
    re.compile(r"<[a-z][^>]*\sstyle\s*=", re.I),
    re.compile(r"<script(?![^>]*\ssrc=)[^>]*>", re.I),
    re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I),
    re.compile(r"<style[\s>]", re.I),
]


class _FieldNames(HTMLParser):
    """The names of a page's form fields: its declared parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        name = dict(attrs).get("name")
        if tag in ("input", "select", "textarea") and name and name != "csrfmiddlewaretoken":
            self.names.add(name)


@dataclass(frozen=True)
class Route:
    name: str
    template: str  # "/en/models/<slug:slug>/", converters still in place

    @property
    def is_admin(self) -> bool:
        return self.template.startswith("/admin/")


def routes() -> Iterator[Route]:
    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> Iterator[Route]:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
            else:
                yield Route(pattern.name or route, route)

    with translation.override("en"):
        yield from walk(get_resolver().url_patterns, "/")


CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")
REGEX_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)|\([^)]*\)")


class HostileWalkBase(ReportsTestCase):
    """The walk's data and its helpers, without tests: HostileWalk here and the viewer's
    walk in test_hostile_walk_viewer.py (a module of its own, so that parallel runs give
    the two longest walks to different workers)."""

    staff: User
    real: dict[str, list[str]]
    requests = 0
    server_errors: list[str]

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.staff = User.objects.create_superuser("staff", "staff@example.invalid", "pw-st-123")
        link = share_link_create(
            tenant=tenant_for(cls.alice, "org-a"),
            user=cls.alice,
            configuration=cls.saved,
            expires_at=None,
        )
        # Real values for each path parameter, so the walk reaches the views behind them.
        cls.real = {
            "slug": [cls.model.slug, cls.card.slug],
            "model_slug": [cls.model.slug],
            "accelerator_slug": [cls.card.slug],
            "org_slug": ["org-a", "org-b"],
            "code": [str(cls.saved.code), str(link.code), str(cls.bob_membership.code)],
            "token": [link.token],
            "object_id": [str(cls.model.pk), str(cls.card.pk), "1"],
            "id": [str(cls.bob.pk)],
            "run_id": ["1"],
            "app_label": ["catalog"],
        }

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.server_errors = []

    # --- building requests -------------------------------------------------------------

    def path_for(self, route: Route, data: st.DataObject) -> str:
        def fill(match: re.Match[str]) -> str:
            name = match.group(2) if match.re is CONVERTER else (match.group(1) or "")
            options = self.real.get(name, ["1"])
            value = data.draw(st.one_of(st.sampled_from(options), values), label=name)
            return quote(value, safe="")

        path = CONVERTER.sub(fill, route.template)
        if "^" in path or "(" in path:  # a regex route (admin app index, history)
            path = REGEX_GROUP.sub(fill, path).replace("^", "").replace("$", "")
        return path

    def params_for(self, route: Route, declared: set[str], data: st.DataObject) -> dict[str, str]:
        names = sorted(declared | set(EXTRA_PARAMS) | set(ADMIN_PARAMS if route.is_admin else ()))
        chosen = data.draw(st.lists(st.sampled_from(names), max_size=6, unique=True), label="keys")
        return {name: data.draw(values, label=name) for name in chosen}

    def declared_params(self, client: Client, route: Route) -> set[str]:
        """The field names of the page's forms, read off the page as this visitor sees it."""
        if route.is_admin:
            return set()  # Django's generated forms; ADMIN_PARAMS stand in for them
        path = CONVERTER.sub(lambda m: self.real.get(m.group(2), ["1"])[0], route.template)
        response = self.send(client, "get", path, {}, htmx=False)
        if not response["Content-Type"].startswith("text/html"):
            return set()
        parser = _FieldNames()
        parser.feed(response.content.decode(errors="replace"))
        return parser.names

    # --- sending and checking ------------------------------------------------------------

    def send(
        self, client: Client, method: str, path: str, params: dict[str, str], *, htmx: bool
    ) -> HttpResponse:
        headers = {"HX-Request": "true"} if htmx else {}
        type(self).requests += 1
        response: HttpResponse = getattr(client, method)(path, params, headers=headers)
        self.check(response, method, path, params)
        return response

    def check(self, response: HttpResponse, method: str, path: str, params: dict[str, str]) -> None:
        where = f"{method.upper()} {path[:120]} {str(params)[:300]}"
        if response.status_code >= 500:
            self.server_errors.append(f"{response.status_code} {where}")
        if not response.get("Content-Type", "").startswith("text/html"):
            return
        assert "Content-Security-Policy" in response, where
        if path.startswith("/admin/") or getattr(response, "streaming", False):
            return  # Django's own admin markup is Django's; ours is checked below
        body = response.content.decode(errors="replace")
        for pattern in INLINE:
            found = pattern.search(body)
            assert found is None, f"{where}: inline markup {found and found.group(0)!r}"

    def walk(self, user: User | None, budget: int, admin_budget: int) -> None:
        client = Client()
        if user is not None:
            client.force_login(user)
        for route in routes():
            examples = admin_budget if route.is_admin else budget
            if not examples:
                continue
            declared = self.declared_params(client, route)
            self.walk_route(client, user, route, declared, examples)
        assert not self.server_errors, "\n".join(self.server_errors)

    def walk_route(
        self, client: Client, user: User | None, route: Route, declared: set[str], examples: int
    ) -> None:
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(data=st.data())
        def one(data: st.DataObject) -> None:
            path = self.path_for(route, data)
            params = self.params_for(route, declared, data)
            method = data.draw(st.sampled_from(["get", "get", "post"]), label="method")
            htmx = data.draw(st.booleans(), label="htmx")
            # Each example in its own savepoint: a POST that deletes or logs out does not
            # change what the next example sees.
            with transaction.atomic():
                self.send(client, method, path, params, htmx=htmx)
                transaction.set_rollback(True)
            # The POST may have been the logout form, or its session row rolled back with
            # the savepoint: the client's session no longer names the user.
            if user is not None and method == "post" and SESSION_KEY not in client.session:
                client.force_login(user)

        one()


@pytest.mark.slow
class HostileWalk(HostileWalkBase):
    # --- the walks ---------------------------------------------------------------------

    def test_anonymous_visitors_get_no_server_error(self) -> None:
        before = type(self).requests
        self.walk(None, budget=10, admin_budget=1)
        print(f"hostile walk, anonymous: {type(self).requests - before} requests, 0 server errors")

    def test_staff_get_no_server_error(self) -> None:
        before = type(self).requests
        # The viewer's walk covers the shared pages; staff add the importers and the admin.
        self.walk(self.staff, budget=STAFF_EXAMPLES, admin_budget=ADMIN_EXAMPLES)
        print(f"hostile walk, staff: {type(self).requests - before} requests, 0 server errors")

    def test_the_walk_reaches_every_route_and_the_htmx_analysis_part(self) -> None:
        all_routes = list(routes())
        assert len(all_routes) >= 150  # the admin's generated routes included
        own = [r for r in all_routes if not r.is_admin]
        assert {"configure", "shared", "compare", "gguf-upload", "config-import"} <= {
            r.name for r in own
        }
        client = Client()
        client.force_login(self.bob)
        url = f"/en/models/{self.model.slug}/on/{self.card.slug}/"
        for query in ({"ctx": "abc", "part": "analysis"}, {"ctx": "²", "part": "analysis"}):
            response = self.send(client, "get", url, query, htmx=True)
            assert response.status_code == 400
            assert "Please correct the configuration" in response.content.decode()
