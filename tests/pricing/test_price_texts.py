"""The prices page's texts: how many cards have no cloud price (from the database), stale
shown once as a badge with its date, one column per price, provenance for staff only, the
tables in their own scroll box, and a query count that stays flat as offers grow."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import formats, timezone, translation

from catalog.models import Accelerator
from pricing.models import CloudOffer, CloudProvider, PriceSource, SourceKind
from tests.cast import CastTestCase


def card(slug: str, **extra: object) -> Accelerator:
    return Accelerator.objects.create(
        vendor=str(extra.pop("vendor", "NVIDIA")),
        name=slug.upper(),
        slug=slug,
        memory_gb=80,
        bandwidth_gbps=2000,
        **extra,
    )


class PricesPageTexts(CastTestCase):
    staff: User
    priced: Accelerator
    negotiated_b: Accelerator
    unpriced_curated: Accelerator
    apple: Accelerator
    imported: list[Accelerator]
    provider: CloudProvider
    fresh: CloudOffer
    old: CloudOffer

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.staff = User.objects.create_user("sam", "sam@example.org", "pw-sam-123", is_staff=True)
        cls.priced = card("h100", curated=True)
        cls.negotiated_b = card("b200", curated=True)  # priced only in org B's feed
        cls.unpriced_curated = card("mi300x", vendor="AMD", curated=True, price_usd=15000)
        cls.apple = card(
            "mac-studio-512gb",
            vendor="Apple",
            curated=True,
            price_usd=3999,
            sources={"price_usd": "Apple specs (Mac Studio from $3,999)"},
        )
        cls.imported = [card(f"imported-{i}") for i in range(3)]
        cls.provider = CloudProvider.objects.create(
            name="Acme", slug="acme", website="https://acme.example"
        )
        now = timezone.now()
        # A live feed refreshes these two: only such a price goes stale.
        feed = PriceSource.all_orgs.create(provider=cls.provider, kind=SourceKind.FEED)
        cls.fresh = CloudOffer.all_orgs.create(
            provider=cls.provider,
            source=feed,
            sku="acme-h100x8",
            accelerator=cls.priced,
            gpu_count=8,
            on_demand_per_hour=Decimal("20.00"),
            checked_at=now - timedelta(hours=2),
            source_note="scraped from the pricing page table row 7",
        )
        cls.old = CloudOffer.all_orgs.create(
            provider=cls.provider,
            source=feed,
            sku="acme-h100x1",
            accelerator=cls.priced,
            gpu_count=1,
            on_demand_per_hour=Decimal("2.50"),
            checked_at=now - timedelta(days=40),
        )
        # Org B's negotiated price: Alice (org A) must not see it, so the B200 counts as
        # unpriced for her.
        CloudOffer.all_orgs.create(
            provider=cls.provider,
            sku="b-contract",
            accelerator=cls.negotiated_b,
            organization=cls.org_b,
            gpu_count=8,
            on_demand_per_hour=Decimal("30.00"),
            checked_at=now,
        )
        # An offer without any price does not price its card.
        CloudOffer.all_orgs.create(
            provider=cls.provider,
            sku="no-price",
            accelerator=cls.imported[0],
            gpu_count=1,
            checked_at=now,
        )

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def page(self, user: User) -> str:
        self.client.force_login(user)
        response = self.client.get(reverse("pricing:prices"))
        assert response.status_code == 200
        return response.content.decode()

    def test_how_many_cards_have_no_cloud_price_comes_from_the_database(self) -> None:
        body = self.page(self.alice)
        # 7 cards; only the H100 has a price Alice may see: 6 without one. Of the 4
        # hand-checked cards, 3 (B200, MI300X, Mac Studio) have none.
        visible = CloudOffer.objects.visible_to([self.org_a]).filter(
            Q(on_demand_per_hour__isnull=False) | Q(spot_per_hour__isnull=False)
        )
        expected = Accelerator.objects.exclude(pk__in=visible.values("accelerator_id")).count()
        assert expected == 6
        assert f'data-unpriced="{expected}"' in body
        assert (
            "6 cards of the 7 in the catalog have no cloud price "
            "(3 of the 4 hand-checked cards)." in body
        )
        # Charlie (org B) sees the B200's negotiated price: one card fewer.
        assert "5 cards of the 7 in the catalog have no cloud price" in self.page(self.charlie)

    def test_one_card_without_a_price_is_singular(self) -> None:
        for c in [*self.imported, self.negotiated_b, self.unpriced_curated, self.apple]:
            c.delete()
        card("lonely")
        assert "1 card of the 2 in the catalog has no cloud price" in self.page(self.alice)

    def test_the_unpriced_hand_checked_cards_are_listed_with_their_purchase_price(self) -> None:
        body = self.page(self.alice)
        assert reverse("catalog:accelerator-detail", args=["mi300x"]) in body
        assert "purchase price 15,000 USD" in body
        # Apple's catalog price is the base model's: said so.
        assert "purchase price from 3,999 USD (the base configuration" in body
        # An imported card is counted, not listed.
        assert reverse("catalog:accelerator-detail", args=["imported-1"]) not in body

    def test_stale_is_shown_once_as_a_badge_with_the_date(self) -> None:
        body = self.page(self.alice)
        when = formats.date_format(timezone.localtime(self.old.checked_at), "DATE_FORMAT")
        assert body.count('class="badge stale"') == 1
        assert f"stale: checked {when}" in body
        # The fresh offer reads as a time since (our filter), with the exact time in a title.
        assert ">2 hours ago</time>" in body
        rows = [r for r in body.split("<tr>") if "acme-h100x1<" in r]
        assert len(rows) == 1
        assert "badge stale" in rows[0]
        assert "ago" not in rows[0]  # the stale row has no second "… ago"
        assert settings.PRICES_STALE_AFTER_HOURS < 40 * 24

    def test_no_duplicate_columns_and_per_gpu_only_for_several_gpus(self) -> None:
        body = self.page(self.alice)
        table = body[body.index('<table class="table offers">') :]
        table = table[: table.index("</table>")]
        headers = re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', table)
        assert len(headers) == len(set(headers)) == 10
        # 8 GPUs at 20.00 an hour: 20.00 / 8 = 2.50 per GPU, shown under the price.
        assert "20.00 USD<br><small>2.50 per GPU</small>" in table
        # One GPU: the instance price is the GPU's; no second figure.
        one = re.search(r"2\.50 USD(<br>)?", table)
        assert one is not None and one.group(1) is None

    def test_price_provenance_is_for_staff_only(self) -> None:
        assert "scraped from the pricing page" not in self.page(self.alice)
        assert "scraped from the pricing page" in self.page(self.staff)

    def test_the_tables_scroll_in_their_own_box(self) -> None:
        body = self.page(self.alice)
        assert '<div class="table-scroll" tabindex="0" role="region"' in body
        assert body.count('<table class="table offers">') == body.count(
            '<div class="table-scroll" tabindex="0" role="region" aria-label="Offers">'
        )

    def test_the_query_count_stays_flat_as_offers_and_cards_grow(self) -> None:
        self.client.force_login(self.alice)

        def queries() -> int:
            with CaptureQueriesContext(connection) as ctx:
                assert self.client.get(reverse("pricing:prices")).status_code == 200
            return len(ctx.captured_queries)

        before = queries()
        for i in range(15):
            extra = card(f"more-{i}", curated=i % 2 == 0)
            CloudOffer.all_orgs.create(
                provider=self.provider,
                sku=f"more-{i}",
                accelerator=extra if i % 3 else None,
                gpu_count=2,
                on_demand_per_hour=Decimal("3.00"),
                checked_at=timezone.now(),
            )
        assert queries() == before
