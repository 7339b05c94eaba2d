"""Saved configurations and share links through the API: the same services,
selectors and forms as the reports pages, the same figures as the page's save path, the
same roles, and another org's rows out of reach."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from sizing_site.configurator.state import configuration_size_by_slugs
from sizing_site.reports import selectors
from sizing_site.reports.models import ActivityEntry, SavedConfiguration, ShareLink
from sizing_site.reports.services import share_link_create, share_policy_update
from sizing_site.sharing.selectors import public_links_allowed
from sizing_site.tenancy.access import tenant_for
from sizing_site.tokens.services import token_create
from tests.reports.base import QUERY, ReportsTestCase

BASE = "/api/v1/o/org-a/"
MODEL, CARD = "glm-4-5-air", "nvidia-a100-80gb-pcie"
# The configurator's query parameters of QUERY, as the API's JSON setup fields.
SETUP = {"quant": "Q4_K_M", "ctx": 32768, "gpus": 2}


class ConfigurationApiTestCase(ReportsTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def send(self, user: User | None, method: str, path: str, body: Any = None) -> Any:
        if user is not None:
            self.client.force_login(user)
        send = getattr(self.client, method)
        if body is None:
            return send(path)
        return send(path, json.dumps(body), content_type="application/json")

    def create(self, user: User, **body: Any) -> Any:
        data = {"name": "API save", "model": MODEL, "accelerator": CARD, **SETUP, **body}
        return self.send(user, "post", BASE + "configurations/", data)

    def one(self, code: object, tail: str = "") -> str:
        return f"{BASE}configurations/{code}/{tail}"

    def actions(self) -> list[str]:
        return list(
            ActivityEntry.objects.for_organization(self.org_a).values_list("action", flat=True)
        )


class CreateTests(ConfigurationApiTestCase):
    def test_saving_and_recomputing_spend_the_work_budget(self) -> None:
        # Each sizes the setup once: one unit (GLM-4.5-Air has 46 layers).
        with override_settings(API_COST_PER_MINUTE_USER=2):
            saved = self.create(self.dave)
            assert saved.status_code == 201
            recomputed = self.send(self.dave, "get", self.one(saved.json()["code"], "recompute/"))
            assert recomputed.status_code == 200
            refused = self.create(self.dave)
            assert refused.status_code == 429
            assert (refused.json()["limit"], refused.json()["cost"]) == (
                "API_COST_PER_MINUTE_USER",
                1,
            )
            again = self.send(self.dave, "get", self.one(saved.json()["code"], "recompute/"))
            assert again.status_code == 429
        assert self.actions().count("saved") == 2  # the cast's own save and this one

    def test_the_api_saves_the_same_figures_as_the_page_save_path(self) -> None:
        response = self.create(self.dave, notes="n", tags=["budget", "q3"])
        assert response.status_code == 201, response.content
        got = response.json()
        # What the page's save path freezes for the same setup (configuration_save:
        # configuration_size_by_slugs, then the snapshot the create service takes).
        expected = selectors.configuration_snapshot(
            state=configuration_size_by_slugs(model_slug=MODEL, accelerator_slug=CARD, data=QUERY)
        )
        result, want = got["snapshot"]["result"], expected.snapshot.result
        assert set(result) == set(want)
        for key in want:
            assert result[key] == want[key], key
        for path in selectors.FIGURES:
            assert selectors.figure(result, path) == selectors.figure(want, path), path
        # As JSON (the stored snapshot is a JSON field: tuples come back as lists).
        assert got["snapshot"]["setup"] == json.loads(json.dumps(expected.snapshot.setup))
        assert got["snapshot"]["setup"]["gpus"] == 2
        assert got["snapshot"]["setup"]["context_tokens"] == 32768
        assert got["estimator_request"] == expected.estimator_request
        assert got["query"] == expected.query
        assert got["tags"] == ["budget", "q3"] and got["notes"] == "n"
        assert got["saved_by"] == "dave"
        # The row is the one the report page shows.
        saved = SavedConfiguration.objects.for_organization(self.org_a).get(code=got["code"])
        assert saved.snapshot["result"] == got["snapshot"]["result"]
        assert self.actions()[0] == "saved"

    def test_the_same_figures_as_a_configuration_saved_by_the_page(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(
            self.url("save", "org-a"),
            {
                "name": "page",
                "model": MODEL,
                "accelerator": CARD,
                "query": "quant=Q4_K_M&ctx=32768&gpus=2",
            },
        )
        assert response.status_code == 302
        page = SavedConfiguration.objects.for_organization(self.org_a).get(name="page")
        got = self.create(self.dave).json()
        for path in selectors.FIGURES:
            assert selectors.figure(got["snapshot"]["result"], path) == selectors.figure(
                page.snapshot["result"], path
            ), path
        assert got["snapshot"]["result"]["fit"] == page.snapshot["result"]["fit"]
        assert got["query"] == page.query

    def test_the_client_cannot_inject_figures(self) -> None:
        count = SavedConfiguration.objects.for_organization(self.org_a).count()
        extras: list[dict[str, Any]] = [
            {"total_bytes": 1},
            {"snapshot": {"result": {"total_bytes": 1}}},
            {"result": {}},
            {"query": "ctx=1"},
        ]
        for extra in extras:
            response = self.create(self.dave, **extra)
            assert response.status_code == 400, extra
            assert set(response.json()["errors"]) == set(extra), response.json()
        assert SavedConfiguration.objects.for_organization(self.org_a).count() == count

    def test_bad_input_is_400_naming_the_field(self) -> None:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"name": ""}, "name"),
            ({"name": "x" * 121}, "name"),
            ({"ctx": 0}, "ctx"),
            ({"gpus": "many"}, "gpus"),
            ({"ctx": [1]}, "ctx"),
            ({"tags": [1]}, "tags"),
            ({"notes": 5}, "notes"),
        ]
        for body, field in cases:
            response = self.create(self.dave, **body)
            assert response.status_code == 400, (body, response.content)
            assert field in response.json()["errors"], (body, response.json())
        response = self.send(self.dave, "post", BASE + "configurations/", [1])
        assert response.status_code == 400
        assert "request" in response.json()["errors"]

    def test_unknown_slugs_are_404_naming_the_field(self) -> None:
        response = self.create(self.dave, model="no-such-model")
        assert response.status_code == 404
        assert response.json() == {"errors": {"model": ["No model with this slug."]}}
        response = self.create(self.dave, accelerator="no-such-card")
        assert response.status_code == 404
        assert list(response.json()["errors"]) == ["accelerator"]


class ReadTests(ConfigurationApiTestCase):
    def test_a_viewer_reads_the_frozen_snapshot(self) -> None:
        response = self.send(self.bob, "get", self.one(self.saved.code))
        assert response.status_code == 200
        got = response.json()
        self.saved.refresh_from_db()  # the stored JSON
        assert got["snapshot"] == self.saved.snapshot
        assert got["query"] == self.saved.query
        assert got["estimator_request"] == self.saved.estimator_request
        assert got["saved_by"] == "alice"
        assert (got["model"], got["accelerator"]) == (MODEL, CARD)

    def test_the_export_is_the_pages_json_export(self) -> None:
        api = self.send(self.bob, "get", self.one(self.saved.code, "export/")).json()
        page = self.client.get(self.url("export-json", "org-a", self.saved.code))
        assert page.status_code == 200
        assert api == json.loads(page.content)

    def test_the_list_searches_sorts_and_pages(self) -> None:
        self.save_as(self.dave, "Zed plan")
        self.save_as(self.alice, "Another")
        names = lambda r: [row["name"] for row in r.json()["results"]]  # noqa: E731
        response = self.send(self.bob, "get", BASE + "configurations/?sort=name")
        assert response.status_code == 200
        assert names(response) == ["2x A100 at 32K", "Another", "Zed plan"]
        assert response.json()["count"] == 3
        row = response.json()["results"][0]
        assert row["verdict"] == self.saved.snapshot["result"]["fit"]["verdict"]
        assert row["gpus"] == 2 and row["model"] == MODEL
        assert names(self.client.get(BASE + "configurations/?q=zed")) == ["Zed plan"]
        self.client.force_login(self.dave)
        assert names(self.client.get(BASE + "configurations/?mine=true")) == ["Zed plan"]
        page = self.client.get(BASE + "configurations/?sort=-name&page_size=2&page=2")
        assert names(page) == ["2x A100 at 32K"]
        for bad in ("sort=size", "mine=maybe"):
            response = self.client.get(BASE + "configurations/?" + bad)
            assert response.status_code == 400
            assert bad.split("=")[0] in response.json()["errors"]

    def test_recompute_gives_todays_figures_and_the_changes(self) -> None:
        self.card.price_usd = 12345
        self.card.save()
        response = self.send(self.bob, "get", self.one(self.saved.code, "recompute/"))
        assert response.status_code == 200
        got = response.json()
        assert got["sizeable"] is True
        state = configuration_size_by_slugs(
            model_slug=MODEL, accelerator_slug=CARD, data=self.saved.query
        )
        today, changes = selectors.configuration_changes(configuration=self.saved, state=state)
        assert today is not None
        assert got["today"]["result"] == today.result
        assert got["changes"] == changes
        keys = [row["key"] for row in got["catalog_changes"]]
        assert keys == ["accelerator.price_usd"]
        assert got["catalog_changes"][0]["new"] == 12345


class WriteTests(ConfigurationApiTestCase):
    def test_rename_duplicate_and_delete_log_activity(self) -> None:
        code = self.saved.code
        response = self.send(self.dave, "patch", self.one(code), {"name": "  Renamed "})
        assert response.status_code == 200
        assert response.json()["name"] == "Renamed"
        assert self.actions()[0] == "renamed"
        # Only the name.
        bad = self.client.patch(
            self.one(code), json.dumps({"notes": "x"}), content_type="application/json"
        )
        assert bad.status_code == 400 and list(bad.json()["errors"]) == ["notes"]
        empty = self.client.patch(
            self.one(code), json.dumps({"name": ""}), content_type="application/json"
        )
        assert empty.status_code == 400 and list(empty.json()["errors"]) == ["name"]

        response = self.send(self.dave, "post", self.one(code, "duplicate/"), {"name": "Copy"})
        assert response.status_code == 201
        copy = response.json()
        assert copy["name"] == "Copy" and copy["code"] != str(code)
        self.saved.refresh_from_db()
        assert copy["snapshot"] == self.saved.snapshot
        assert copy["saved_by"] == "dave"
        assert self.actions()[0] == "duplicated"
        default = self.send(self.dave, "post", self.one(code, "duplicate/"), {}).json()
        assert default["name"] == "Copy of Renamed"

        assert self.client.delete(self.one(code)).status_code == 204
        assert self.actions()[0] == "deleted"
        assert self.client.get(self.one(code)).status_code == 404

    def test_a_viewer_gets_403_on_every_write(self) -> None:
        link = share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        code = self.saved.code
        writes = [
            ("post", BASE + "configurations/", {"name": "x", "model": MODEL, "accelerator": CARD}),
            ("patch", self.one(code), {"name": "x"}),
            ("delete", self.one(code), None),
            ("post", self.one(code, "duplicate/"), {}),
            ("post", self.one(code, "share-links/"), {}),
            ("delete", f"{BASE}share-links/{link.code}/", None),
        ]
        before = self.actions()
        for method, url, body in writes:
            response = self.send(self.bob, method, url, body)
            assert response.status_code == 403, (method, url, response.status_code)
        assert self.actions() == before

    def test_a_non_member_gets_404_on_every_route_and_method(self) -> None:
        link = share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        code = self.saved.code
        urls = [
            BASE + "configurations/",
            self.one(code),
            self.one(code, "recompute/"),
            self.one(code, "export/"),
            self.one(code, "duplicate/"),
            self.one(code, "share-links/"),
            BASE + "share-links/",
            f"{BASE}share-links/{link.code}/",
            BASE + "activity/",
        ]
        self.client.force_login(self.charlie)
        for url in urls:
            for method in ("get", "post", "patch", "put", "delete"):
                body = None if method == "get" else {"name": "x"}
                response = self.send(None, method, url, body)
                assert response.status_code == 404, (method, url, response.status_code)
        # Org B's own configuration code under org A's slug, for a member of A: 404 too.
        theirs = self.save_as(self.charlie, "B's", org="org-b")
        assert self.send(self.alice, "get", self.one(theirs.code)).status_code == 404
        assert self.client.delete(self.one(theirs.code)).status_code == 404
        assert SavedConfiguration.objects.for_organization(self.org_b).filter(pk=theirs.pk)

    def test_the_activity_log_is_for_admins(self) -> None:
        self.send(self.dave, "patch", self.one(self.saved.code), {"name": "R"})
        assert self.send(self.bob, "get", BASE + "activity/").status_code == 403
        response = self.send(self.alice, "get", BASE + "activity/")
        assert response.status_code == 200
        entries = response.json()["entries"]
        assert [e["action"] for e in entries] == ["renamed", "saved"]
        assert entries[0]["actor"] == "dave"


class ShareTests(ConfigurationApiTestCase):
    def share(self, user: User, body: Any = None) -> Any:
        return self.send(user, "post", self.one(self.saved.code, "share-links/"), body or {})

    def test_a_share_link_opens_the_public_report_for_anyone(self) -> None:
        response = self.share(self.dave, {"expires_in_days": 7})
        assert response.status_code == 201, response.content
        got = response.json()
        link = ShareLink.objects.for_organization(self.org_a).get(code=got["code"])
        # The token in this answer only; the row keeps its SHA-256.
        assert len(got["token"]) == 43
        assert link.token_hash == hashlib.sha256(got["token"].encode()).hexdigest()
        assert got["url"] == f"http://testserver/r/{got['token']}/"
        assert link.expires_at is not None
        assert timedelta(days=6) < link.expires_at - timezone.now() <= timedelta(days=7)
        assert self.actions()[0] == "shared"
        # No language prefix: each reader lands in their own language, with links to the
        # others (a header with a language switch, no org navigation).
        anonymous = Client(headers={"accept-language": "de"})
        opened = anonymous.get(got["url"].removeprefix("http://testserver"))
        assert opened.status_code == 302
        assert opened["Location"] == f"/de/r/{got['token']}/"
        page = anonymous.get(opened["Location"])
        assert page.status_code == 200
        body = page.content.decode()
        assert "2x A100 at 32K" in body and '<html lang="de">' in body
        assert f'<a href="/en/r/{got["token"]}/" lang="en" hreflang="en">English</a>' in body
        assert f'<a href="/zh-hans/r/{got["token"]}/"' in body
        # Listed for a viewer, without the token or the address: nobody can read them again.
        listed = self.send(self.bob, "get", BASE + "share-links/").json()["links"]
        assert [row["code"] for row in listed] == [got["code"]]
        assert listed[0]["token"] is None and listed[0]["url"] is None
        one = self.send(self.alice, "get", f"{BASE}share-links/{got['code']}/").json()
        assert one["token"] is None and one["url"] is None

    def test_expires_at_is_capped_like_expires_in_days(self) -> None:
        # expires_in_days allowed at most 3,650 days; expires_at allowed the year 9999.
        for far in ("9999-12-31T00:00:00Z", (timezone.now() + timedelta(days=3651)).isoformat()):
            response = self.share(self.dave, {"expires_at": far})
            assert response.status_code == 400, far
            assert response.json()["errors"] == {
                "expires_at": ["Choose a time at most 3650 days from now."]
            }
        near = (timezone.now() + timedelta(days=3649)).isoformat()
        assert self.share(self.dave, {"expires_at": near}).status_code == 201
        assert self.share(self.dave, {"expires_in_days": 3650}).status_code == 201

    def test_expiry_is_validated_as_the_share_form_does(self) -> None:
        past = (timezone.now() - timedelta(hours=1)).isoformat()
        later = (timezone.now() + timedelta(days=2)).isoformat()
        for body, field in (
            ({"expires_at": past}, "expires_at"),
            ({"expires_at": "soon"}, "expires_at"),
            ({"expires_in_days": 0}, "expires_in_days"),
            ({"expires_in_days": "7"}, "expires_in_days"),
            ({"expires_at": later, "expires_in_days": 2}, "expires_in_days"),
            ({"token": "mine"}, "token"),
        ):
            response = self.share(self.dave, body)
            assert response.status_code == 400, body
            assert list(response.json()["errors"]) == [field], (body, response.json())
        response = self.share(self.dave, {"expires_at": later})
        assert response.status_code == 201
        assert self.share(self.dave).json()["expires_at"] is None

    def test_no_link_while_the_org_turned_public_links_off(self) -> None:
        share_policy_update(
            tenant=tenant_for(self.alice, "org-a"), user=self.alice, public_links=False
        )
        response = self.share(self.dave)
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["detail"]
        assert not ShareLink.objects.for_organization(self.org_a).exists()

    def test_editors_revoke_their_own_links_admins_any(self) -> None:
        alices = self.share(self.alice).json()
        daves = self.share(self.dave).json()
        response = self.send(self.dave, "delete", f"{BASE}share-links/{alices['code']}/")
        assert response.status_code == 403
        assert "errors" in response.json()
        assert self.client.delete(f"{BASE}share-links/{daves['code']}/").status_code == 204
        assert self.actions()[0] == "revoked"
        assert (
            self.send(self.alice, "delete", f"{BASE}share-links/{alices['code']}/").status_code
            == 204
        )
        revoked = self.client.get(f"{BASE}share-links/{alices['code']}/").json()
        assert revoked["revoked_at"] is not None
        assert self.client.get(f"{BASE}share-links/").json()["links"] == []
        revoked = Client().get(alices["url"].removeprefix("http://testserver"), follow=True)
        assert revoked.status_code == 404


class TokenAndQueryTests(ConfigurationApiTestCase):
    def test_a_token_authenticated_script_saves_and_lists(self) -> None:
        plain = token_create(user=self.dave, name="ci").plain
        script = Client()
        headers = {"Authorization": f"Bearer {plain}"}
        body = {"name": "From CI", "model": MODEL, "accelerator": CARD, **SETUP}
        response = script.post(
            BASE + "configurations/",
            json.dumps(body),
            content_type="application/json",
            headers=headers,
        )
        assert response.status_code == 201, response.content
        listed = script.get(BASE + "configurations/", headers=headers)
        assert listed.status_code == 200
        assert "From CI" in [row["name"] for row in listed.json()["results"]]
        # No header: refused; a bad token: 401.
        assert Client().get(BASE + "configurations/").status_code == 403
        bad = Client().get(BASE + "configurations/", headers={"Authorization": "Bearer rs_x"})
        assert bad.status_code == 401

    def test_the_list_stays_flat_with_3_and_30_rows(self) -> None:
        self.client.force_login(self.alice)
        counts = []
        for n in (3, 30):
            while SavedConfiguration.objects.for_organization(self.org_a).count() < n:
                # Copies of the frozen row: a list reads rows, it sizes nothing.
                SavedConfiguration.all_tenants.create(
                    organization=self.org_a,
                    name=f"copy {n}",
                    model_slug=MODEL,
                    accelerator_slug=CARD,
                    query=self.saved.query,
                    estimator_request=self.saved.estimator_request,
                    snapshot=self.saved.snapshot,
                    created_by=self.dave,
                )
            with CaptureQueriesContext(connection) as ctx:
                response = self.client.get(BASE + "configurations/")
                assert response.status_code == 200
                assert len(response.json()["results"]) == n
            counts.append(len(ctx.captured_queries))
        assert counts[0] == counts[1], counts


class CompareAndPolicyTests(ConfigurationApiTestCase):
    def test_compare_is_the_compare_pages_rows_from_the_snapshots(self) -> None:
        other = self.save_as(self.alice, "1x A100")
        codes = [str(self.saved.code), str(other.code)]
        page = self.send(self.bob, "get", f"/en/o/org-a/reports/compare/?c={codes[0]}&c={codes[1]}")
        assert page.status_code == 200
        response = self.send(
            self.bob, "get", f"{BASE}configurations/compare/?c={codes[0]}&c={codes[1]}"
        )
        assert response.status_code == 200, response.content
        got = response.json()
        assert [c["code"] for c in got["configurations"]] == codes
        shown = page.context["rows"]
        assert [r["figure"] for r in got["rows"]] == [r.label for r in shown]
        for mine, theirs in zip(got["rows"], shown, strict=True):
            assert mine["values"] == json.loads(json.dumps(theirs.values)), mine["figure"]
            assert mine["best"] == sorted(theirs.best), mine["figure"]
        # The same setup saved twice: equal figures, both columns marked best.
        per_device = next(r for r in got["rows"] if r["figure"] == "per_device")
        assert per_device["values"][0] == per_device["values"][1]
        assert per_device["values"][0] == self.saved.snapshot["result"]["per_device_bytes"]

    def test_compare_needs_2_to_4_codes_of_the_org(self) -> None:
        url = f"{BASE}configurations/compare/"
        assert self.send(self.bob, "get", url).json() == {
            "errors": {"c": ["Send 2 to 4 different configuration codes."]}
        }
        assert self.send(self.bob, "get", f"{url}?c=x&c=y").status_code == 400
        twice = f"{url}?c={self.saved.code}&c={self.saved.code}"
        assert self.send(self.bob, "get", twice).status_code == 400
        theirs = self.save_as(self.charlie, "B's", org="org-b")
        both = f"{url}?c={self.saved.code}&c={theirs.code}"
        assert self.send(self.bob, "get", both).status_code == 404

    def test_members_read_the_sharing_policy_and_admins_set_it(self) -> None:
        url = f"{BASE}share-policy/"
        assert self.send(self.bob, "get", url).json() == {"public_links": True}
        assert self.send(self.dave, "put", url, {"public_links": False}).status_code == 403
        response = self.send(self.alice, "put", url, {"public_links": False})
        assert response.json() == {"public_links": False}
        assert not public_links_allowed(tenant=tenant_for(self.alice, "org-a"))
        assert "links_off" in self.actions()
        # A link cannot be made now, as on the page.
        share = self.send(self.alice, "post", self.one(self.saved.code, "share-links/"), {})
        assert share.status_code == 400
        bad = self.send(self.alice, "put", url, {"public_links": "no"})
        assert bad.json() == {"errors": {"public_links": ["Expected true or false."]}}
        assert self.send(self.charlie, "get", url).status_code == 404
