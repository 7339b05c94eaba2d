"""Share links: create, open anonymously, expire, revoke, the org's policy; who may do what."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
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
        self.client.force_login(user or self.dave)
        response = self.client.post(self.url("share", "org-a", self.saved.code), data)
        assert response.status_code == 302, response.content
        self.client.logout()
        link: ShareLink = ShareLink.objects.for_organization(self.org_a).latest("created")
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
