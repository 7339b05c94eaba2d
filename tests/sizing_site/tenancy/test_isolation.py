"""Walk every URL and API route that takes an org or a code: another tenant gets 404."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import translation

from catalog.models import Accelerator, InferenceEngine, LLMModel, ModelWeights, QuantFormat
from pricing import services as pricing_services
from pricing.models import CloudProvider
from sizing_site.fleet.models import InventoryMachine
from sizing_site.fleet.services import machine_create
from sizing_site.planner.models import PlanShareLink, SavedPlan
from sizing_site.planner.services import plan_share_link_create
from sizing_site.reports.models import ShareLink
from sizing_site.reports.services import share_link_create
from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Invitation, Organization, Role
from sizing_site.tokens.services import token_create
from tests.planner.test_saved_plans import frozen_plan
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


def add_machine(cls: type[ReportsTestCase]) -> InventoryMachine:
    """A machine of org A's inventory, for the routes that take its code."""
    return machine_create(
        tenant=tenant_for(cls.alice, "org-a"),
        user=cls.alice,
        values={"name": "Org A's secret rack", "accelerator": cls.card, "card_count": 2},
    )


def fill_own(route: str) -> str:
    """Org A's own model or card where an org route takes one."""
    for part, value in (
        ("/own/models/<slug:slug>", OWN_MODEL),
        ("/own/accelerators/<slug:slug>", OWN_CARD),
        ("<slug:org_slug>/models/<slug:slug>", OWN_MODEL),
        ("<slug:org_slug>/accelerators/<slug:slug>", OWN_CARD),
    ):
        if part in route:
            route = route.replace("<slug:slug>", value)
    return route


class CrossTenantTests(ReportsTestCase):
    link: ShareLink
    erin: User
    invitation: Invitation
    machine: InventoryMachine
    plan: SavedPlan
    plan_link: PlanShareLink

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        tenant = tenant_for(cls.alice, "org-a")
        cls.link = share_link_create(
            tenant=tenant, user=cls.alice, configuration=cls.saved, expires_at=None
        )
        # A saved capacity plan of org A and its share link.
        cls.plan = frozen_plan(organization=cls.org_a, user=cls.alice, name="Org A's plan")
        cls.plan_link = plan_share_link_create(
            tenant=tenant, user=cls.alice, plan=cls.plan, expires_at=None
        )
        # Erin has an account in no org and an open invitation to org A.
        cls.erin = User.objects.create_user("erin", "erin@c.example", "pw-erin-123")
        cls.invitation = services.invitation_create(
            tenant=tenant, identifier="erin@c.example", role=Role.VIEWER
        )
        cls.machine = add_machine(cls)
        add_own_entries(cls.org_a)

    def rightful_user(self, route: str) -> User:
        return self.erin if INVITEE_PREFIX in route else self.alice

    def fill(self, route: str, params: set[str]) -> str:
        url = fill_own(route).replace("<slug:org_slug>", "org-a")
        # Each code route gets a real row of org A of the kind it expects.
        code = self.bob_membership.code
        if "/planner/saved/links/<uuid:code>" in route or "/plans/saved/share-links/" in route:
            code = self.plan_link.code
        elif "/planner/saved/<uuid:code>" in route or "/plans/saved/<uuid:code>" in route:
            code = self.plan.code
        elif "/reports/links/<uuid:code>" in route:
            code = self.link.code
        elif "/invitations/<uuid:code>" in route or "/signups/<uuid:code>" in route:
            code = self.invitation.code
        elif "/reports/<uuid:code>" in route:
            code = self.saved.code
        elif "/share-links/<uuid:code>" in route:
            code = self.link.code
        elif "/configurations/<uuid:code>" in route:
            code = self.saved.code
        elif "/fleet/machines/<uuid:code>" in route or "/inventory/<uuid:code>" in route:
            code = self.machine.code
        url = url.replace("<uuid:code>", str(code))
        assert "<" not in url, f"test does not know how to fill {route}"
        return url

    def test_every_tenant_route_takes_the_org_in_its_path(self) -> None:
        routes = list(tenant_routes())
        assert len(routes) >= 6
        names = {name for name, _route, _params in routes}
        assert {"invitation-revoke", "invitation-accept", "invitation-decline"} <= names
        assert {"dashboard", "signup-approve", "signup-reject"} <= names
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
                if name == "configurations-compare":  # the API's compare needs 2-4 codes
                    second = self.save_as(self.alice, "second")
                    url += f"?c={self.saved.code}&c={second.code}"
                response = self.client.get(url)
                # POST-only routes answer 405 to GET; everything else renders.
                assert response.status_code in (200, 405), (name, url, response.status_code)

    # Bad sign-up links count as failed logins (tenancy.throttle): the walk sends more
    # than the login limit from one address, and is about 404s, not the lockout.
    @override_settings(AXES_FAILURE_LIMIT=100)
    def test_every_token_route_answers_404_to_a_wrong_or_dead_token(self) -> None:
        routes = list(token_routes())
        assert routes, "no route takes a token"
        other_org = share_link_create(
            tenant=tenant_for(self.charlie, "org-b"),
            user=self.charlie,
            configuration=self.save_as(self.charlie, "B's", org="org-b"),
            expires_at=None,
        )
        other_plan = plan_share_link_create(
            tenant=tenant_for(self.charlie, "org-b"),
            user=self.charlie,
            plan=frozen_plan(organization=self.org_b, user=self.charlie, name="B's plan"),
            expires_at=None,
        )
        with translation.override("en"):
            for name, route, _params in routes:
                # A saved plan's public page takes a plan link's token.
                plan_route = "/s/plan/" in route
                live_link = self.plan_link if plan_route else self.link
                live = route.replace("<str:token>", live_link.token)
                if "/join/" in route:  # a sign-up link takes an invitation's token
                    live = route.replace("<str:token>", self.invitation.signup_token)
                assert self.client.get(live).status_code == 200, name
                for token in ("x" * 43, live_link.token[:-1], str(self.saved.code)):
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
                other = route.replace(
                    "<str:token>", (other_plan if plan_route else other_org).token
                )
                assert self.client.get(other).status_code == 404, name
                assert self.client.get(live).status_code == 200, name


