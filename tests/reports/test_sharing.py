"""Share links: create, open anonymously, expire, revoke, the org's policy; who may do what."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import timedelta

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation

from sizing_site.reports.models import ActivityEntry, ShareLink
from sizing_site.reports.services import share_link_create
from sizing_site.tenancy.access import tenant_for
from tests.reports.base import ReportsTestCase


class ShareLifecycleTests(ReportsTestCase):
    def share(self, user: User | None = None, **data: str) -> ShareLink:
        """A link made on the page, with its token as the page showed it (once)."""
        self.client.force_login(user or self.dave)
        response = self.client.post(self.url("share", "org-a", self.saved.code), data)
        assert response.status_code == 201, response.content
        self.client.logout()
        link: ShareLink = ShareLink.objects.for_organization(self.org_a).latest("created")
        shown = response.context["new_link_url"]
        assert shown in response.content.decode()
        link.token = shown.removeprefix("http://testserver/r/").removesuffix("/")
        return link

    def shared_url(self, token: str, lang: str = "en") -> str:
        with translation.override(lang):
            return reverse("reports:shared", args=[token])

    def test_a_link_opens_a_read_only_noindex_report_without_login(self) -> None:
        link = self.share()
        # token_urlsafe(32): 32 random bytes = 256 bits, 43 URL-safe characters.
        assert len(link.token) == 43
        response = self.client.get(self.shared_url(link.token))
        assert response.status_code == 200
        assert response["X-Robots-Tag"] == "noindex, nofollow"
        html = response.content.decode()
        assert '<meta name="robots" content="noindex, nofollow">' in html
        assert "2x A100 at 32K" in html
        # No org navigation, no forms.
        assert "org-a" not in html and "<form" not in html

    def test_the_shared_page_opens_in_all_four_languages(self) -> None:
        link = self.share()
        for lang in ("en", "de", "it", "zh-hans"):
            response = self.client.get(self.shared_url(link.token, lang=lang))
            assert response.status_code == 200, lang
            html = response.content.decode()
            assert f'<html lang="{lang}">' in html and "2x A100 at 32K" in html, lang

    def test_an_expired_link_is_404(self) -> None:
        link = self.share()
        ShareLink.all_tenants.filter(pk=link.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        assert self.client.get(self.shared_url(link.token)).status_code == 404

    def test_a_future_expiry_still_opens(self) -> None:
        later = (timezone.localtime() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
        link = self.share(expires_at=later)
        assert link.expires_at is not None
        assert self.client.get(self.shared_url(link.token)).status_code == 200

    def test_a_past_expiry_is_a_form_error(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(
            self.url("share", "org-a", self.saved.code), {"expires_at": "2001-01-01T00:00"}
        )
        assert response.status_code == 400
        assert b"Choose a time in the future." in response.content

    def test_a_revoked_link_is_404(self) -> None:
        link = self.share()
        self.client.force_login(self.dave)
        assert self.client.post(self.url("revoke", "org-a", link.code)).status_code == 302
        self.client.logout()
        assert self.client.get(self.shared_url(link.token)).status_code == 404

    def test_turning_public_links_off_hides_every_token_of_the_org(self) -> None:
        link = self.share()
        self.client.force_login(self.alice)
        assert self.client.post(self.url("policy", "org-a"), {}).status_code == 302
        self.client.logout()
        assert self.client.get(self.shared_url(link.token)).status_code == 404
        self.client.force_login(self.alice)
        self.client.post(self.url("policy", "org-a"), {"public_links": "on"})
        assert self.client.get(self.shared_url(link.token)).status_code == 200
        actions = ActivityEntry.objects.for_organization(self.org_a).values_list(
            "action", flat=True
        )
        assert list(actions)[:3] == ["links_on", "links_off", "shared"]

    def test_no_new_links_while_the_policy_is_off(self) -> None:
        self.client.force_login(self.alice)
        self.client.post(self.url("policy", "org-a"), {})
        response = self.client.post(self.url("share", "org-a", self.saved.code), {})
        assert response.status_code == 400
        assert not ShareLink.objects.for_organization(self.org_a).exists()

    def test_unknown_and_mangled_tokens_are_404(self) -> None:
        link = self.share()
        for token in ("nope", link.token[:-1], link.token + "x", "x" * 43):
            assert self.client.get(self.shared_url(token)).status_code == 404, token

    def test_a_configurations_token_opens_no_saved_plan(self) -> None:
        # One lookup for both kinds (sharing.selectors.share_link_resolve), each in its table.
        link = self.share()
        with translation.override("en"):
            plan_page = reverse("planner:shared", args=[link.token])
        assert self.client.get(plan_page).status_code == 404
        assert self.client.get(self.shared_url(link.token)).status_code == 200

    def test_an_editor_cannot_revoke_someone_elses_link_but_an_admin_can(self) -> None:
        link = self.share(user=self.alice)
        self.client.force_login(self.dave)
        assert self.client.post(self.url("revoke", "org-a", link.code)).status_code == 403
        self.client.force_login(self.alice)
        assert self.client.post(self.url("revoke", "org-a", link.code)).status_code == 302

    def test_the_links_page_lists_only_active_links(self) -> None:
        live = self.share()
        gone = self.share()
        ShareLink.all_tenants.filter(pk=gone.pk).update(revoked_at=timezone.now())
        self.client.force_login(self.bob)
        response = self.client.get(self.url("links", "org-a"))
        assert [link.pk for link in response.context["links"]] == [live.pk]

    def test_the_activity_log_is_for_admins(self) -> None:
        self.share()
        self.client.force_login(self.bob)
        assert self.client.get(self.url("activity", "org-a")).status_code == 403
        self.client.force_login(self.alice)
        response = self.client.get(self.url("activity", "org-a"))
        assert [e.action for e in response.context["entries"]] == ["shared", "saved"]


class FlatQueryTests(ReportsTestCase):
    def count(self, url: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert self.client.get(url).status_code == 200
        return len(ctx.captured_queries)

    def test_the_links_and_activity_pages_stay_flat(self) -> None:
        tenant = tenant_for(self.alice, "org-a")
        self.client.force_login(self.alice)
        counts = []
        for n in (2, 20):
            while ShareLink.objects.for_organization(self.org_a).count() < n:
                share_link_create(
                    tenant=tenant, user=self.alice, configuration=self.saved, expires_at=None
                )
            counts.append(
                (self.count(self.url("links", "org-a")), self.count(self.url("activity", "org-a")))
            )
        assert counts[0] == counts[1], counts


class TokenAtRestTests(ReportsTestCase):
    """The database keeps a share token's SHA-256, never the token: a copy of the table, a
    backup or a dumpdata opens no report. The token is shown once, when the link is made."""

    def test_the_database_keeps_only_the_tokens_hash_and_finds_the_link_by_it(self) -> None:
        link = share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        token = link.token
        assert len(token) == 43
        row = ShareLink.all_tenants.get(pk=link.pk)
        assert row.token == ""  # not a column: read back, a link has no token
        assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
        stored = json.dumps(list(ShareLink.all_tenants.values()), default=str)
        dumped = io.StringIO()
        call_command("dumpdata", "reports", stdout=dumped)
        assert token not in stored and token not in dumped.getvalue()
        assert self.client.get(reverse("reports:shared", args=[token])).status_code == 200
        # The hash itself opens nothing.
        assert self.client.get(reverse("reports:shared", args=[row.token_hash])).status_code == 404

    def test_the_links_page_shows_a_new_links_address_once(self) -> None:
        self.client.force_login(self.dave)
        made = self.client.post(self.url("share", "org-a", self.saved.code), {})
        assert made.status_code == 201
        address = made.context["new_link_url"]
        assert "/r/" in address and address in made.content.decode()
        listed = self.client.get(self.url("links", "org-a"))
        assert listed.status_code == 200
        token = address.rstrip("/").rsplit("/", 1)[1]
        assert token not in listed.content.decode()
        assert [link.pk for link in listed.context["links"]] == [made.context["new_link"].pk]

    def test_an_expiry_past_ten_years_is_refused_on_the_page(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(
            self.url("share", "org-a", self.saved.code), {"expires_at": "9999-12-31T23:59"}
        )
        assert response.status_code == 400
        assert "Choose a time at most 3650 days from now." in response.content.decode()
        assert not ShareLink.objects.for_organization(self.org_a).exists()

    def test_the_request_log_shows_no_token(self) -> None:
        link = share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        with self.assertLogs("sizing_site.request", "INFO") as logged:
            self.client.get(reverse("reports:shared", args=[link.token]))
            self.client.get(reverse("reports:shared", args=["x" * 43]))  # unknown: 404
        lines = [(r.getMessage(), r.path) for r in logged.records]  # type: ignore[attr-defined]
        assert lines == [
            ("GET /en/r/<token>/ 200", "/en/r/<token>/"),
            ("GET /en/r/<token>/ 404", "/en/r/<token>/"),
        ]
