"""Bad input the schema fuzz does not draw, found in review: a body nested too
deeply for Python's JSON parser, a form-wide error beside a field error, and JSON values
of the wrong type where a page's form would take their text. Each is a 400 naming the
field, never a 500 or a row saved from a list's text."""

from __future__ import annotations

import json
from datetime import timedelta

from django.test import RequestFactory
from django.utils import timezone, translation

from pricing.models import CloudOffer, CloudProvider, PriceSource
from sizing_site.apikit.errors import server_error
from sizing_site.reports.services import share_policy_update
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Invitation
from tests.reports.base import ReportsTestCase

DEEP = "[" * 50_000 + "]" * 50_000  # past Python's recursion limit when parsed


class BadInputTests(ReportsTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.alice)  # admin of org A

    def post(self, url: str, body: object) -> object:
        text = body if isinstance(body, str) else json.dumps(body)
        return self.client.post(url, text, content_type="application/json")

    def test_a_body_nested_too_deeply_is_a_400_on_every_json_write(self) -> None:
        for url in (
            "/api/v1/estimate/",
            "/api/v1/o/org-a/configurations/",
            "/api/v1/o/org-a/members/invitations/",
            "/api/v1/o/org-a/prices/feeds/",
            f"/api/v1/o/org-a/configurations/{self.saved.code}/share-links/",
        ):
            response = self.post(url, DEEP)
            assert response.status_code == 400, url  # type: ignore[attr-defined]
            assert response.json() == {  # type: ignore[attr-defined]
                "errors": {"request": ["The JSON is nested too deeply."]}
            }, url

    def test_a_form_wide_error_keeps_the_field_errors_beside_it(self) -> None:
        share_policy_update(
            tenant=tenant_for(self.alice, "org-a"), user=self.alice, public_links=False
        )
        past = (timezone.now() - timedelta(hours=1)).isoformat()
        url = f"/api/v1/o/org-a/configurations/{self.saved.code}/share-links/"
        errors = self.post(url, {"expires_at": past}).json()["errors"]  # type: ignore[attr-defined]
        assert set(errors) == {"detail", "expires_at"}, errors

    def test_a_list_or_object_is_no_text(self) -> None:
        response = self.post(
            "/api/v1/o/org-a/members/invitations/", {"identifier": ["a"], "role": "viewer"}
        )
        assert response.json() == {"errors": {"identifier": ["Expected a string."]}}  # type: ignore[attr-defined]
        assert not Invitation.objects.for_organization(self.org_a).exists()
        CloudProvider.objects.create(name="Acme GPU", slug="acme")
        feeds = "/api/v1/o/org-a/prices/feeds/"
        for body, field in (
            ({"provider": "acme", "content": {"a": 1}}, "content"),
            ({"provider": ["acme"], "content": "sku\n"}, "provider"),
            ({"provider": "acme", "url": 7}, "url"),
        ):
            response = self.post(feeds, body)
            assert response.status_code == 400, body  # type: ignore[attr-defined]
            assert list(response.json()["errors"]) == [field], body  # type: ignore[attr-defined]
        assert not PriceSource.all_orgs.filter(organization=self.org_a).exists()
        assert not CloudOffer.all_orgs.filter(organization=self.org_a).exists()


def test_a_server_error_under_the_api_is_json_and_elsewhere_the_sites_page() -> None:
    factory = RequestFactory()
    api = server_error(factory.get("/api/v1/estimate/"))
    assert api.status_code == 500
    assert json.loads(api.content) == {"errors": {"detail": ["Server error."]}}
    page = server_error(factory.get("/en/"))
    assert page.status_code == 500 and b"{" not in page.content[:1]
