"""The configurator's price sections (answer panel, recommendations, offers, rent or buy,
FAQ) and the card's offer rows, cached under the catalog and price versions: a price
change or a catalog edit is seen on the next request, the page's query count stays flat
for a member of an organization with its own offers and saved work, and what is per
visitor (the save form, the org switcher) is never served from another visitor's page."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from pricing.fetchers.base import FetchedOffer
from pricing.models import CloudOffer
from pricing.services import offers_rematch, offers_upsert, org_feed_save
from pricing.versions import price_version
from sizing_site.reports.models import SavedConfiguration
from tests.configurator.test_answer import PanelCase, Q
from tests.configurator.test_offer_table import offers_table, row


def offer_queries(ctx: CaptureQueriesContext) -> int:
    return sum("pricing_cloudoffer" in q["sql"] for q in ctx.captured_queries)


def faq_question(body: str) -> str:
    found = re.search(
        r'<section class="card faq" id="faq">\s*<h2>[^<]*</h2>\s*<h3>(.*?)</h3>', body
    )
    assert found is not None
    return found.group(1)


class PriceVersion(PanelCase):
    def test_an_offer_save_and_delete_start_a_new_version_now_and_at_commit(self) -> None:
        first = price_version()
        with self.captureOnCommitCallbacks(execute=True):
            offer = self.offer("acme-1", "2.00")
        assert price_version() == first + 2  # at the save, and after its commit
        with self.captureOnCommitCallbacks(execute=True):
            offer.delete()
        assert price_version() == first + 4

    def test_an_upsert_of_many_offers_bumps_once(self) -> None:
        source = org_feed_save(organization=self.org_a, provider=self.acme, content="x")
        first = price_version()
        now = datetime(2026, 12, 1, tzinfo=UTC)
        fetched = [
            FetchedOffer(f"a100-{n}", "eu", "A100 80GB PCIe", n, Decimal("2.00") * n, now)
            for n in (1, 2, 4)
        ]
        with self.captureOnCommitCallbacks(execute=True):
            offers_upsert(fetched=fetched, source=source, organization=self.org_a)
        # One bump at the end of the upsert and one after its commit: 2, not 2 per offer (6).
        assert price_version() == first + 2
        assert CloudOffer.all_orgs.filter(organization=self.org_a).count() == 3

    def test_a_rematch_bumps_though_bulk_update_sends_no_signal(self) -> None:
        offer = self.offer("acme-1", "2.00", gpu_name="A100 80GB PCIe")
        CloudOffer.all_orgs.filter(pk=offer.pk).update(accelerator=None)  # no signal
        first = price_version()
        assert offers_rematch(offers=CloudOffer.all_orgs.filter(pk=offer.pk)) == 1
        assert price_version() == first + 1


class CachedPriceSections(PanelCase):
    def test_a_price_change_is_shown_on_the_next_request(self) -> None:
        offer = self.offer("acme-1", "2.00")
        # 2.00 USD/h x 8 h a day x 365/12 days = 486.67 USD a month
        assert "486.67 USD" in row(offers_table(self.get().content.decode()), "acme-1")
        assert "486.67 USD" in row(offers_table(self.get().content.decode()), "acme-1")
        offer.on_demand_per_hour = Decimal("3.00")
        offer.save()  # the admin's save: a new price version
        # 3.00 USD/h x 8 h x 365/12 days = 24 x 30.4167 = 730.00 USD
        table = offers_table(self.get().content.decode())
        assert "730.00 USD" in row(table, "acme-1") and "486.67" not in table

    def test_a_new_offer_reaches_the_answer_panel_of_a_cached_results_part(self) -> None:
        self.offer("acme-1", "2.00")
        assert "2.00 USD/h on Acme GPU" in self.results().content.decode()
        assert "2.00 USD/h on Acme GPU" in self.results().content.decode()
        self.offer("acme-2", "1.50")  # a cheaper one, created: a new price version
        body = self.results().content.decode()
        assert "1.50 USD/h on Acme GPU" in body and "2.00 USD/h" not in body

    def test_a_catalog_edit_rereads_the_offers_and_renders_the_sections_again(self) -> None:
        self.offer("acme-1", "2.00")
        assert faq_question(self.get().content.decode()).startswith("Can the A100 80GB PCIe")
        self.card.name = "A100 80GB PCIe (edited)"
        self.card.save()  # a catalog edit: a new catalog version, no price change
        with CaptureQueriesContext(connection) as ctx:
            body = self.get().content.decode()
        assert offer_queries(ctx) == 1
        assert faq_question(body).startswith("Can the A100 80GB PCIe (edited)")

    def test_the_rent_figures_of_the_query_key_their_own_fragment(self) -> None:
        self.offer("acme-1", "2.00")
        # 2.00 USD/h x 8 h x 365/12 = 486.67; x 12 h = 24 x 30.4167 = 730.00 USD
        assert "486.67 USD" in offers_table(self.get().content.decode())
        assert "730.00 USD" in offers_table(self.get(hours="12").content.decode())
        assert "486.67 USD" in offers_table(self.get().content.decode())


class MemberPageQueries(PanelCase):
    """Alice, an admin of org A, which has its own negotiated offers and saved work."""

    def setUp(self) -> None:
        super().setUp()
        self.client.force_login(self.alice)

    def org_work(self, offers: int, saved: int) -> None:
        source = org_feed_save(organization=self.org_a, provider=self.acme, content="x")
        now = datetime(2026, 12, 1, tzinfo=UTC)
        fetched = [
            FetchedOffer(f"own-{i}", "eu", "A100 80GB PCIe", 1 + i % 4, Decimal("0.50"), now)
            for i in range(offers)
        ]
        offers_upsert(fetched=fetched, source=source, organization=self.org_a)
        for i in range(saved):
            SavedConfiguration.all_tenants.create(
                organization=self.org_a,
                name=f"saved {i}",
                model_slug="glm-4-5-air",
                accelerator_slug="nvidia-a100-80gb-pcie",
                query=Q,
                estimator_request={},
                snapshot={},
                created_by=self.alice,
            )

    def queries(self) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert self.get().status_code == 200
        return len(ctx.captured_queries)

    def test_the_full_page_reads_three_queries_whatever_the_org_holds(self) -> None:
        self.offer("acme-1", "2.00")
        self.org_work(offers=1, saved=1)
        self.get()  # warm: the rows, the sizing cache, the offer rows, the fragments
        # session, user, the memberships (read once); the model, its weights and the card
        # are this process's copies under the catalog version (configurator.rows)
        assert self.queries() == 3
        self.org_work(offers=20, saved=10)  # a new price version: the offers are read again
        self.get()
        assert self.queries() == 3

    def test_the_orgs_negotiated_offers_never_reach_the_cached_table(self) -> None:
        self.offer("acme-1", "2.00")
        self.org_work(offers=2, saved=0)
        table = offers_table(self.get().content.decode())
        assert "acme-1" in table and "own-0" not in table and "own-1" not in table


class PerVisitorParts(PanelCase):
    def test_each_visitor_gets_their_own_save_form_from_the_same_cached_page(self) -> None:
        self.offer("acme-1", "2.00")
        self.client.force_login(self.alice)  # admin of org A
        alice = self.get().content.decode()
        assert "Save in Org A" in alice and "Save in Org B" not in alice
        self.client.force_login(self.charlie)  # admin of org B, the same address
        charlie = self.get().content.decode()
        assert "Save in Org B" in charlie and "Org A" not in charlie
        self.client.force_login(self.bob)  # a viewer of org A: may not save
        bob = self.get().content.decode()
        assert 'id="save-configuration"' not in bob and "Org A" in bob  # the switcher
        # The cached sections are the same for the three.
        assert offers_table(alice) == offers_table(charlie) == offers_table(bob)


class OutOfBandFormPart(PanelCase):
    def oob(self, **params: str) -> str:
        body = self.results(**params).content.decode()
        return body.split('<div id="results"', 1)[1].split('<section class="card answer', 1)[0]

    def test_setups_that_differ_in_context_or_gpus_share_it_as_rendered_fresh(self) -> None:
        first = self.oob(ctx="4096")
        assert 'hx-swap-oob="true"' in first and 'id="field-quant"' in first
        shared = self.oob(ctx="16384", gpus="2")  # read from the first one's entry
        caches["fragments"].clear()
        assert shared == self.oob(ctx="16384", gpus="2") == first

    def test_another_weights_format_or_an_error_gets_its_own(self) -> None:
        q4 = self.oob()
        assert '<option value="Q4_K_M" selected>' in q4
        q8 = self.oob(quant="Q8_0")
        assert (
            '<option value="Q8_0" selected>' in q8 and '<option value="Q4_K_M" selected>' not in q8
        )
        bad = self.oob(gpus="0")  # an error on a field the part does not otherwise show
        assert 'id="err-gpus" hx-swap-oob="true"></span>' not in bad
        assert 'id="err-gpus" hx-swap-oob="true"></span>' in self.oob(gpus="2")
