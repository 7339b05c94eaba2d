"""The org overview lists what the organization has in each app, with counts and links,
in a fixed number of queries however many rows there are."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from pricing import services as pricing_services
from pricing.models import CloudProvider
from sizing_site.orgarea.selectors import OrgOverview, org_overview
from sizing_site.planner.services import plan_share_link_create
from sizing_site.reports.services import share_link_create
from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Role
from sizing_site.tokens.services import token_create, token_revoke
from tests.planner.test_saved_plans import frozen_plan
from tests.reports.base import ReportsTestCase
from tests.sizing_site.tenancy.test_isolation import SECRET_FEED, add_machine, add_own_entries

OVERVIEW = "/en/o/org-a/"


class OverviewTestCase(ReportsTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        tenant = tenant_for(cls.alice, "org-a")
        # Share links of the saved configuration: one live, one revoked (not counted).
        share_link_create(tenant=tenant, user=cls.alice, configuration=cls.saved, expires_at=None)
        dead = share_link_create(
            tenant=tenant, user=cls.alice, configuration=cls.saved, expires_at=None
        )
        dead.revoked_at = dead.created
        dead.save()
        plan = frozen_plan(organization=cls.org_a, user=cls.alice, name="Plan one")
        frozen_plan(organization=cls.org_a, user=cls.alice, name="Plan two")
        plan_share_link_create(tenant=tenant, user=cls.alice, plan=plan, expires_at=None)
        add_machine(cls)
        add_own_entries(cls.org_a)
        services.invitation_create(tenant=tenant, identifier="x@y.example", role=Role.VIEWER)
        waiting = services.invitation_create(
            tenant=tenant, identifier="erin@y.example", role=Role.VIEWER
        )
        services.signup_complete(invitation=waiting, username="erin", password="Erin-42-pass!")
        # Alice's tokens: one for all her orgs, one for org A, one revoked (not counted).
        token_create(user=cls.alice, name="all")
        token_create(user=cls.alice, name="a only", organization=cls.org_a)
        token_revoke(token_create(user=cls.alice, name="old").token)
        acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")
        feed = pricing_services.org_feed_save(
            organization=cls.org_a, provider=acme, content=SECRET_FEED
        )
        pricing_services.price_source_refresh(source_id=feed.pk)
        # Org B's rows never count for org A.
        cls.save_as(cls.charlie, "B's", org="org-b")
        frozen_plan(organization=cls.org_b, user=cls.charlie, name="B's plan")

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)


class OverviewSelectorTests(OverviewTestCase):
    def test_it_counts_each_apps_rows_of_this_org_only(self) -> None:
        got = org_overview(tenant=tenant_for(self.alice, "org-a"), user=self.alice)
        assert got.latest_activity is not None  # the share links were logged
        assert got == OrgOverview(
            members=3,  # alice, bob, dave (erin awaits approval: not a member yet)
            own_models=1,
            own_cards=1,
            machines=1,
            saved_plans=2,
            plan_links=1,
            configurations=1,  # charlie's "B's" is org B's
            configuration_links=1,  # 2 made, 1 revoked
            price_feeds=1,
            negotiated_offers=1,
            api_tokens=2,  # 3 made, 1 revoked
            invitations=1,  # x@y.example; erin's is past "pending"
            signups=1,
            latest_activity=got.latest_activity,
        )

    def test_a_viewer_gets_no_admin_counts(self) -> None:
        got = org_overview(tenant=tenant_for(self.bob, "org-a"), user=self.bob)
        assert (got.invitations, got.signups, got.latest_activity) == (None, None, None)
        assert (got.members, got.api_tokens) == (3, 0)  # Bob has no token


class OverviewPageTests(OverviewTestCase):
    def test_the_page_links_every_feature(self) -> None:
        self.client.force_login(self.alice)
        html = self.client.get(OVERVIEW).content.decode()
        for name, args in (
            ("tenancy:members", ["org-a"]),
            ("owncatalog:models", ["org-a"]),
            ("owncatalog:accelerators", ["org-a"]),
            ("fleet:fleet", ["org-a"]),
            ("planner:plan", ["org-a"]),
            ("planner:saved", ["org-a"]),
            ("reports:list", ["org-a"]),
            ("reports:links", ["org-a"]),
            ("pricing:org-feed", ["org-a"]),
            ("tokens:tokens", []),
            ("reports:activity", ["org-a"]),
        ):
            assert f'href="{reverse(name, args=args)}"' in html, name
        for text in (
            "3 members",
            "1 open invitation",
            "1 sign-up awaits your approval",
            "1 own model",
            "1 own card",
            "1 machine",
            "2 saved plans",
            "1 saved configuration",
            "1 price feed",
            "1 negotiated offer",
            "You have 2 active tokens for this organization.",
            "Latest: alice shared",
        ):
            assert text in html, text

    def test_a_viewer_sees_no_invitations_or_activity(self) -> None:
        self.client.force_login(self.bob)
        html = self.client.get(OVERVIEW).content.decode()
        assert "3 members" in html
        assert "open invitation" not in html
        assert reverse("reports:activity", args=["org-a"]) not in html

    def test_another_org_gets_404(self) -> None:
        self.client.force_login(self.charlie)
        assert self.client.get(OVERVIEW).status_code == 404

    def test_the_header_links_api_tokens_and_own_models_and_cards(self) -> None:
        self.client.force_login(self.bob)
        html = self.client.get(OVERVIEW).content.decode()
        for url in (
            reverse("tokens:tokens"),
            reverse("owncatalog:models", args=["org-a"]),
            reverse("owncatalog:accelerators", args=["org-a"]),
        ):
            assert f'<a href="{url}">' in html, url

    def test_the_page_stays_flat_as_rows_grow(self) -> None:
        # Session, user, tenant, the counts (one query), the latest activity entry and
        # the header's memberships: six, whatever the number of rows.
        self.client.force_login(self.alice)
        with self.assertNumQueries(6):
            self.client.get(OVERVIEW)
        tenant = tenant_for(self.alice, "org-a")
        for n in range(4):
            saved = self.save_as(self.alice, f"more {n}")
            share_link_create(tenant=tenant, user=self.alice, configuration=saved, expires_at=None)
            frozen_plan(organization=self.org_a, user=self.alice, name=f"plan {n}")
            token_create(user=self.alice, name=f"t{n}")
        add_machine(type(self))
        with CaptureQueriesContext(connection) as grown:
            html = self.client.get(OVERVIEW).content.decode()
        assert len(grown) == 6
        assert "5 saved configurations" in html  # 1 + 4
        assert "6 saved plans" in html  # 2 + 4