# --- the REST API with a script's token ---------------------------------------

API = "/api/v1/"
# An org-private offer of org A, loaded through its feed as an admin's upload does.
SECRET_FEED = (
    "sku,accelerator,gpu_count,on_demand_per_hour\norg-a-secret-sku,H100 SXM 80GB,1,0.42\n"
)


def api_routes() -> Iterator[tuple[str, str, set[str]]]:
    """Every route under /api/v1/ except the schema and its docs page."""
    for name, route, params in all_routes():
        if route.startswith(API) and route not in (API + "schema/", API + "docs/"):
            yield name, route, params


class ApiCrossTenantTests(ReportsTestCase):
    """Charlie, admin of org B, scripts the API with his token: every route of org A is a
    404 whatever the method, and no route he may call shows a row of org A."""

    link: ShareLink
    invitation: Invitation
    machine: InventoryMachine
    plan: SavedPlan
    plan_link: PlanShareLink
    engine: str
    quant: str

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        tenant = tenant_for(cls.alice, "org-a")
        cls.link = share_link_create(
            tenant=tenant, user=cls.alice, configuration=cls.saved, expires_at=None
        )
        cls.invitation = services.invitation_create(
            tenant=tenant, identifier="secret-invitee@a.example", role=Role.VIEWER
        )
        cls.machine = add_machine(cls)
        add_own_entries(cls.org_a)
        cls.plan = frozen_plan(organization=cls.org_a, user=cls.alice, name="Org A's plan")
        cls.plan_link = plan_share_link_create(
            tenant=tenant, user=cls.alice, plan=cls.plan, expires_at=None
        )
        acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")
        feed = pricing_services.org_feed_save(
            organization=cls.org_a, provider=acme, content=SECRET_FEED
        )
        pricing_services.price_source_refresh(source_id=feed.pk)
        # A real engine and quant format where the test catalog has one.
        engine = InferenceEngine.objects.order_by("slug").first()
        quant = QuantFormat.objects.order_by("slug").first()
        cls.engine = engine.slug if engine else "llama-cpp"
        cls.quant = quant.slug if quant else "gguf"

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        cache.clear()  # throttle counts
        self.script = Client(
            headers={"Authorization": f"Bearer {token_create(user=self.charlie, name='s').plain}"}
        )

    def secrets(self) -> list[str]:
        """What of org A must never reach org B: a saved configuration's name and code, a
        share link's token, an invitation, a member's code, the negotiated offer."""
        return [
            self.saved.name,
            str(self.saved.code),
            self.link.token,
            str(self.link.code),
            "secret-invitee@a.example",
            str(self.invitation.code),
            str(self.bob_membership.code),
            "org-a-secret-sku",
            self.machine.name,
            str(self.machine.code),
            self.plan.name,
            str(self.plan.code),
            self.plan_link.token,
            *OWN_SECRETS,
        ]

    def fill(self, route: str, org: str) -> str:
        """Real slugs where a slug goes; org A's rows where a code goes (as the session
        walk fills them); `org` in the path."""
        route = fill_own(route)
        for name, value in (
            ("<slug:model_slug>", "glm-4-5-air"),
            ("<slug:accelerator_slug>", "nvidia-a100-80gb-pcie"),
        ):
            route = route.replace(name, value)
        for part, value in (
            ("/models/", "glm-4-5-air"),
            ("/accelerators/", "nvidia-a100-80gb-pcie"),
            ("/engines/", self.engine),
            ("/quant-formats/", self.quant),
        ):
            if part in route:
                route = route.replace("<slug:slug>", value)
        url = CrossTenantTests.fill(self, route, set())  # type: ignore[arg-type]
        return url.replace("/o/org-a/", f"/o/{org}/")

    def test_every_org_route_is_a_404_to_another_orgs_token_whatever_the_method(self) -> None:
        routes = [(n, r) for n, r, params in api_routes() if "org_slug" in params]
        assert len(routes) >= 15, routes
        for name, route in routes:
            url = self.fill(route, "org-a")
            for method in ("get", "post", "put", "patch", "delete"):
                response = getattr(self.script, method)(url, {}, content_type="application/json")
                assert response.status_code == 404, (name, url, method, response.status_code)
                assert not any(s in response.content.decode() for s in self.secrets()), name

    def test_no_route_another_org_may_call_shows_a_row_of_org_a(self) -> None:
        called = 0
        for name, route, _params in api_routes():
            # Charlie's own org in the path, org A's codes where a code goes (those are 404).
            url = self.fill(route, "org-b")
            if name == "estimate":
                body = {"model": "glm-4-5-air", "accelerator": "nvidia-a100-80gb-pcie"}
                response = self.script.post(url, body, content_type="application/json")
                assert response.status_code == 200, response.content
            else:
                response = self.script.get(url)
                # 400: this small catalog has no quant ladder for the sweeps' default filter.
                assert response.status_code in (200, 400, 404, 405), (name, url, response.content)
            text = response.content.decode()
            leaked = [s for s in self.secrets() if s in text]
            assert not leaked, (name, url, leaked)
            called += 1
        assert called >= 30
        # Org A's own member sees what Charlie does not: the secrets are real rows.
        self.client.force_login(self.alice)
        offers = self.client.get(API + "prices/offers/", {"page_size": 200}).content.decode()
        assert "org-a-secret-sku" in offers
        saved = self.client.get(API + "o/org-a/configurations/").content.decode()
        assert self.saved.name in saved


