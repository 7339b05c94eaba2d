"""The configurator's catalog rows kept in each process under the catalog version
(sizing_site.configurator.rows): a later page reads neither the model, its weights nor the
card again; an edit shows at once; and an organisation's own row, once read for one of its
members, is still unknown to everyone else."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.models import LLMModel
from tests.configurator.test_views import GLM_AIR, GlmOnA100

CATALOG_TABLES = ("catalog_llmmodel", "catalog_modelweights", "catalog_accelerator")


class RowsKeptUnderTheCatalogVersion(GlmOnA100):
    def url(self, model: str = "glm-4-5-air", card: str = "nvidia-a100-80gb-pcie") -> str:
        return reverse("configurator:configure", args=[model, card]) + "?quant=Q4_K_M&ctx=8192"

    def catalog_reads(self, url: str, status: int = 200) -> list[str]:
        with CaptureQueriesContext(connection) as ctx:
            assert self.client.get(url).status_code == status
        return [
            q["sql"] for q in ctx.captured_queries if any(t in q["sql"] for t in CATALOG_TABLES)
        ]

    def test_a_second_page_of_the_pair_reads_no_catalog_row(self) -> None:
        self.client.force_login(self.bob)
        first = self.catalog_reads(self.url())
        # the model, its weights and the card, besides the sizing's own catalog reads
        assert sum("catalog_llmmodel" in sql for sql in first) >= 1
        assert self.catalog_reads(self.url()) == []
        other = self.url() + "&seqs=2"  # another setup of the same pair: the same rows
        assert self.catalog_reads(other) == []

    def test_an_edit_shows_on_the_next_page(self) -> None:
        self.client.force_login(self.bob)
        assert "GLM-4.5-Air" in self.client.get(self.url()).content.decode()
        self.model.name = "GLM-4.5-Air (renamed)"
        self.model.save()  # a new catalog version (catalog.signals)
        assert "GLM-4.5-Air (renamed)" in self.client.get(self.url()).content.decode()

    def test_an_own_row_read_for_its_organisation_stays_unknown_to_others(self) -> None:
        LLMModel.all_orgs.create(
            name="Private GLM",
            slug="private-glm",
            hf_repo="zai-org/GLM-4.5-Air",
            config=GLM_AIR,
            organization=self.org_a,
        )
        own = self.url(model="private-glm")
        self.client.force_login(self.alice)  # admin of org A: its own model
        assert self.client.get(own).status_code == 200
        assert self.client.get(own).status_code == 200  # from this process's copy
        self.client.force_login(self.charlie)  # org B only: the same slug is unknown
        assert self.client.get(own).status_code == 404
        self.client.force_login(self.alice)
        assert self.client.get(own).status_code == 200
