"""The saved reports' texts: the "Saved by … on <date>" line without a doubled full stop in
four languages, delete with an "are you sure" step and an undo, the recompute table in
the report's units, and the admin's plural names."""

from __future__ import annotations

import re

from django.apps import apps
from django.contrib.auth.models import User
from django.utils import formats, translation

from estimator.units import GIB
from sizing_site.reports.models import ActivityEntry, SavedConfiguration, ShareLink
from sizing_site.reports.services import share_link_create
from sizing_site.tenancy.access import tenant_for
from tests.reports.base import ReportsTestCase

LANGUAGES = ("en", "de", "it", "zh-hans")


class SavedByLine(ReportsTestCase):
    def test_the_date_is_not_followed_by_a_second_full_stop_in_any_language(self) -> None:
        self.client.force_login(self.bob)
        for lang in LANGUAGES:
            html = self.client.get(self.url("report", "org-a", self.saved.code, lang=lang))
            body = html.content.decode()
            with translation.override(lang):
                when = formats.date_format(self.saved.created.astimezone(), "DATETIME_FORMAT")
            # The paragraph holds the formatted date as its last words: nothing (no ".")
            # is added after it, so a format that ends in "p.m." reads "p.m." once.
            line = re.search(r'<p class="muted">(.*?)\n', body)
            assert line, lang
            assert line.group(1).rstrip().endswith(when), (lang, line.group(1), when)
            assert ".." not in line.group(1), lang
            assert "alice" in line.group(1), lang

    def test_the_shared_page_ends_with_the_date_too(self) -> None:
        link = share_link_create(
            tenant=tenant_for(self.alice, "org-a"),
            user=self.alice,
            configuration=self.saved,
            expires_at=None,
        )
        with translation.override("en"):
            when = formats.date_format(self.saved.created.astimezone(), "DATETIME_FORMAT")
        body = self.client.get(self.url("shared", link.token)).content.decode()
        assert f"on {when}</p>" in body
        assert f"{when}." not in body


class DeleteAsksFirst(ReportsTestCase):
    def test_get_shows_a_confirmation_and_deletes_nothing(self) -> None:
        self.client.force_login(self.dave)  # an editor
        url = self.url("delete", "org-a", self.saved.code)
        response = self.client.get(url)
        assert response.status_code == 200
        body = response.content.decode()
        assert "Delete “2x A100 at 32K”?" in body
        # The confirmation posts to the same address; Cancel leads back to the report.
        assert f'<form method="post" action="{url}"' in body
        assert self.url("report", "org-a", self.saved.code) in body
        assert SavedConfiguration.objects.for_organization(self.org_a).count() == 1
        # The report's Delete is a link to that page, not a form that deletes at once.
        report = self.client.get(self.url("report", "org-a", self.saved.code)).content.decode()
        assert f'href="{url}"' in report
        assert f'action="{url}"' not in report

    def test_the_confirmation_says_its_share_links_stop_working(self) -> None:
        for _ in range(2):
            share_link_create(
                tenant=tenant_for(self.alice, "org-a"),
                user=self.alice,
                configuration=self.saved,
                expires_at=None,
            )
        self.client.force_login(self.dave)
        body = self.client.get(self.url("delete", "org-a", self.saved.code)).content.decode()
        assert "Its 2 share links stop working for good." in body

    def test_post_deletes_and_the_list_offers_an_undo_that_restores_it(self) -> None:
        self.client.force_login(self.dave)
        before = SavedConfiguration.objects.for_organization(self.org_a).get()
        created, code = before.created, before.code
        response = self.client.post(self.url("delete", "org-a", code))
        assert response.status_code == 302
        assert response["Location"] == self.url("list", "org-a")
        rows = SavedConfiguration.objects.for_organization(self.org_a)
        assert rows.count() == 0
        listing = self.client.get(self.url("list", "org-a")).content.decode()
        assert "You deleted “2x A100 at 32K”." in listing
        assert f'action="{self.url("restore", "org-a")}"' in listing

        restored = self.client.post(self.url("restore", "org-a"))
        assert restored.status_code == 302
        again = rows.get()
        # The same code (old bookmarks work), author, date and frozen figures.
        assert again.code == code
        assert again.created == created
        assert again.created_by == self.alice
        assert again.snapshot == before.snapshot
        assert again.estimator_request == before.estimator_request
        assert restored["Location"] == self.url("report", "org-a", code)
        actions = ActivityEntry.objects.for_organization(self.org_a).values_list(
            "action", flat=True
        )
        assert list(actions)[:2] == ["restored", "deleted"]
        # Undone once: the offer is gone, a second undo restores nothing.
        assert "You deleted" not in self.client.get(self.url("list", "org-a")).content.decode()
        self.client.post(self.url("restore", "org-a"))
        assert rows.count() == 1

    def test_a_viewer_can_neither_see_the_confirmation_nor_delete(self) -> None:
        self.client.force_login(self.bob)  # a viewer
        url = self.url("delete", "org-a", self.saved.code)
        assert self.client.get(url).status_code == 403
        assert self.client.post(url).status_code == 403
        assert SavedConfiguration.objects.for_organization(self.org_a).count() == 1

    def test_an_undo_is_not_offered_in_another_organization(self) -> None:
        # Charlie deletes in org B; the undo is kept for org B only.
        other = self.save_as(self.charlie, "B's", org="org-b")
        self.client.force_login(self.charlie)
        self.client.post(self.url("delete", "org-b", other.code))
        # Charlie is not in org A: the restore there is a 404, and org B's row stays gone
        # until restored in org B.
        assert self.client.post(self.url("restore", "org-a")).status_code == 404
        assert SavedConfiguration.objects.for_organization(self.org_b).count() == 0
        assert self.client.post(self.url("restore", "org-b")).status_code == 302
        assert SavedConfiguration.objects.for_organization(self.org_b).count() == 1


