"""The prices API: the offers are the prices page's, field by field; an
organisation's negotiated offers reach its members only (and only through a token that
may see that organisation); bad filters are 400s naming them; refresh runs and an
organisation's feeds are listed as their pages show them."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation

from catalog.models import Accelerator
from pricing import selectors, services
from pricing.models import (
    CloudOffer,
    CloudProvider,
    PriceSource,
    RefreshRun,
    RunStatus,
    SourceKind,
)
from sizing_site.tenancy.models import Membership, Role
from sizing_site.tokens.services import token_create
from tests.cast import CastTestCase
from tests.pricing.helpers import accelerators

OFFERS = "/api/v1/prices/offers/"
RUNS = "/api/v1/prices/runs/"
FEEDS_A = "/api/v1/o/org-a/prices/feeds/"
H100 = "nvidia-h100-sxm5-80gb"
FEED_A = (
    "sku,region,accelerator,gpu_count,on_demand_per_hour,checked_at,source\n"
    "acme-h100x8,eu,H100 SXM 80GB,8,9.60,2026-11-20,contract 7\n"
)
FEED_B = "sku,accelerator,gpu_count,on_demand_per_hour\nbeta-h100,H100 SXM 80GB,1,1.10\n"
PUBLIC_FEED = (
    "sku,accelerator,gpu_count,on_demand_per_hour,spot_per_hour\n"
    "pub-h100,H100 SXM 80GB,1,2.00,1.00\n"
    "pub-odd,No Such GPU,1,3.00,\n"
)


def key(offer: CloudOffer) -> tuple[str, str, str]:
    return (offer.provider.slug, offer.sku, offer.region)


def api_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return (row["provider"]["slug"], row["sku"], row["region"] or "")


def order(row: dict[str, Any]) -> tuple[str | None, Decimal | None, str]:
    """What the page sorts by: accelerator, per-GPU-hour price, provider (ties in any order)."""
    per_gpu = row["on_demand_per_gpu_hour"]
    return (
        row["accelerator"] and row["accelerator"]["slug"],
        None if per_gpu is None else Decimal(str(per_gpu)),
        row["provider"]["name"],
    )


def money(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(Decimal("0.0001"))


class PricesApiTestCase(CastTestCase):
    acme: CloudProvider
    erin: User
    public_feed: PriceSource

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        accelerators()
        services.pricing_seed_load()
        cls.acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")
        for organization, content in ((cls.org_a, FEED_A), (cls.org_b, FEED_B)):
            feed = services.org_feed_save(
                organization=organization, provider=cls.acme, content=content
            )
            services.price_source_refresh(source_id=feed.pk)
        # A public feed source (as an admin would set one up), refreshed once.
        cls.public_feed = PriceSource.all_orgs.create(
            provider=cls.acme, kind=SourceKind.FEED, feed_content=PUBLIC_FEED
        )
        services.price_source_refresh(source_id=cls.public_feed.pk)
        # Erin belongs to both organizations.
        cls.erin = User.objects.create_user("erin", "erin@example.com", "pw-erin-123")
        for organization in (cls.org_a, cls.org_b):
            Membership.all_tenants.create(
                user=cls.erin, organization=organization, role=Role.VIEWER
            )

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def offers(self, client: Client | None = None, **params: str) -> list[dict[str, Any]]:
        """Every offer the API lists for these filters, following the pages."""
        client = client or self.client
        rows: list[dict[str, Any]] = []
        response = client.get(OFFERS, {**params, "page_size": "200"})
        while True:
            assert response.status_code == 200, response.content
            rows += response.json()["results"]
            following = response.json()["next"]
            if following is None:
                break
            response = client.get(following)
        assert len(rows) == response.json()["count"]
        return rows

    def token_client(self, user: User, **limits: Any) -> Client:
        plain = token_create(user=user, name="script", **limits).plain
        return Client(headers={"Authorization": f"Bearer {plain}"})


class OfferListTests(PricesApiTestCase):
    def test_the_offers_are_the_prices_pages_field_by_field(self) -> None:
        self.client.force_login(self.bob)
        cases: list[dict[str, str]] = [{}, {"accelerator": H100}, {"provider": "runpod"}]
        for filters in cases:
            page = self.client.get(reverse("pricing:prices"), filters)
            listed = [o for g in page.context["groups"] for o in g["offers"]]
            rows = self.offers(None, **filters)
            assert len(rows) == len(listed) > 0, filters
            by_key = {key(o): o for o in listed}
            assert {api_key(r) for r in rows} == set(by_key), filters
            # The page's order: by accelerator (unmatched last), cheapest per GPU-hour first.
            assert [order(r) for r in rows] == [
                (
                    o.accelerator.slug if o.accelerator else None,
                    money(o.on_demand_per_gpu_hour),
                    o.provider.name,
                )
                for o in listed
            ], filters
            for row in rows:
                offer = by_key[api_key(row)]
                assert row["gpu_count"] == offer.gpu_count
                assert row["gpu_name"] == offer.gpu_name
                for name in ("on_demand_per_hour", "spot_per_hour"):
                    value = row[name]
                    expected = getattr(offer, name)
                    assert (None if value is None else Decimal(str(value))) == expected, name
                for name in ("on_demand_per_gpu_hour", "spot_per_gpu_hour"):
                    value = row[name]
                    expected = money(getattr(offer, name))
                    assert (None if value is None else Decimal(str(value))) == expected, name
                accelerator = offer.accelerator
                assert row["accelerator"] == (
                    None
                    if accelerator is None
                    else {"slug": accelerator.slug, "name": accelerator.name}
                )
                assert row["provider"] == {"slug": offer.provider.slug, "name": offer.provider.name}
                assert row["billing_model"] == offer.provider.billing_model
                assert row["billing_granularity"] == offer.billing_granularity
                assert row["currency"] == offer.currency
                assert row["stale"] is offer.is_stale
                assert row["checked_at"].replace("Z", "+00:00") == offer.checked_at.isoformat()
                assert row["source"] == ("public" if offer.organization is None else "org-a")

    def test_the_selector_and_the_api_agree_for_a_max_price(self) -> None:
        self.client.force_login(self.bob)
        rows = self.offers(max_price_per_gpu_hour="2.5")
        expected = selectors.offer_list(
            organizations=[self.org_a], max_price_per_gpu_hour=Decimal("2.5")
        )
        assert sorted(api_key(r) for r in rows) == sorted(key(o) for o in expected)
        assert rows and all(Decimal(str(r["on_demand_per_gpu_hour"])) <= 2.5 for r in rows)
        # A known seed row: AWS p5.48xlarge, 55.04 for 8 GPUs, 6.88 per GPU-hour.
        p5 = next(r for r in self.offers(accelerator=H100) if r["sku"] == "p5.48xlarge")
        assert (p5["gpu_count"], p5["on_demand_per_gpu_hour"]) == (8, 6.88)
        # Seeded (no live source): dated by checked_at, never stale.
        assert p5["on_demand_per_hour"] == 55.04 and p5["stale"] is False

    def test_a_negotiated_offer_reaches_its_own_orgs_members_only(self) -> None:
        def skus(client: Client) -> set[str]:
            return {r["sku"] for r in self.offers(client, accelerator=H100)}

        self.client.force_login(self.bob)
        own = next(r for r in self.offers(accelerator=H100) if r["sku"] == "acme-h100x8")
        assert own["source"] == "org-a" and own["region"] == "eu"
        assert own["on_demand_per_hour"] == 9.6 and own["on_demand_per_gpu_hour"] == 1.2
        assert "beta-h100" not in skus(self.client)
        self.client.force_login(self.charlie)
        assert "acme-h100x8" not in skus(self.client) and "beta-h100" in skus(self.client)
        # Erin is in both orgs: a token limited to one sees that one's feed only.
        assert {"acme-h100x8", "beta-h100"} <= skus(self.token_client(self.erin))
        only_b = skus(self.token_client(self.erin, organization=self.org_b))
        assert "beta-h100" in only_b and "acme-h100x8" not in only_b
        only_a = skus(self.token_client(self.erin, organization=self.org_a))
        assert "acme-h100x8" in only_a and "beta-h100" not in only_a
        # Public offers are the same for everyone.
        assert "pub-h100" in only_a & only_b

    def test_bad_filters_and_pages_are_400_naming_the_parameter(self) -> None:
        self.client.force_login(self.bob)
        cases = {
            "accelerator": {"accelerator": "no-such-card"},
            "provider": {"provider": "nobody"},
            "max_price_per_gpu_hour": {"max_price_per_gpu_hour": "cheap"},
            "page": {"page": "0"},
        }
        for field, params in cases.items():
            response = self.client.get(OFFERS, params)
            assert response.status_code == 400, (field, response.content)
            assert list(response.json()["errors"]) == [field]
        response = self.client.get(OFFERS, {"max_price_per_gpu_hour": "-1"})
        assert response.json()["errors"]["max_price_per_gpu_hour"]
        # A page past the last is a 404 naming it (sizing_site.apikit.pagination), as in the
        # sweeps and the saved configurations.
        response = self.client.get(OFFERS, {"page": "999"})
        assert response.status_code == 404
        assert response.json() == {"errors": {"page": ["There is no page 999."]}}
        for url in (RUNS, "/api/v1/o/org-a/configurations/"):
            assert self.client.get(url, {"page": "x"}).status_code == 400, url
            assert list(self.client.get(url, {"page": "999"}).json()["errors"]) == ["page"]

    def test_pages_are_bounded_and_say_the_total(self) -> None:
        self.client.force_login(self.bob)
        everything = self.offers()
        first = self.client.get(OFFERS, {"page_size": 5}).json()
        assert first["count"] == len(everything) and len(first["results"]) == 5
        assert first["stale_after_hours"] == 72
        huge = self.client.get(OFFERS, {"page_size": 10_000}).json()
        assert len(huge["results"]) == min(200, len(everything))
        second = self.client.get(first["next"]).json()
        assert {api_key(r) for r in first["results"]}.isdisjoint(
            api_key(r) for r in second["results"]
        )

    def test_the_caller_must_sign_in_and_a_bad_token_is_401(self) -> None:
        assert Client().get(OFFERS).status_code == 403
        response = Client(headers={"Authorization": "Bearer rs_nope"}).get(OFFERS)
        assert response.status_code == 401
        assert response.json() == {"errors": {"detail": ["Invalid, expired or revoked token."]}}

    def test_etag_answers_304_until_a_price_changes(self) -> None:
        self.client.force_login(self.bob)
        first = self.client.get(OFFERS, {"accelerator": H100})
        etag = first["ETag"]
        assert etag and first["Last-Modified"] and first["Cache-Control"] == "private, no-cache"
        again = self.client.get(OFFERS, {"accelerator": H100}, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again["ETag"] == etag and not again.content
        CloudOffer.all_orgs.filter(sku="pub-h100").update(on_demand_per_hour=Decimal("1.5"))
        changed = self.client.get(OFFERS, {"accelerator": H100}, headers={"If-None-Match": etag})
        assert changed.status_code == 200 and changed["ETag"] != etag
        # Another member's view (another org's feed) has another tag.
        self.client.force_login(self.charlie)
        assert self.client.get(OFFERS, {"accelerator": H100})["ETag"] != changed["ETag"]

    def test_the_query_count_is_flat_in_the_number_of_offers(self) -> None:
        self.client.force_login(self.bob)
        flat = CloudProvider.objects.create(name="Flat GPU", slug="flat")
        h100 = Accelerator.objects.get(slug=H100)
        now = timezone.now()

        def add(start: int, stop: int) -> None:
            CloudOffer.all_orgs.bulk_create(
                CloudOffer(
                    provider=flat,
                    sku=f"flat-{n}",
                    accelerator=h100,
                    gpu_count=1,
                    on_demand_per_hour=Decimal(n),
                    checked_at=now,
                )
                for n in range(start, stop)
            )

        def count() -> int:
            with CaptureQueriesContext(connection) as queries:
                response = self.client.get(OFFERS, {"provider": "flat"})
            assert response.status_code == 200
            assert response.json()["count"] == CloudOffer.all_orgs.filter(provider=flat).count()
            return len(queries)

        add(1, 4)
        three = count()
        add(4, 31)
        assert count() == three


class RefreshRunTests(PricesApiTestCase):
    def test_the_public_sources_runs_are_listed_with_their_status(self) -> None:
        # A second run of the public feed fails: its content is no feed.
        PriceSource.all_orgs.filter(pk=self.public_feed.pk).update(feed_content="{not json")
        failed = services.price_source_refresh(source_id=self.public_feed.pk)
        assert failed.status == RunStatus.FAILED
        self.client.force_login(self.charlie)
        body = self.client.get(RUNS).json()
        expected = list(selectors.public_refresh_runs())
        assert body["count"] == len(expected) == 2
        rows = body["results"]
        assert [r["status"] for r in rows] == ["failed", "succeeded"]  # newest first
        good = RefreshRun.objects.get(source=self.public_feed, status=RunStatus.SUCCEEDED)
        assert rows[1]["offers_seen"] == good.offers_seen == 2
        assert rows[1]["unmatched"] == good.unmatched == 1
        assert rows[1]["skipped"] == len(good.skipped) == 0
        assert rows[1]["provider"] == {"slug": "acme", "name": "Acme GPU"}
        assert rows[1]["kind"] == "feed" and rows[1]["finished"]
        assert rows[0]["error"] == failed.error != ""
        # The organisations' feed runs are theirs, not listed here.
        org_runs = RefreshRun.objects.filter(source__organization__isnull=False).count()
        assert org_runs == 2 and len(rows) == 2
        failed_only = self.client.get(RUNS, {"status": "failed"}).json()
        assert [r["status"] for r in failed_only["results"]] == ["failed"]
        response = self.client.get(RUNS, {"status": "lost"})
        assert response.status_code == 400 and list(response.json()["errors"]) == ["status"]
        assert Client().get(RUNS).status_code == 403


class OrgFeedTests(PricesApiTestCase):
    def test_members_see_their_orgs_feed_as_the_page_shows_it(self) -> None:
        self.client.force_login(self.bob)
        body = self.client.get(FEEDS_A).json()
        page = self.client.get(reverse("pricing:org-feed", args=["org-a"])).context
        assert body["organization"] == "org-a"
        assert [s["provider"]["slug"] for s in body["sources"]] == [
            s.provider.slug for s in page["sources"]
        ]
        source = body["sources"][0]
        assert source["uploaded"] is True and source["url"] is None
        assert source["last_run_status"] == "succeeded"
        assert [r["sku"] for r in body["offers"]] == [o.sku for o in page["offers"]]
        offer = body["offers"][0]
        assert (offer["sku"], offer["source"], offer["on_demand_per_hour"]) == (
            "acme-h100x8",
            "org-a",
            9.6,
        )
        assert [(r["status"], r["offers_seen"]) for r in body["runs"]] == [
            (r.status, r.offers_seen) for r in page["runs"]
        ]
        assert body["runs"][0]["offers_seen"] == 1

    def test_outsiders_and_tokens_for_another_org_get_404(self) -> None:
        self.client.force_login(self.charlie)
        assert self.client.get(FEEDS_A).status_code == 404
        assert self.token_client(self.erin).get(FEEDS_A).status_code == 200
        limited = self.token_client(self.erin, organization=self.org_b)
        assert limited.get(FEEDS_A).status_code == 404
        assert Client().get(FEEDS_A).status_code == 403


class FeedUploadTests(PricesApiTestCase):
    FEEDS_B = "/api/v1/o/org-b/prices/feeds/"

    def post(self, client: Client, body: dict[str, Any], org: str = "org-b") -> Any:
        url = f"/api/v1/o/{org}/prices/feeds/"
        return client.post(url, json.dumps(body), content_type="application/json")

    def test_an_admin_uploads_a_feed_as_the_page_does(self) -> None:
        CloudProvider.objects.create(name="Zeta", slug="zeta")
        charlie = self.client
        charlie.force_login(self.charlie)
        # A feed with a bad row is refused whole, the row named (the page's form).
        bad = {"provider": "zeta", "content": "sku,on_demand_per_hour\nb-1,2.5\nb-2,-3\n"}
        response = self.post(charlie, bad)
        assert response.status_code == 400
        assert response.json() == {"errors": {"file": ["row 2: negative price"]}}
        assert not CloudOffer.all_orgs.filter(sku="b-1").exists()
        good = {"provider": "zeta", "content": "sku,on_demand_per_hour\nb-1,2.5\nb-2,3\n"}
        response = self.post(charlie, good)
        assert response.status_code == 200, response.content
        body = response.json()
        assert (body["level"], body["message"]) == (
            "success",
            "Feed loaded: 2 offers, 0 rows skipped.",
        )
        source = PriceSource.all_orgs.get(organization=self.org_b, provider__slug="zeta")
        assert source.kind == SourceKind.FEED and source.last_run_status == RunStatus.SUCCEEDED
        assert {"b-1", "b-2"} <= {o["sku"] for o in body["offers"]}
        assert CloudOffer.all_orgs.get(sku="b-1").organization == self.org_b
        # Org A's members do not see it; a file upload (multipart) works the same way.
        upload = SimpleUploadedFile("feed.csv", b"sku,on_demand_per_hour\nb-3,4\n")
        response = charlie.post(self.FEEDS_B, {"provider": "zeta", "file": upload})
        assert response.status_code == 200 and response.json()["level"] == "success"
        self.client.force_login(self.bob)
        assert not {"b-1", "b-3"} & {r["sku"] for r in self.offers()}

    def test_bad_uploads_are_400_naming_the_field(self) -> None:
        self.client.force_login(self.charlie)
        cases = [
            ({"provider": "nobody", "content": "sku,on_demand_per_hour\nx,1\n"}, "provider"),
            ({"provider": "acme"}, "detail"),  # neither a URL nor a feed
            ({"provider": "acme", "url": "http://127.0.0.1/feed.csv"}, "url"),
            ({"provider": "acme", "url": "not a url"}, "url"),
        ]
        for body, field in cases:
            response = self.post(self.client, body)
            assert response.status_code == 400, body
            assert list(response.json()["errors"]) == [field], (body, response.json())

    def test_only_admins_post_and_outsiders_get_404(self) -> None:
        body = {"provider": "acme", "content": "sku,on_demand_per_hour\nx,1\n"}
        self.client.force_login(self.bob)  # a viewer of org A
        assert self.post(self.client, body, org="org-a").status_code == 403
        self.client.force_login(self.charlie)  # admin of org B only
        assert self.post(self.client, body, org="org-a").status_code == 404
        self.client.force_login(self.alice)
        assert self.post(self.client, body, org="org-b").status_code == 404
        reader = token_create(user=self.charlie, name="ro", read_only=True).plain
        script = Client(headers={"Authorization": f"Bearer {reader}"})
        assert self.post(script, body).status_code == 403
        assert not CloudOffer.all_orgs.filter(sku="x").exists()