# --- an organisation's own models and accelerators ----------------------------

OWN_MODEL = "org-a-secret-tune-0a1b2c3d"
OWN_CARD = "org-a-secret-card-0a1b2c3d"
OWN_SECRETS = ["Org A Secret Tune", OWN_MODEL, "Org A Secret Card", OWN_CARD]
# Routes outside any organisation that take a model or card slug, and which slot it fills.
SLUG_ROUTES = {
    "model-detail": {"<slug:slug>": OWN_MODEL},
    "accelerator-detail": {"<slug:slug>": OWN_CARD},
    "configure": {"<slug:model_slug>": OWN_MODEL, "<slug:accelerator_slug>": OWN_CARD},
    "model-gpus": {"<slug:model_slug>": OWN_MODEL},
    "gpu-models": {"<slug:accelerator_slug>": OWN_CARD},
    "catalog-model": {"<slug:slug>": OWN_MODEL},
    "catalog-model-weights": {"<slug:slug>": OWN_MODEL},
    "catalog-accelerator": {"<slug:slug>": OWN_CARD},
    "sweeps-model-accelerators": {"<slug:model_slug>": OWN_MODEL},
    "sweeps-accelerator-models": {"<slug:accelerator_slug>": OWN_CARD},
}


def add_own_entries(org: Organization) -> tuple[LLMModel, Accelerator]:
    """Org A's fine-tune (GLM-4.5-Air's config and weights under a secret name) and its
    in-house card (the A100's specs under a secret name)."""
    public = LLMModel.objects.get(slug="glm-4-5-air")
    model = LLMModel.all_orgs.create(
        name="Org A Secret Tune", slug=OWN_MODEL, organization=org, config=public.config
    )
    for w in ModelWeights.objects.filter(model=public):
        ModelWeights.objects.create(
            model=model, format=w.format, quant=w.quant, file_bytes=w.file_bytes
        )
    card = Accelerator.objects.get(slug="nvidia-a100-80gb-pcie")
    card.pk = None
    card._state.adding = True
    card.slug, card.name, card.organization = OWN_CARD, "Org A Secret Card", org
    card.save()
    return model, card


