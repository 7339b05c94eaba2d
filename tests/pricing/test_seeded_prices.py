"""Seeded prices are dated, not stale: a price transcribed into pricing/data/offers.csv (or
typed in admin) has no price source, is shown "as of" the date it was checked with a link
to where it was seen, and never gets the stale badge, which is for a live source's price
not refreshed for PRICES_STALE_AFTER_HOURS. A spot price above the on-demand price is
refused on the way in: by the seed import (the feed parser's offer_check) and by admin's
form."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import formats, timezone, translation

from pricing import services
from pricing.admin import CloudOfferForm
from pricing.models import CloudOffer, CloudProvider, PriceSource, SourceKind
from tests.cast import CastTestCase

DATA = Path(__file__).resolve().parents[2] / "pricing" / "data"
NOTE = "github example/prices plans.yml (transcribed from https://www.coreweave.com/pricing)"


def _offer(provider: CloudProvider, *, days_old: int, **extra: object) -> CloudOffer:
    return CloudOffer(
        provider=provider,
        sku="gh200",
        gpu_count=1,
        on_demand_per_hour=Decimal("6.50"),
        checked_at=timezone.now() - timedelta(days=days_old),
        **extra,
    )


@pytest.mark.django_db
def test_only_a_live_sources_price_goes_stale(settings: object) -> None:
    settings.PRICES_STALE_AFTER_HOURS = 72  # type: ignore[attr-defined]
    provider = CloudProvider.objects.create(name="CoreWeave", slug="coreweave")
    feed = PriceSource.all_orgs.create(provider=provider, kind=SourceKind.FEED)
    # 40 days = 960 h, past the 72 h limit: stale from a feed, merely dated when seeded.
    seeded, live = _offer(provider, days_old=40), _offer(provider, days_old=40, source=feed)
    assert (seeded.is_live, seeded.is_stale) == (False, False)
    assert (live.is_live, live.is_stale) == (True, True)
    # 2 days = 48 h < 72 h: a live price is fresh.
    assert not _offer(provider, days_old=2, source=feed).is_stale


@pytest.mark.django_db
def test_the_source_link_is_the_notes_address_else_the_providers_site() -> None:
    provider = CloudProvider.objects.create(
        name="Lambda", slug="lambda", website="https://lambda.ai/pricing"
    )
    noted = _offer(provider, days_old=1, source_note=NOTE)
    assert noted.source_url == "https://www.coreweave.com/pricing"  # without the ")"
    bare = _offer(provider, days_old=1, source_note="console.vast.ai/api/v0/bundles/?q=...")
    assert bare.source_url == "https://lambda.ai/pricing"  # no scheme: not an address


@pytest.mark.django_db
def test_every_seeded_offer_has_a_source_link_and_none_is_stale() -> None:
    services.pricing_seed_load(data_dir=DATA)
    offers = list(CloudOffer.all_orgs.select_related("provider"))
    assert len(offers) >= 50
    assert [o.sku for o in offers if o.is_stale or o.is_live] == []
    assert [o.sku for o in offers if not o.source_url.startswith("https://")] == []


@pytest.mark.django_db
def test_the_seed_import_skips_a_spot_price_above_on_demand(tmp_path: Path) -> None:
    for name in ("providers.csv", "sources.csv"):
        (tmp_path / name).write_text((DATA / name).read_text())
    header = (DATA / "offers.csv").read_text().splitlines()[0]
    (tmp_path / "offers.csv").write_text(
        f"{header}\n"
        # The GH200 row once transcribed with another figure as its spot price.
        "CoreWeave,gh200,,GH200,1,96,6.50,35.84,USD,hour,2026-09-20,transcribed\n"
        "CoreWeave,h100,,H100 SXM 80GB,1,80,6.16,2.99,USD,hour,2026-09-20,transcribed\n"
    )
    result = services.pricing_seed_load(data_dir=tmp_path)
    assert [o.sku for o in CloudOffer.all_orgs.all()] == ["h100"]
    assert len(result.skipped) == 1 and "above on_demand_per_hour" in result.skipped[0]


@pytest.mark.django_db
def test_the_admin_form_refuses_a_spot_price_above_on_demand() -> None:
    provider = CloudProvider.objects.create(name="CoreWeave", slug="coreweave")
    data = {
        "provider": provider.pk,
        "sku": "gh200",
        "gpu_count": 1,
        "on_demand_per_hour": "6.50",
        "spot_per_hour": "35.84",
        "currency": "USD",
        "checked_at": "2026-09-20 12:00:00",
    }
    with translation.override("en"):
        form = CloudOfferForm(data=data)
        assert not form.is_valid()
        assert list(form.errors) == ["spot_per_hour"]
        assert form.errors["spot_per_hour"] == [
            "The spot price (35.84) is above the on-demand price (6.50): spot is the "
            "interruptible discount on the same instance."
        ]
    # Equal is allowed (no discount), and so is a lower spot price.
    for spot in ("6.50", "2.99"):
        assert CloudOfferForm(data=data | {"spot_per_hour": spot}).is_valid(), spot


class SeededPricesOnThePages(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        provider = CloudProvider.objects.create(
            name="CoreWeave", slug="coreweave", website="https://www.coreweave.com/"
        )
        self.seeded = CloudOffer.all_orgs.create(
            provider=provider,
            sku="gh200",
            gpu_count=1,
            on_demand_per_hour=Decimal("6.50"),
            checked_at=timezone.now() - timedelta(days=40),
            source_note=NOTE,
        )

    def test_the_prices_page_shows_a_seeded_price_as_of_its_date_with_its_source(self) -> None:
        self.client.force_login(self.alice)
        body = self.client.get(reverse("pricing:prices")).content.decode()
        when = formats.date_format(timezone.localtime(self.seeded.checked_at), "DATE_FORMAT")
        row = next(r for r in body.split("<tr>") if ">gh200" in r or "gh200<" in r)
        assert f"as of {when}</time>" in row
        assert (
            '<a href="https://www.coreweave.com/pricing" rel="external noopener noreferrer">'
            "source</a>" in row
        )
        assert "stale" not in row
