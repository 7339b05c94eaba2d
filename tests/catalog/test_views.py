"""Catalog pages: behind login, under the language prefix, flat query counts."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator, LLMModel, ModelWeights
from tests.cast import CastTestCase
from tests.catalog.ggufs import write_gguf


def _add_rows(n: int) -> None:
    start = LLMModel.objects.count()
    for i in range(start, start + n):
        model = LLMModel.objects.create(
            name=f"Model {i}",
            slug=f"model-{i}",
            family=f"Family {i % 3}",
            publisher="P",
            params_total=10**9,
            params_active=10**9,
        )
        ModelWeights.objects.create(model=model, format="gguf", quant="Q4_K_M", file_bytes=10**9)
        ModelWeights.objects.create(
            model=model, format="hf", quant="bf16", computed_bytes=2 * 10**9
        )
        Accelerator.objects.create(vendor="V", name=f"Card {i}", slug=f"card-{i}", memory_gb=i)


class CatalogPages(CastTestCase):
    def setUp(self) -> None:
        # A request under /de/ activates German for the thread; start each test in English.
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def test_pages_require_login(self) -> None:
        _add_rows(1)
        self.client.logout()
        for url in (
            reverse("catalog:model-list"),
            reverse("catalog:model-detail", args=["model-0"]),
            reverse("catalog:accelerator-list"),
            reverse("catalog:accelerator-detail", args=["card-0"]),
        ):
            response = self.client.get(url)
            assert response.status_code == 302, url
            assert "/accounts/login/" in response["Location"]

    def test_urls_live_under_the_language_prefix(self) -> None:
        with translation.override("it"):
            assert reverse("catalog:model-list") == "/it/models/"
            assert reverse("catalog:accelerator-detail", args=["x"]) == "/it/accelerators/x/"

    def _queries(self, url: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert self.client.get(url).status_code == 200
        return len(ctx.captured_queries)

    def test_list_page_query_counts_stay_flat_as_rows_grow(self) -> None:
        for name in ("catalog:model-list", "catalog:accelerator-list"):
            _add_rows(5)
            small = self._queries(reverse(name))
            _add_rows(45)
            assert self._queries(reverse(name)) == small, name

    def test_model_detail_query_count_does_not_grow_with_weights(self) -> None:
        _add_rows(1)
        url = reverse("catalog:model-detail", args=["model-0"])
        few = self._queries(url)
        model = LLMModel.objects.get(slug="model-0")
        for quant in ("Q8_0", "Q6_K", "Q5_K_M", "IQ4_XS"):
            ModelWeights.objects.create(model=model, format="gguf", quant=quant)
        assert self._queries(url) == few

    def test_lists_paginate_at_50(self) -> None:
        _add_rows(55)
        page1 = self.client.get(reverse("catalog:accelerator-list"))
        assert len(page1.context["page"].object_list) == 50
        page2 = self.client.get(reverse("catalog:accelerator-list"), {"page": 2})
        assert len(page2.context["page"].object_list) == 5

    def test_filters_narrow_the_lists(self) -> None:
        _add_rows(6)
        models = self.client.get(reverse("catalog:model-list"), {"family": "Family 1"})
        assert {m.family for m in models.context["page"]} == {"Family 1"}
        cards = self.client.get(
            reverse("catalog:accelerator-list"), {"memory_min_gb": "4", "q": "Card"}
        )
        assert {a.slug for a in cards.context["page"]} == {"card-4", "card-5"}

    def test_model_detail_shows_the_provenance_record(self) -> None:
        LLMModel.objects.create(
            name="Prov",
            slug="prov",
            publisher="Org",
            country="FR",
            hf_repo="org/prov",
            training_compute_flop=1.2e24,
            sources={"release_date": "https://example.org/card"},
        )
        body = self.client.get(reverse("catalog:model-detail", args=["prov"])).content.decode()
        for text in (
            "Org",
            "FR",
            "https://huggingface.co/org/prov",
            "10<sup>24</sup>",
            "https://example.org/card",
            "Last updated",
        ):
            assert text in body

    def test_numbers_are_localised(self) -> None:
        Accelerator.objects.create(vendor="V", name="Big", slug="big", bandwidth_gbps=3352.5)
        body = self.client.get("/de/accelerators/big/").content.decode()
        assert "3.352,5" in body

    def test_an_unknown_slug_is_404(self) -> None:
        assert self.client.get(reverse("catalog:model-detail", args=["nope"])).status_code == 404


class ImportPages(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def test_the_upload_pages_are_for_staff_only(self) -> None:
        self.client.force_login(self.alice)  # an org admin, but not staff
        for name in ("catalog:gguf-upload", "catalog:config-import"):
            assert self.client.get(reverse(name)).status_code == 302

    def test_a_header_only_upload_records_the_size_the_browser_reported(self) -> None:
        staff = User.objects.create_user("s", "s@example.invalid", "pw-s-12345", is_staff=True)
        self.client.force_login(staff)
        LLMModel.objects.create(name="Tiny Llama", slug="tiny-llama")
        with tempfile.TemporaryDirectory() as tmp:
            data = write_gguf(Path(tmp) / "tiny.gguf", file_type=7).read_bytes()
        part = SimpleUploadedFile("tiny.gguf", data[:4096])
        response = self.client.post(
            reverse("catalog:gguf-upload"),
            {"file": part, "model": "tiny-llama", "header_only": "on", "file_size": len(data)},
            HTTP_HX_REQUEST="true",
        )
        assert response.status_code == 200, response.content
        assert ModelWeights.objects.get().file_bytes == len(data)
        assert 'id="gguf-result"' in response.content.decode()
        assert "<html" not in response.content.decode()

    def test_a_bad_upload_shows_the_error_and_writes_nothing(self) -> None:
        staff = User.objects.create_user("s", "s@example.invalid", "pw-s-12345", is_staff=True)
        self.client.force_login(staff)
        response = self.client.post(
            reverse("catalog:gguf-upload"), {"file": SimpleUploadedFile("a.gguf", b"text")}
        )
        assert response.status_code == 400
        assert "not a GGUF file" in response.content.decode()
        assert ModelWeights.objects.count() == 0

    def test_a_pasted_config_creates_a_model(self) -> None:
        staff = User.objects.create_user("s", "s@example.invalid", "pw-s-12345", is_staff=True)
        self.client.force_login(staff)
        config = (
            '{"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, '
            '"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512, '
            '"vocab_size": 1000}'
        )
        response = self.client.post(
            reverse("catalog:config-import"), {"text": config, "hf_repo": "me/tiny"}
        )
        assert response.status_code == 200, response.content
        assert LLMModel.objects.get().params_total