class RecomputeFormatting(ReportsTestCase):
    def test_the_recompute_table_shows_units_not_raw_figures(self) -> None:
        self.client.force_login(self.bob)
        with translation.override("en"):
            body = self.client.get(self.url("recompute", "org-a", self.saved.code)).content
        text = body.decode()
        result = self.saved.snapshot["result"]
        # Bytes as GiB with two decimals: per_device_bytes / 2**30.
        per_device = result["per_device_bytes"] / GIB
        assert f'<td class="num">{per_device:,.2f} GiB</td>' in text
        weights = result["weights_bytes"] / GIB
        assert f"{weights:,.2f} GiB" in text
        # The memory share as a percentage with one decimal: 0.92 -> "92.0 %".
        share = result["fit"]["utilisation"] * 100
        assert f"{share:,.1f} %" in text
        # Speeds with their unit, one decimal.
        decode = result["decode_tokens_per_s"]["estimate"]
        assert f"{decode:,.1f} tok/s" in text
        # No raw byte count with two decimals ("70444997296.00") and no bare share.
        assert not re.search(r">\d{7,}\.\d\d<", text)
        assert f">{result['fit']['utilisation']:.2f}<" not in text
        assert "Needed per GPU (bytes)" not in text

    def test_a_change_is_signed(self) -> None:
        from catalog.models import Accelerator

        self.client.force_login(self.bob)
        old = self.saved.snapshot["result"]["decode_tokens_per_s"]["estimate"]
        Accelerator.objects.filter(pk=self.card.pk).update(bandwidth_gbps=4096)
        response = self.client.get(self.url("recompute", "org-a", self.saved.code))
        rows = {row["key"]: row for row in response.context["changes"]}
        change = rows["decode_tokens_per_s.estimate"]["change"]
        assert change == (rows["decode_tokens_per_s.estimate"]["new"] - old) / old * 100
        assert f"<strong>+{change:,.1f} %</strong>" in response.content.decode()


class AdminNames(ReportsTestCase):
    def test_share_policies_is_spelled_right(self) -> None:
        from sizing_site.sharing.models import SharePolicy

        assert str(SharePolicy._meta.verbose_name_plural) == "share policies"
        admin = User.objects.create_superuser("root", "root@example.org", "pw-root-123")
        self.client.force_login(admin)
        body = self.client.get("/admin/").content.decode()
        assert "Share policies" in body
        assert "policys" not in body.lower()

    def test_no_model_forms_a_plural_like_policys(self) -> None:
        # A noun in consonant + "y" takes "ies"; a plural made by Django's default
        # (verbose_name + "s") gives "policys". Every model of the project, admin or not.
        wrong = []
        for model in apps.get_models():
            plural = str(model._meta.verbose_name_plural)
            if re.search(r"[^aeiou]ys$", plural):
                wrong.append(f"{model._meta.label}: {plural}")
        assert wrong == []
        assert ShareLink._meta.verbose_name_plural == "share links"
