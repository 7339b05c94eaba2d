"""The configurator's cloud price table: per offer the billing
model (on-demand, spot, reserved), the month's rent at the hours a day the visitor chooses,
a link to the provider's page; key columns first, no duplicate column, a scroll box."""

from __future__ import annotations

import re
from decimal import Decimal

from django.db import connection
from django.test.utils import CaptureQueriesContext

from pricing.models import BillingModel, CloudProvider, Granularity
from tests.configurator.test_answer import PanelCase


def offers_table(body: str) -> str:
    section = body.split('<section class="card" id="offers">')[1].split("</section>")[0]
    return section


def headers(table: str) -> list[str]:
    head = table.split("<thead>")[1].split("</thead>")[0]
    return [
        " ".join(re.sub(r"<[^>]+>", " ", h).split())
        for h in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)
    ]


def row(table: str, sku: str) -> str:
    for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        if sku in tr:
            return " ".join(re.sub(r"<[^>]+>", " ", tr).split())
    raise AssertionError(sku)


class OfferTable(PanelCase):
    def test_billing_model_spot_and_reserved(self) -> None:
        self.offer(
            "acme-1", "2.00", spot_per_hour=Decimal("0.90"), billing_granularity=Granularity.SECOND
        )
        contract = CloudProvider.objects.create(
            name="Big Iron", slug="big-iron", billing_model=BillingModel.CONTRACT
        )
        self.offer("reserved-1", "2.40", provider=contract)
        table = offers_table(self.get().content.decode())
        acme = row(table, "acme-1")
        assert "On-demand, billed per second Spot: 0.90 USD/h GPU cloud (per GPU)" in acme
        reserved = row(table, "reserved-1")
        assert "Reserved (negotiated contract)" in reserved and "On-demand" not in reserved
        assert "Spot" not in reserved

    def test_the_months_rent_at_the_chosen_hours_worked_example(self) -> None:
        self.offer("acme-1", "2.00")
        # 2.00 USD/h x 8 h (the default) x 365/12 days = 16 x 30.4167 = 486.67 USD
        table = offers_table(self.get().content.decode())
        assert "Per month at 8 h a day" in headers(table)
        assert "486.67 USD" in row(table, "acme-1")
        # 2.00 USD/h x 10 h x 365/12 days = 20 x 30.4167 = 608.33 USD
        table = offers_table(self.get(hours="10").content.decode())
        assert "Per month at 10 h a day" in headers(table)
        assert "608.33 USD" in row(table, "acme-1") and "486.67" not in table
        rows = self.get(hours="10").context["offers"]
        assert abs(rows[0].monthly - 2.00 * 10 * 365 / 12) < 1e-9

    def test_the_provider_links_to_its_page(self) -> None:
        self.offer("acme-1", "2.00")
        bare = CloudProvider.objects.create(name="No Site", slug="no-site")
        self.offer("bare-1", "2.10", provider=bare)
        table = offers_table(self.get().content.decode())
        assert (
            '<a href="https://acme.example/pricing" rel="external noopener noreferrer">Acme GPU</a>'
            in table
        )
        assert "No Site" in table and 'href=""' not in table  # no website: no link

    def test_no_duplicate_columns_and_key_columns_first(self) -> None:
        self.offer("acme-1", "2.00")
        one = headers(offers_table(self.get(seqs="1").content.decode()))
        assert len(one) == len(set(one))
        # one sequence: the price per 1M at one sequence and at all of them are the same
        # figure, so one column
        assert [h for h in one if h.startswith("Per 1M")] == ["Per 1M output tokens"]
        assert one[:4] == [
            "Provider and instance",
            "Per 1M output tokens",
            "Per hour",
            "Per month at 8 h a day",
        ]
        four = headers(offers_table(self.get(seqs="4").content.decode()))
        assert len(four) == len(set(four))
        assert [h for h in four if h.startswith("Per 1M")] == [
            "Per 1M output tokens, one sequence",
            "Per 1M output tokens at 4 sequences",
        ]
        body = self.get(seqs="4").content.decode()
        cells = row(offers_table(body), "acme-1")
        result = self.get(seqs="4").context["result"]
        # 2.00 / (tok/s x 3,600) x 1e6 at one sequence and at the four together
        one_seq = 2.00 / (result.decode_tokens_per_s.estimate * 3600) * 1e6
        all_seq = 2.00 / (result.aggregate_decode_tokens_per_s.estimate * 3600) * 1e6
        assert f"{one_seq:.2f} USD {all_seq:.2f} USD 2.00 USD" in cells

    def test_the_table_scrolls_in_its_own_box(self) -> None:
        self.offer("acme-1", "2.00")
        section = offers_table(self.get().content.decode())
        assert re.search(r'<div class="table-scroll"[^>]*><table class="table offers"', section)

    def test_the_analysis_query_count_stays_flat_as_offers_grow(self) -> None:
        self.offer("acme-0", "1.00")

        def queries() -> int:
            with CaptureQueriesContext(connection) as ctx:
                response = self.client.get(
                    self.url(), {**self.query(), "part": "analysis"}, HTTP_HX_REQUEST="true"
                )
                assert response.status_code == 200
            return len(ctx.captured_queries)

        queries()  # warm the sizing cache and the card's offer rows
        few = queries()
        for i in range(1, 30):  # each save starts a new price version
            self.offer(
                f"acme-{i}", f"{1 + i / 10:.2f}", gpus=1 + i % 8, spot_per_hour=Decimal("0.5")
            )
        assert queries() == few + 1  # the 30 offers, one query, then kept
        assert queries() == few

    def query(self) -> dict[str, str]:
        return {"quant": "Q4_K_M", "ctx": "8192"}
