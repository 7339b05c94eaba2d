"""A viewer gets 403 on every POST route of the reports app; its GET routes render."""

from __future__ import annotations

from sizing_site.reports import urls
from sizing_site.reports.models import ShareLink
from sizing_site.reports.services import share_link_create
from sizing_site.tenancy.access import tenant_for
from tests.reports.base import ReportsTestCase

READS = {"list", "compare", "links", "activity", "report", "recompute", "export-csv"}
READS |= {"export-json", "shared"}


class ViewerTests(ReportsTestCase):
    def test_a_viewer_gets_403_on_every_write_route(self) -> None:
        link = share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        self.client.force_login(self.bob)
        writes = [p for p in urls.urlpatterns if p.name not in READS]
        assert {p.name for p in writes} == {
            "save",
            "policy",
            "revoke",
            "rename",
            "duplicate",
            "delete",
            "share",
            "restore",
        }
        for pattern in writes:
            code = link.code if pattern.name == "revoke" else self.saved.code
            args = [code] if "code" in pattern.pattern.converters else []
            url = self.url(str(pattern.name), "org-a", *args)
            response = self.client.post(url, {"name": "x", "public_links": ""})
            assert response.status_code == 403, (pattern.name, response.status_code)
        # Nothing changed.
        self.saved.refresh_from_db()
        assert self.saved.name == "2x A100 at 32K"
        assert ShareLink.objects.for_organization(self.org_a).get().revoked_at is None
