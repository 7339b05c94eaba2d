"""Saving, listing, the frozen report and its recompute, exports, bad input."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator
from catalog.scoping import TenantRequired
from estimator.api import estimate
from sizing_site.reports import services
from sizing_site.reports.models import ActivityEntry, SavedConfiguration, ShareLink
from sizing_site.sharing.models import SharePolicy
from sizing_site.tenancy.access import tenant_for
from tests.reports.base import QUERY, ReportsTestCase


def strip_csrf(html: bytes) -> bytes:
    return re.sub(rb'(csrfmiddlewaretoken" value="|X-CSRFToken": ")[^"]+', b"", html)


class SavingTests(ReportsTestCase):
    def post_save(self, **data: str) -> Any:
        self.client.force_login(self.dave)
        body = {
            "name": "4090 option",
            "notes": "",
            "tags": "a, b",
            "model": "glm-4-5-air",
            "accelerator": "nvidia-a100-80gb-pcie",
            "query": urlencode(QUERY),
            **data,
        }
        return self.client.post(self.url("save", "org-a"), body)

    def test_saving_freezes_the_estimators_result_and_request(self) -> None:
        response = self.post_save()
        saved = SavedConfiguration.objects.for_organization(self.org_a).get(name="4090 option")
        assert response.status_code == 302
        assert response["Location"] == self.url("report", "org-a", saved.code)
        # The stored request is exactly what the estimator ran; re-running it gives the same.
        assert saved.snapshot["result"] == estimate(saved.estimator_request)
        assert saved.estimator_request["device"]["count"] == 2
        assert saved.estimator_request["workload"]["context_tokens"] == 32768
        assert saved.snapshot["accelerator"]["bandwidth_gbps"] == 1935
        assert saved.tags == ["a", "b"]
        assert saved.created_by == self.dave

    def test_only_the_configurators_parameters_are_kept(self) -> None:
        self.post_save(query=urlencode({**QUERY, "evil": "=cmd()", "part": "analysis"}))
        saved = SavedConfiguration.objects.for_organization(self.org_a).get(name="4090 option")
        assert set(saved.query) == {"quant", "ctx", "gpus", "seqs", "kv", "engine", "offload"} | {
            "prompt",
            "output",
        }
        assert saved.query["ctx"] == "32768"

    def test_an_empty_name_is_an_error_that_keeps_the_input(self) -> None:
        response = self.post_save(name="", notes="keep me")
        assert response.status_code == 400
        assert b"keep me" in response.content
        assert b"This field is required." in response.content

    def test_a_ten_thousand_character_note_is_refused_and_kept(self) -> None:
        response = self.post_save(notes="x" * 10_000)
        assert response.status_code == 400
        assert b"x" * 10_000 in response.content
        assert b"at most 5000 characters" in response.content
        assert not SavedConfiguration.objects.for_organization(self.org_a).filter(
            name="4090 option"
        )

    def test_a_viewer_cannot_save(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.post(self.url("save", "org-a"), {"name": "x"})
        assert response.status_code == 403

    def test_saving_writes_the_activity_log(self) -> None:
        self.post_save()
        entry = ActivityEntry.objects.for_organization(self.org_a).get(actor=self.dave)
        assert (entry.actor, entry.action, entry.subject) == (self.dave, "saved", "4090 option")


class SnapshotTests(ReportsTestCase):
    def test_the_report_keeps_the_old_numbers_after_a_catalog_edit(self) -> None:
        self.client.force_login(self.bob)
        before = self.client.get(self.url("report", "org-a", self.saved.code)).content
        old = self.saved.snapshot["result"]["decode_tokens_per_s"]["estimate"]
        Accelerator.objects.filter(pk=self.card.pk).update(bandwidth_gbps=4096)
        after = self.client.get(self.url("report", "org-a", self.saved.code)).content
        # Identical apart from the per-response CSRF tokens.
        assert strip_csrf(before) == strip_csrf(after)
        assert f"{old:.1f}".encode() in after

    def test_the_recompute_view_shows_the_edit_and_its_change(self) -> None:
        self.client.force_login(self.bob)
        old = self.saved.snapshot["result"]["decode_tokens_per_s"]["estimate"]
        Accelerator.objects.filter(pk=self.card.pk).update(bandwidth_gbps=4096)
        response = self.client.get(self.url("recompute", "org-a", self.saved.code))
        assert response.status_code == 200
        rows = {row["key"]: row for row in response.context["changes"]}
        decode = rows["decode_tokens_per_s.estimate"]
        # Decode is bandwidth-bound: 1,935 -> 4,096 GB/s raises it, by under 112 %
        # (fixed per-token overheads do not scale with bandwidth).
        assert decode["old"] == old
        assert decode["new"] > old
        assert 0 < decode["change"] <= (4096 / 1935 - 1) * 100
        assert decode["change"] == (decode["new"] - old) / old * 100
        assert not rows["weights_bytes"]["changed"]
        assert b'class="changed"' in response.content
        assert "Decode, one sequence" in response.content.decode()
        # The changed catalog figure is shown by its label and localised: 1,935 -> 4,096.
        assert "<th>Bandwidth (GB/s)</th>" in response.content.decode()
        assert "4,096" in response.content.decode()
        assert response.context["catalog_changes"] == [
            {
                "key": "accelerator.bandwidth_gbps",
                "label": "Bandwidth (GB/s)",
                "old": 1935,
                "new": 4096,
            }
        ]
        # The frozen snapshot itself is untouched.
        self.saved.refresh_from_db()
        assert self.saved.snapshot["result"]["decode_tokens_per_s"]["estimate"] == old


class RenderingTests(ReportsTestCase):
    def test_the_report_renders_in_four_languages_with_localised_numbers(self) -> None:
        self.client.force_login(self.bob)
        # The memory table's total over both GPUs, in GiB with two decimals.
        total = self.saved.snapshot["result"]["total_bytes"] / 2**30
        english = f"{total:.2f}"
        labels = {"en": "Memory", "de": "Speicher", "it": "Memoria", "zh-hans": "显存"}
        for lang, label in labels.items():
            response = self.client.get(self.url("report", "org-a", self.saved.code, lang=lang))
            assert response.status_code == 200, lang
            html = response.content.decode()
            assert f'lang="{lang}"' in html
            assert f"<h2>{label}</h2>" in html, lang
            # German and Italian write a decimal comma: 12.34 GiB reads "12,34".
            expected = english.replace(".", ",") if lang in ("de", "it") else english
            assert f'<td class="num">{expected}</td>' in html, (lang, expected)

    def test_the_report_shows_the_memory_as_built_and_falls_back_to_the_vendor_gb(self) -> None:
        self.client.force_login(self.bob)
        url = self.url("report", "org-a", self.saved.code)
        # tests/configurator/test_views.py a100(): 80 GiB of HBM2e as built, 1,935 GB/s.
        line = "2 × NVIDIA A100 80GB PCIe <small>(80 GiB, 1,935 GB/s)</small>"
        assert line in self.client.get(url).content.decode()
        # A snapshot frozen before memory_gib existed (a version 1 snapshot: no version
        # key) shows the vendor's 80 GB.
        snapshot = self.saved.snapshot
        del snapshot["version"]
        snapshot["accelerator"].pop("memory_gib")
        SavedConfiguration.all_tenants.filter(pk=self.saved.pk).update(snapshot=snapshot)
        line = "2 × NVIDIA A100 80GB PCIe <small>(80 GB, 1,935 GB/s)</small>"
        assert line in self.client.get(url).content.decode()

    def test_the_shared_page_follows_the_language_in_its_address(self) -> None:
        link = services.share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        with translation.override("de"):
            url = reverse("reports:shared", args=[link.token])
        html = self.client.get(url).content.decode()
        assert url.startswith("/de/r/")
        assert "<h2>Speicher</h2>" in html


class FailClosedTests(ReportsTestCase):
    def test_every_reports_model_refuses_an_unscoped_query(self) -> None:
        for model in (SavedConfiguration, ShareLink, SharePolicy, ActivityEntry):
            with pytest.raises(TenantRequired):
                model.objects.all()
            with pytest.raises(TenantRequired):
                model.objects.for_organization(None)


class ConfiguratorSaveFormTests(ReportsTestCase):
    def configurator(self) -> str:
        with translation.override("en"):
            url = reverse("configurator:configure", args=["glm-4-5-air", "nvidia-a100-80gb-pcie"])
        return self.client.get(url + "?ctx=32768&gpus=2").content.decode()

    def test_an_editor_sees_a_save_button_per_org_they_may_save_in(self) -> None:
        self.client.force_login(self.dave)
        html = self.configurator()
        assert 'formaction="/en/o/org-a/reports/save/"' in html
        assert 'name="query" value="ctx=32768&amp;gpus=2"' in html

    def test_a_viewer_sees_no_save_form(self) -> None:
        self.client.force_login(self.bob)
        assert 'id="save-configuration"' not in self.configurator()


class ListTests(ReportsTestCase):
    def test_mine_and_all_views_and_search(self) -> None:
        self.save_as(self.dave, "Dave's option")
        self.client.force_login(self.dave)
        all_rows = self.client.get(self.url("list", "org-a")).context["rows"]
        mine = self.client.get(self.url("list", "org-a") + "?view=mine").context["rows"]
        found = self.client.get(self.url("list", "org-a") + "?q=dave").context["rows"]
        assert [r.name for r in all_rows] == ["Dave's option", "2x A100 at 32K"]
        assert [r.name for r in mine] == ["Dave's option"]
        assert [r.name for r in found] == ["Dave's option"]
        by_name = self.client.get(self.url("list", "org-a") + "?sort=name").context["rows"]
        assert [r.name for r in by_name] == ["2x A100 at 32K", "Dave's option"]

    def test_the_list_query_count_is_flat(self) -> None:
        self.client.force_login(self.bob)
        counts = []
        for total in (5, 50):
            existing = SavedConfiguration.objects.for_organization(self.org_a).count()
            for i in range(total - existing):
                SavedConfiguration.all_tenants.create(
                    organization=self.org_a,
                    name=f"copy {i}",
                    model_slug=self.saved.model_slug,
                    accelerator_slug=self.saved.accelerator_slug,
                    query=self.saved.query,
                    estimator_request=self.saved.estimator_request,
                    snapshot=self.saved.snapshot,
                    created_by=self.alice,
                )
            from django.db import connection
            from django.test.utils import CaptureQueriesContext

            with CaptureQueriesContext(connection) as ctx:
                response = self.client.get(self.url("list", "org-a"))
            assert len(response.context["rows"]) == total
            counts.append(len(ctx.captured_queries))
        assert counts[0] == counts[1], counts

    def test_compare_shows_two_snapshots_side_by_side(self) -> None:
        other = self.save_as(self.alice, "second")
        self.client.force_login(self.bob)
        url = self.url("compare", "org-a") + f"?c={self.saved.code}&c={other.code}"
        response = self.client.get(url)
        assert response.status_code == 200
        assert [r.name for r in response.context["configurations"]] == [
            "2x A100 at 32K",
            "second",
        ]
        rows = {row.label: row for row in response.context["rows"]}
        decode = self.saved.snapshot["result"]["decode_tokens_per_s"]
        assert rows["decode"].values[0] == decode
        assert "Needed per GPU" in response.content.decode()

    def test_compare_with_a_tampered_code_is_404(self) -> None:
        self.client.force_login(self.bob)
        url = self.url("compare", "org-a") + f"?c={self.saved.code}&c=not-a-uuid"
        assert self.client.get(url).status_code == 404


class EditTests(ReportsTestCase):
    def test_an_editor_renames_duplicates_and_deletes(self) -> None:
        self.client.force_login(self.dave)
        code = self.saved.code
        assert (
            self.client.post(self.url("rename", "org-a", code), {"name": "New"}).status_code == 302
        )
        response = self.client.post(self.url("duplicate", "org-a", code))
        rows = SavedConfiguration.objects.for_organization(self.org_a)
        assert sorted(rows.values_list("name", flat=True)) == ["Copy of New", "New"]
        assert self.client.post(self.url("delete", "org-a", code)).status_code == 302
        assert list(rows.values_list("name", flat=True)) == ["Copy of New"]
        assert response.status_code == 302
        actions = ActivityEntry.objects.for_organization(self.org_a).values_list(
            "action", flat=True
        )
        assert list(actions) == ["deleted", "duplicated", "renamed", "saved"]

    def test_renaming_to_an_empty_name_is_an_error(self) -> None:
        self.client.force_login(self.dave)
        response = self.client.post(self.url("rename", "org-a", self.saved.code), {"name": " "})
        assert response.status_code == 400
        assert b"This field is required." in response.content

    def test_a_tampered_code_is_404(self) -> None:
        self.client.force_login(self.bob)
        url = self.url("report", "org-a", self.saved.code).replace(
            str(self.saved.code)[:8], "0" * 8
        )
        assert self.client.get(url).status_code == 404


class ExportTests(ReportsTestCase):
    def test_json_export_carries_the_request_and_the_snapshot(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(self.url("export-json", "org-a", self.saved.code))
        data = json.loads(response.content)
        assert data["estimator_request"] == self.saved.estimator_request
        assert data["snapshot"]["result"] == self.saved.snapshot["result"]

    def test_csv_export_lists_inputs_and_figures(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(self.url("export-csv", "org-a", self.saved.code))
        text = response.content.decode()
        total = self.saved.snapshot["result"]["total_bytes"]
        assert "input.ctx,32768" in text
        assert f"total_bytes,{total}" in text
        assert response["Content-Type"].startswith("text/csv")


class PageTests(ReportsTestCase):
    def test_the_list_answers_htmx_with_its_rows_partial(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(self.url("list", "org-a") + "?q=a100", HTTP_HX_REQUEST="true")
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="rows">')
        assert "2x A100 at 32K" in html

    def test_the_report_loads_a_print_stylesheet_that_hides_navigation_and_forms(self) -> None:
        self.client.force_login(self.alice)
        html = self.client.get(self.url("report", "org-a", self.saved.code)).content.decode()
        assert "reports/report.css" in html
        css = (settings.BASE_DIR / "static" / "reports" / "report.css").read_text()
        assert "@media print" in css
        assert ".topbar, nav, form" in css

    def test_the_org_navigation_links_the_saved_configurations(self) -> None:
        self.client.force_login(self.bob)
        html = self.client.get(self.url("list", "org-a")).content.decode()
        assert f'href="{self.url("list", "org-a")}"' in html
