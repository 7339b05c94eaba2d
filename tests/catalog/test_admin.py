"""Admin curation: history records who changed what, validation, the review queue."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.test import TestCase
from django.urls import reverse

from catalog.models import Accelerator
from tests.cast import CastTestCase


def _form(card: Accelerator, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "vendor": card.vendor,
        "name": card.name,
        "slug": card.slug,
        "aliases": "[]",
        "memory_gb": card.memory_gb,
        "memory_kind": card.memory_kind,
        "bandwidth_gbps": card.bandwidth_gbps,
        "chips_per_board": card.chips_per_board,
        "segment": card.segment,
        "sources": '{"memory_gb": "vendor sheet"}',
        "confidence": card.confidence,
        "origin": card.origin,
        "curated": "on",
    }
    data.update(changes)
    return {k: "" if v is None else v for k, v in data.items()}


class AdminCuration(CastTestCase):
    staff: User
    card: Accelerator

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.staff = User.objects.create_superuser("curator", "c@example.invalid", "pw-cur-123")
        cls.card = Accelerator.objects.create(
            vendor="NVIDIA",
            name="Test Card",
            slug="nvidia-test-card",
            memory_gb=24,
            bandwidth_gbps=1000,
            segment="consumer",
            needs_review=True,
        )

    def setUp(self) -> None:
        self.client.force_login(self.staff)

    def test_the_change_history_records_the_user(self) -> None:
        url = reverse("admin:catalog_accelerator_change", args=[self.card.pk])
        response = self.client.post(url, _form(self.card, memory_gb=32))
        assert response.status_code == 302, response.content
        latest = self.card.history.latest()
        assert (latest.history_user, latest.memory_gb) == (self.staff, 32)
        history = self.client.get(reverse("admin:catalog_accelerator_history", args=[self.card.pk]))
        assert "curator" in history.content.decode()

    def test_the_admin_refuses_impossible_figures(self) -> None:
        url = reverse("admin:catalog_accelerator_change", args=[self.card.pk])
        response = self.client.post(url, _form(self.card, memory_gb=-1, bandwidth_gbps=30000))
        assert response.status_code == 200
        errors = response.context["adminform"].form.errors
        assert set(errors) == {"memory_gb", "bandwidth_gbps"}
        self.card.refresh_from_db()
        assert self.card.memory_gb == 24

    def test_mark_reviewed_empties_the_queue_and_is_recorded(self) -> None:
        url = reverse("admin:catalog_accelerator_changelist")
        queue = self.client.get(url, {"needs_review__exact": "1"})
        assert "Test Card" in queue.content.decode()
        self.client.post(url, {"action": "mark_reviewed", "_selected_action": [self.card.pk]})
        self.card.refresh_from_db()
        assert not self.card.needs_review
        assert self.card.history.latest().history_user == self.staff

    def test_list_filters_and_search_answer(self) -> None:
        url = reverse("admin:catalog_accelerator_changelist")
        for query in (
            {"memory": "16-32"},
            {"curated__exact": "0"},
            {"q": "Test"},
            {"o": "3"},
            {"segment__exact": "consumer"},
        ):
            assert self.client.get(url, query).status_code == 200

    def test_csv_import_shows_a_dry_run_preview_before_writing(self) -> None:
        csv_text = (
            "vendor,name,slug,memory_gb,bandwidth_gbps,memory_kind,confidence,origin,aliases,sources\n"
            "AMD,New Card,amd-new-card,32,640,discrete,low,import,[],{}\n"
        )
        url = reverse("admin:catalog_accelerator_import")
        upload = _csv_upload(csv_text)
        response = self.client.post(url, {"format": "0", "import_file": upload, "resource": "0"})
        assert response.status_code == 200
        assert "New Card" in response.content.decode()
        assert not Accelerator.objects.filter(slug="amd-new-card").exists()


def _csv_upload(text: str) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("cards.csv", text.encode(), content_type="text/csv")

    def test_history_addresses_with_a_malformed_id_are_404_and_a_real_version_opens(self) -> None:
        # Found by the hostile walk: simple-history's views queried the ids unchecked,
        # and "x" for an integer key was a ValueError (a 500).
        version = self.card.history.latest()
        base = f"/admin/catalog/accelerator/{self.card.pk}/history/"
        assert self.client.get(f"{base}{version.history_id}/").status_code == 200
        for url in (
            "/admin/catalog/accelerator/abc/history/",
            f"{base}x/",
            f"{base}%29%1D/",
            f"/admin/catalog/accelerator/x/history/{version.history_id}/",
            "/admin/fleet/inventorymachine/zz/history/1/",
            "/admin/catalog/llmmodel/1.5/history/",
        ):
            assert self.client.get(url).status_code == 404, url


class NonStaffUsers(TestCase):
    def test_cannot_open_the_catalog_admin(self) -> None:
        plain = User.objects.create_user("plain", "p@example.invalid", "pw-plain-123")
        # force_login: django-axes checks every authenticate() against a request, which
        # Client.login() does not pass.
        self.client.force_login(plain)
        response = self.client.get(reverse("admin:catalog_accelerator_changelist"))
        assert response.status_code == 302
