"""The configurator's cached fragments and reads (the form's HTML, the page scope, the
curated cards, the support matrix): another query, another language or a catalog edit is
never served a stale one."""

from __future__ import annotations

import re

from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator
from sizing_site.configurator import rows, selectors
from tests.configurator.test_views import GlmOnA100


class FragmentCache(GlmOnA100):
    def setUp(self) -> None:
        self.client.force_login(self.bob)

    def url(self, lang: str = "en") -> str:
        with translation.override(lang):
            return reverse("configurator:configure", args=[self.model.slug, self.card.slug])

    def form_html(self, lang: str = "en", **params: str) -> str:
        body = self.client.get(self.url(lang), params).content.decode()
        found = re.search(r'<form class="card cfg-form".*?</form>', body, re.S)
        assert found is not None
        return found.group(0)

    def test_another_query_gets_its_own_form(self) -> None:
        first = self.form_html(ctx="4096", quant="Q4_K_M")
        second = self.form_html(ctx="16384", quant="Q8_0")
        assert 'value="4096"' in first and '<option value="Q4_K_M" selected>' in first
        assert 'value="16384"' in second and '<option value="Q8_0" selected>' in second
        assert 'value="4096"' not in second

    def test_an_error_is_not_served_to_a_valid_query_nor_the_other_way(self) -> None:
        assert "errorlist" not in self.form_html(gpus="2")
        bad = self.form_html(gpus="0")
        assert 'id="err-gpus"></span>' not in bad
        assert 'id="err-gpus"></span>' in self.form_html(gpus="2")

    def test_each_language_gets_its_own_form(self) -> None:
        english = self.form_html("en", ctx="4096")
        german = self.form_html("de", ctx="4096")
        assert "Context (tokens)" in english and "Context (tokens)" not in german
        assert 'action="/de/models/' in german

    def test_a_catalog_edit_shows_the_quant_sized_after_it(self) -> None:
        before = self.client.get(self.url(), {"ctx": "8192"})
        assert before.context["setup"].quant == "Q5_K_M"
        assert '<option value="" selected>Best that fits (Q5_K_M)' in before.content.decode()
        # A smaller card (an edit: a new catalog version): a more compressed quant fits.
        Accelerator.objects.filter(pk=self.card.pk).update(memory_gb=64, memory_gib=64)
        self.card.refresh_from_db()
        self.card.save()  # the admin's save: the signal starts a new catalog version
        after = self.client.get(self.url(), {"ctx": "8192"})
        quant = after.context["setup"].quant
        assert quant != "Q5_K_M"
        body = after.content.decode()
        assert f'<option value="" selected>Best that fits ({quant})' in body
        assert "Best that fits (Q5_K_M)" not in body

    def test_a_catalog_edit_changes_the_page_scope_and_the_curated_cards(self) -> None:
        scope = selectors.page_scope(model=self.model, accelerator=self.card)
        assert scope.sizeable_card and scope.engines
        assert [c.slug for c in rows.curated_accelerators()] == [self.card.slug]
        self.card.curated = False
        self.card.bandwidth_gbps = None
        self.card.save()
        assert rows.curated_accelerators() == []
        assert not selectors.page_scope(model=self.model, accelerator=self.card).sizeable_card
