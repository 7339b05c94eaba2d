"""The fleet page's figures: for each machine, the models that fit on all its cards, with
the configurator's own figures for the same model, card, GPU count and quant; the
filters; the API's answer; and a query count that does not grow with the machines."""

from __future__ import annotations

from dataclasses import replace

from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog import hardware
from catalog.sizing import Setup
from catalog.sizing.candidates import explore_models, organization_keys, quant_ladder
from sizing_site.configurator.selectors import configuration_results
from sizing_site.fleet import selectors
from sizing_site.fleet.models import InventoryMachine
from tests.fleet.base import LADDER, FleetCase

CTX = 32768
CTX_PARAM = str(CTX)


class Figures(FleetCase):
    def table(self, machine: InventoryMachine, q: str = "") -> selectors.MachineTable:
        machines = list(
            InventoryMachine.objects.for_organization(machine.organization)
            .select_related("accelerator")
            .filter(pk=machine.pk)
        )
        quants = [name for name, _bits, _rank in LADDER]
        (table,) = selectors.fleet_tables(machines=machines, quants=quants, context_tokens=CTX, q=q)
        return table

    def test_the_figures_are_the_configurators_for_the_same_setup(self) -> None:
        table = self.table(self.machine)
        (row,) = table.rows
        fit = row.fit
        choice = hardware.support_matrix().default_for(self.card)
        assert choice is not None
        assert (table.engine, fit.engine, fit.gpus) == ("llama.cpp", "llama.cpp", 2)
        assert row.model == self.model
        # GLM-4.5-Air (106B) on 2 x 80 GB: Q8_0 is the least compressed ladder quant that fits.
        assert fit.quant == "Q8_0"
        setup = Setup(
            quant=fit.quant,
            context_tokens=CTX,
            gpus=2,
            engine=choice.engine,
            backend=choice.backend,
        )
        one = configuration_results(model=self.model, accelerator=self.card, setup=setup)
        assert one.sized.fits
        assert fit.verdict == one.sized.result.fit.verdict
        assert fit.max_context_tokens == one.sized.result.max_context_tokens
        assert fit.max_concurrent_sequences == one.sized.result.max_concurrent_sequences
        assert fit.max_concurrent_sequences >= 1
        busy = configuration_results(
            model=self.model,
            accelerator=self.card,
            setup=replace(setup, sequences=fit.max_concurrent_sequences),
        )
        assert fit.decode_tokens_per_s == busy.sized.result.decode_tokens_per_s
        assert fit.aggregate_decode_tokens_per_s == (
            busy.sized.result.aggregate_decode_tokens_per_s.estimate
        )
        # The least compressed that fits: every rung above it does not fit (configurator).
        for quant in ("BF16",):
            above = configuration_results(
                model=self.model, accelerator=self.card, setup=replace(setup, quant=quant)
            )
            assert not above.sized.fits, quant

    def test_one_card_takes_a_more_compressed_quant_and_the_page_shows_it(self) -> None:
        one_card = self.table(self.machine_b)
        assert [r.fit.quant for r in one_card.rows] == ["Q4_K_M"]
        self.client.force_login(self.bob)
        page = self.client.get(self.url("fleet"), {"ctx": CTX_PARAM})
        assert page.status_code == 200
        (shown,) = page.context["tables"]
        assert shown.rows[0].fit == self.table(self.machine).rows[0].fit
        text = page.content.decode()
        assert "GLM-4.5-Air" in text and "Q8_0" in text
        fit = shown.rows[0].fit
        assert f"{fit.max_context_tokens:,}" in text  # localised with grouping (English)

    def test_filters_search_quality_and_context(self) -> None:
        assert self.table(self.machine, q="glm").rows
        nothing = self.table(self.machine, q="llama")
        assert (nothing.rows, nothing.candidates) == ([], 0)
        self.client.force_login(self.bob)
        # A quality floor above every fitting quant (BF16 only): nothing fits.
        page = self.client.get(self.url("fleet"), {"ctx": CTX_PARAM, "quality": "BF16"})
        assert page.status_code == 200 and page.context["tables"][0].rows == []
        bad = self.client.get(self.url("fleet"), {"ctx": "12"})
        assert bad.status_code == 400 and "ctx" in bad.context["form"].errors
        # A context beyond the model's published one: the model is left out.
        self.model.max_context_tokens = 16384
        self.model.save()
        assert self.table(self.machine).rows == []

    def test_the_api_gives_the_pages_figures(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(self.api("fleet"), {"ctx": CTX_PARAM, "quality": "Q4_K_M"})
        assert response.status_code == 200
        body = response.json()
        assert (body["organization"], body["context_tokens"]) == ("org-a", CTX)
        assert body["quants"] == ["BF16", "Q8_0", "Q6_K", "Q4_K_M"]
        (machine,) = body["machines"]
        assert machine["code"] == str(self.machine.code)
        assert (machine["card_count"], machine["fitting"], machine["candidates"]) == (2, 1, 1)
        (model,) = machine["models"]
        fit = self.table(self.machine).rows[0].fit
        assert model["model"] == "glm-4-5-air"
        assert model["quant"] == fit.quant
        assert model["max_context_tokens"] == fit.max_context_tokens
        assert model["max_concurrent_sequences"] == fit.max_concurrent_sequences
        assert fit.decode_tokens_per_s is not None
        assert model["decode_tokens_per_s"] == {
            "estimate": fit.decode_tokens_per_s.estimate,
            "low": fit.decode_tokens_per_s.low,
            "high": fit.decode_tokens_per_s.high,
        }
        bad = self.client.get(self.api("fleet"), {"quality": "Q1_ZZ"})
        assert bad.status_code == 400 and "quality" in bad.json()["errors"]


class QueryCount(FleetCase):
    def count(self) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = self.client.get(self.url("fleet"), {"ctx": CTX_PARAM})
        assert response.status_code == 200
        return len(queries)

    def test_the_query_count_is_the_same_for_one_and_five_machines(self) -> None:
        self.client.force_login(self.alice)
        assert explore_models() == [self.model]
        quant_ladder()  # kept per process under the catalog version: any page reads it once
        organization_keys([self.org_a])  # who owns rows: kept per process the same way
        one = self.count()
        for cards in (1, 3, 4, 8):  # other shapes: each is sized afresh
            self.add_machine(self.alice, "org-a", f"node {cards}", cards=cards)
        five = self.count()
        assert len(self.client.get(self.url("fleet")).context["tables"]) == 5
        assert one == five


class ReviewFixes(FleetCase):
    """Found in review: a ladder out of size order, an author's account deleted, the API
    sizing every machine at once."""

    def test_the_best_quant_is_the_first_that_fits_down_a_ladder_out_of_size_order(
        self,
    ) -> None:
        # Q4_K_M (4.89 bits) sits before Q8_0 (8.5) here: on one 80 GB card GLM-4.5-Air
        # (106B) fits Q4_K_M (~65 GB of weights) but not Q8_0 (~113 GB), Q6_K (~87 GB) or
        # BF16. A search that assumes fits only grow down the ladder sees the last rung
        # (Q6_K) not fit and answers "nothing fits"; going down the ladder finds Q4_K_M.
        choice = hardware.support_matrix().default_for(self.card)
        assert choice is not None
        ladder = ["BF16", "Q4_K_M", "Q8_0", "Q6_K"]
        fit = selectors.model_on_machine(
            self.model, self.card, choice=choice, gpus=1, quants=ladder, context_tokens=CTX
        )
        assert fit is not None
        first = next(
            quant
            for quant in ladder
            if configuration_results(
                model=self.model,
                accelerator=self.card,
                setup=Setup(
                    quant=quant,
                    context_tokens=CTX,
                    gpus=1,
                    engine=choice.engine,
                    backend=choice.backend,
                ),
            ).sized.fits
        )
        assert fit.quant == first == "Q4_K_M"

    def test_a_machine_whose_author_was_deleted_stays_editable(self) -> None:
        machine = self.add_machine(self.dave, "org-a", "Dave's box", cards=1)
        self.dave.delete()
        self.client.force_login(self.alice)
        response = self.client.patch(
            self.api("inventory-machine", machine.code),
            {"card_count": 2},
            content_type="application/json",
        )
        assert response.status_code == 200, response.content
        machine.refresh_from_db()
        assert (machine.card_count, machine.created_by) == (2, None)

    def test_the_fleet_api_sizes_a_page_of_machines_at_a_time(self) -> None:
        for n in range(6):
            self.add_machine(self.alice, "org-a", f"Box {n}", cards=1)
        self.client.force_login(self.bob)
        first = self.client.get(self.api("fleet"), {"ctx": CTX_PARAM}).json()
        assert first["count"] == 7 and len(first["machines"]) == 5
        assert first["next"] is not None and first["previous"] is None
        rest = self.client.get(first["next"]).json()
        assert len(rest["machines"]) == 2
        assert self.client.get(self.api("fleet"), {"page": "9"}).status_code == 404
