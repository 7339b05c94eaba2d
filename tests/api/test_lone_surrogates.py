"""An unpaired surrogate in a JSON body ("\\ud800" as a JSON escape): Python's json makes a
str of it that no UTF-8 encoder takes, so any view that saved, logged or echoed it gave a
500. The API's JSON parser refuses it once, for every endpoint; the pages that take JSON as
text (a pasted config.json, a price feed, the admin's JSON fields) refuse it in their forms."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from catalog.forms import BoundedJSONField
from catalog.models import LLMModel
from pricing.models import CloudOffer, CloudProvider, PriceSource
from sizing_site.reports.models import SavedConfiguration
from sizing_site.tenancy.models import Invitation
from tests.reports.base import ReportsTestCase

REFUSED = {
    "errors": {
        "request": ["The JSON contains an unpaired surrogate (such as \\ud800), which is not text."]
    }
}
# JSON text with the escape spelled out: json.dumps("\ud800") writes exactly this.
LONE = json.dumps("\ud800")
TINY = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
}


class LoneSurrogateTests(ReportsTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.client.force_login(self.alice)  # admin of org A

    def send(self, method: str, url: str, body: str) -> Any:
        return getattr(self.client, method)(url, body, content_type="application/json")

    def test_every_json_write_refuses_it_with_a_400(self) -> None:
        CloudProvider.objects.create(name="Acme GPU", slug="acme")
        code = self.saved.code
        cases = [
            ("post", "/api/v1/estimate/", f'{{"model": {LONE}}}'),
            ("post", "/api/v1/o/org-a/configurations/", f'{{"name": {LONE}}}'),
            ("post", "/api/v1/o/org-a/configurations/", f"{{{LONE}: 1}}"),
            ("patch", f"/api/v1/o/org-a/configurations/{code}/", f'{{"tags": ["ok", {LONE}]}}'),
            ("post", f"/api/v1/o/org-a/configurations/{code}/duplicate/", f'{{"name": {LONE}}}'),
            ("post", f"/api/v1/o/org-a/configurations/{code}/share-links/", f"{{{LONE}: 1}}"),
            ("put", "/api/v1/o/org-a/share-policy/", f"{{{LONE}: true}}"),
            ("post", "/api/v1/o/org-a/inventory/", f'{{"name": {LONE}}}'),
            ("post", "/api/v1/o/org-a/plans/saved/", f'{{"name": {LONE}}}'),
            ("post", "/api/v1/o/org-a/models/", f'{{"name": {LONE}, "config": {{}}}}'),
            ("post", "/api/v1/o/org-a/accelerators/", f'{{"name": {LONE}}}'),
            ("post", "/api/v1/o/org-a/members/invitations/", f'{{"identifier": {LONE}}}'),
            ("post", "/api/v1/o/org-a/prices/feeds/", f'{{"provider": "acme", "content": {LONE}}}'),
            ("post", "/api/v1/o/org-a/prices/feeds/", f'{{"provider": {LONE}}}'),
            ("post", "/api/v1/o/org-a/configurations/", LONE),
        ]
        names = set(
            SavedConfiguration.objects.for_organization(self.org_a).values_list("name", flat=True)
        )
        for method, url, body in cases:
            response = self.send(method, url, body)
            assert response.status_code == 400, (url, body)
            assert response.json() == REFUSED, (url, body)
        assert (
            set(
                SavedConfiguration.objects.for_organization(self.org_a).values_list(
                    "name", flat=True
                )
            )
            == names
        )
        assert not Invitation.objects.for_organization(self.org_a).exists()
        assert not PriceSource.all_orgs.filter(organization=self.org_a).exists()

    def test_staff_edits_of_the_catalog_refuse_it_too(self) -> None:
        staff = User.objects.create_superuser("s", "s@example.invalid", "pw-s-12345")
        self.client.force_login(staff)
        response = self.send("patch", "/api/v1/catalog/models/glm-4-5-air/", f"{{{LONE}: 1}}")
        assert (response.status_code, response.json()) == (400, REFUSED)

    def test_a_surrogate_pair_is_text_and_is_saved(self) -> None:
        url = f"/api/v1/o/org-a/configurations/{self.saved.code}/"
        response = self.send("patch", url, json.dumps({"name": "Budget 😀"}))  # "\ud83d\ude00"
        assert response.status_code == 200
        self.saved.refresh_from_db()
        assert self.saved.name == "Budget 😀"


class LoneSurrogateFormTests(ReportsTestCase):
    """Form posts: text fields cannot carry one (Django decodes a body's bad UTF-8 as U+FFFD),
    but JSON pasted or uploaded as text can."""

    def setUp(self) -> None:
        super().setUp()
        self.config = json.dumps({**TINY, "architectures": ["\ud800"]})
        assert "\\ud800" in self.config  # ASCII text on the wire

    def test_a_pasted_config_is_refused_on_the_own_model_page(self) -> None:
        self.client.force_login(self.alice)
        url = reverse("owncatalog:model-new", args=["org-a"])
        response = self.client.post(url, {"name": "Mine", "config_text": self.config})
        assert response.status_code == 400
        assert "cannot contain an unpaired surrogate" in response.content.decode()
        assert not LLMModel.all_orgs.filter(organization=self.org_a).exists()

    def test_a_pasted_config_is_refused_on_the_staff_importer(self) -> None:
        staff = User.objects.create_user("s", "s@example.invalid", "pw-s-12345", is_staff=True)
        self.client.force_login(staff)
        models = LLMModel.objects.count()
        url = reverse("catalog:config-import")
        response = self.client.post(url, {"text": self.config, "hf_repo": "me/x"})
        assert response.status_code == 400
        assert "cannot contain an unpaired surrogate" in response.content.decode()
        assert LLMModel.objects.count() == models

    def test_a_json_feed_file_is_refused(self) -> None:
        self.client.force_login(self.alice)
        acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")
        feed = json.dumps([{"sku": "\ud800", "on_demand_per_hour": 1}]).encode()
        upload = SimpleUploadedFile("feed.json", feed)
        url = reverse("pricing:org-feed", args=["org-a"])
        response = self.client.post(url, {"provider": acme.pk, "file": upload})
        assert response.status_code == 400
        assert list(response.context["form"].errors["file"]) == [
            "malformed JSON feed: contains an unpaired surrogate (such as \\ud800), which is "
            "not text"
        ]
        assert not CloudOffer.all_orgs.filter(organization=self.org_a).exists()

    def test_the_admins_json_fields_refuse_it(self) -> None:
        field = BoundedJSONField(required=False)
        try:
            field.clean(self.config)
        except ValidationError as exc:
            assert exc.code == "surrogate"
        else:
            raise AssertionError("accepted an unpaired surrogate")
        assert field.clean('{"name": "\\ud83d\\ude00"}') == {"name": "😀"}