class OwnEntriesWalkTests(ReportsTestCase):
    """Org A's own model and card: every route outside the org that takes a slug answers
    404 (400 for the estimate) to anyone but org A's members, and no page or API answer
    another org's member can ask for names them; org A's members reach them."""

    own_model: LLMModel
    own_card: Accelerator

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.own_model, cls.own_card = add_own_entries(cls.org_a)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        cache.clear()

    def slug_urls(self) -> list[tuple[str, str]]:
        urls = []
        for name, route, _params in all_routes():
            if name in SLUG_ROUTES and route.count("<") == len(SLUG_ROUTES[name]):
                for slot, value in SLUG_ROUTES[name].items():
                    route = route.replace(slot, value)
                urls.append((name, route))
        assert {n for n, _ in urls} == set(SLUG_ROUTES), urls
        return urls

    def clients(self) -> list[tuple[str, Client]]:
        charlie = Client()
        charlie.force_login(self.charlie)
        token = token_create(user=self.charlie, name="s").plain
        return [
            ("anonymous", Client()),
            ("org B member", charlie),
            ("org B token", Client(headers={"Authorization": f"Bearer {token}"})),
        ]

    def test_every_slug_route_is_a_404_to_outsiders(self) -> None:
        for who, client in self.clients():
            for name, url in self.slug_urls():
                if "token" in who and not url.startswith(API):
                    continue
                response = client.get(url)
                # The API refuses an anonymous caller before it looks the slug up.
                refused = (401, 403, 404) if who == "anonymous" and url.startswith(API) else (404,)
                if who == "anonymous" and not url.startswith(API):  # the login page first
                    assert response.status_code == 302, (name, url, response.status_code)
                    assert response["Location"].startswith("/en/accounts/login/"), name
                    continue
                assert response.status_code in refused, (who, name, url, response.status_code)
                text = response.content.decode()
                assert not [s for s in OWN_SECRETS if s in text], (who, name)
            body = {"model": OWN_MODEL, "accelerator": "nvidia-a100-80gb-pcie"}
            response = client.post(API + "estimate/", body, content_type="application/json")
            # What a slug nobody has gets: 404 "No model with this slug." (403 anonymous).
            assert response.status_code in (403, 404), (who, response.content)
            body = {"model": "glm-4-5-air", "accelerator": OWN_CARD}
            response = client.post(API + "estimate/", body, content_type="application/json")
            assert response.status_code in (403, 404), (who, response.content)
            assert not [s for s in OWN_SECRETS if s in response.content.decode()], who

    def test_org_a_members_reach_them(self) -> None:
        self.client.force_login(self.bob)  # a viewer of org A
        for name, url in self.slug_urls():
            response = self.client.get(url)
            if name in ("model-detail", "accelerator-detail"):
                # The catalog's browsing pages are the public catalog's; the org's own
                # entries have their own list pages (o/<org>/own/...).
                assert response.status_code == 404, (name, url)
                continue
            assert response.status_code in (200, 400), (name, url, response.status_code)
            # 400: the test catalog has no quant ladder for the sweeps' default filter; the
            # test catalog's GLM has no weights rows.
            if response.status_code == 200 and name != "catalog-model-weights":
                assert "Org A Secret" in response.content.decode(), name
        body = {"model": OWN_MODEL, "accelerator": OWN_CARD}
        response = self.client.post(API + "estimate/", body, content_type="application/json")
        assert response.status_code == 200, response.content

    def test_no_page_or_answer_of_another_org_names_them(self) -> None:
        charlie = self.clients()[1][1]
        called = 0
        for name, route, params in all_routes():
            if params or "<" in route or route == API + "schema/":
                continue
            for query in ({}, {"q": "Secret"}, {"q": "org-a-secret"}):
                response = charlie.get(route, query)
                text = response.content.decode()
                assert not [s for s in OWN_SECRETS if s in text], (name, route, query)
                called += 1
        assert called >= 60
        # Org B's own pages and API lists with org B in the path.
        for name, route, params in all_routes():
            if params == {"org_slug"}:
                url = route.replace("<slug:org_slug>", "org-b")
                text = charlie.get(url).content.decode()
                assert not [s for s in OWN_SECRETS if s in text], (name, url)
        # The search finds them for org A's members: the secrets are real, visible rows.
        self.client.force_login(self.bob)
        found = self.client.get(reverse("explore:search"), {"q": "Secret Tune"})
        assert "Org A Secret Tune" in found.content.decode()
