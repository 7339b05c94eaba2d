"""The prices page, the org feed page, offers_for, and admin's refresh-now progress page."""

from __future__ import annotations

from decimal import Decimal
from unittest import mock

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from catalog.models import Accelerator
from catalog.scoping import TenantRequired
from pricing import selectors, services
from pricing.matching import tokens
from pricing.models import CloudOffer, CloudProvider, PriceSource, RefreshRun
from pricing.tasks import refresh_prices
from sizing_site.tenancy.access import tenant_for
from tests.cast import CastTestCase
from tests.pricing.helpers import accelerators

FEED = (
    "sku,region,accelerator,gpu_count,on_demand_per_hour,checked_at,source\n"
    "acme-h100x8,eu,H100 SXM 80GB,8,9.60,2026-11-20,contract 7\n"
)


class PricesTests(CastTestCase):
    h100: Accelerator
    acme: CloudProvider

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        accelerators()
        services.pricing_seed_load()
        cls.h100 = Accelerator.objects.get(slug="nvidia-h100-sxm5-80gb")
        cls.acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")
        tenant = tenant_for(cls.alice, "org-a")
        feed = services.org_feed_save(
            organization=tenant.organization, provider=cls.acme, content=FEED
        )
        services.price_source_refresh(source_id=feed.pk)

    def test_the_page_lists_offers_per_accelerator_with_per_gpu_hour(self) -> None:
        self.client.force_login(self.charlie)
        response = self.client.get(
            reverse("pricing:prices"), {"accelerator": "nvidia-h100-sxm5-80gb"}
        )
        assert response.status_code == 200
        groups = response.context["groups"]
        assert [g["accelerator"] for g in groups] == [self.h100]
        offers = groups[0]["offers"]
        per_gpu = [o.on_demand_per_gpu_hour for o in offers]
        assert per_gpu == sorted(per_gpu)
        # AWS p5.48xlarge: 55.04 / 8 GPUs = 6.88 per GPU-hour.
        p5 = next(o for o in offers if o.sku == "p5.48xlarge")
        assert p5.on_demand_per_gpu_hour == Decimal("6.88")
        assert b"stale" in response.content  # seed prices are weeks old

    def test_the_accelerator_filter_offers_only_accelerators_with_offers(self) -> None:
        Accelerator.objects.create(vendor="X", name="No Offers", slug="no-offers")
        choices = set(selectors.offer_accelerators())
        assert self.h100 in choices
        assert not any(a.slug == "no-offers" for a in choices)

    def test_charlie_never_sees_org_as_negotiated_offers(self) -> None:
        self.client.force_login(self.charlie)
        response = self.client.get(reverse("pricing:prices"))
        assert b"acme-h100x8" not in response.content
        self.client.force_login(self.bob)
        response = self.client.get(reverse("pricing:prices"))
        assert b"acme-h100x8" in response.content and b"negotiated: Org A" in response.content

    def test_filters_by_provider_and_max_price(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(
            reverse("pricing:prices"), {"provider": "runpod", "max_price_per_gpu_hour": "1"}
        )
        offers = [o for g in response.context["groups"] for o in g["offers"]]
        assert offers and all(o.provider.slug == "runpod" for o in offers)
        assert all(o.on_demand_per_gpu_hour <= 1 for o in offers)

    def test_an_htmx_request_gets_the_results_partial_only(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(reverse("pricing:prices"), headers={"HX-Request": "true"})
        assert response.content.lstrip().startswith(b'<div id="results"')

    def test_the_page_query_count_is_flat(self) -> None:
        self.client.force_login(self.bob)
        # 10: two of them count the cards without a cloud price and list the curated ones.
        with self.assertNumQueries(10):
            self.client.get(reverse("pricing:prices"))
        services.pricing_seed_load()  # same rows again: no growth
        CloudOffer.all_orgs.create(
            provider=self.acme,
            sku="extra",
            gpu_count=1,
            on_demand_per_hour=1,
            checked_at=CloudOffer.all_orgs.first().checked_at,  # type: ignore[union-attr]
        )
        with self.assertNumQueries(10):
            self.client.get(reverse("pricing:prices"))

    def test_offers_for_returns_the_cheapest_instances_with_enough_gpus(self) -> None:
        public = list(selectors.offers_for(accelerator=self.h100, gpu_count=8))
        assert public and all(o.gpu_count >= 8 for o in public)
        prices = [o.on_demand_per_hour or 0 for o in public]
        assert prices == sorted(prices)
        assert "acme-h100x8" not in {o.sku for o in public}
        with_org = list(
            selectors.offers_for(accelerator=self.h100, gpu_count=8, organization=self.org_a)
        )
        # The negotiated 9.60 for 8 GPUs is the cheapest 8-GPU H100 instance.
        assert with_org[0].sku == "acme-h100x8"

    def test_the_scoped_offer_manager_fails_closed(self) -> None:
        with self.assertRaises(TenantRequired):
            list(CloudOffer.objects.all())
        with self.assertRaises(TenantRequired):
            CloudOffer.objects.for_organization(None)

    def test_the_offer_scopes_split_public_and_negotiated_rows(self) -> None:
        public = set(CloudOffer.objects.public().values_list("sku", flat=True))
        own = set(CloudOffer.objects.for_organization(self.org_a).values_list("sku", flat=True))
        seen = set(CloudOffer.objects.visible_to([self.org_a]).values_list("sku", flat=True))
        assert own == {"acme-h100x8"} and "acme-h100x8" not in public
        assert seen == public | own
        assert set(CloudOffer.objects.visible_to([self.org_b]).values_list("sku", flat=True)) == (
            public
        )
        with self.assertRaisesRegex(TenantRequired, r"\.public\(\), \.visible_to\(\)"):
            CloudOffer.objects.filter(sku="acme-h100x8")

    def test_org_feed_page_is_404_for_another_org_and_403_to_post_for_a_viewer(self) -> None:
        url = reverse("pricing:org-feed", args=["org-a"])
        self.client.force_login(self.charlie)
        assert self.client.get(url).status_code == 404
        assert self.client.post(url).status_code == 404
        self.client.force_login(self.bob)
        response = self.client.get(url)
        assert response.status_code == 200 and b"acme-h100x8" in response.content
        assert self.client.post(url).status_code == 403

    def test_an_org_admin_uploads_a_feed_and_sees_the_counts(self) -> None:
        self.client.force_login(self.charlie)
        url = reverse("pricing:org-feed", args=["org-b"])
        # An upload with a bad row is refused whole, the row and its reason named.
        upload = SimpleUploadedFile("feed.csv", b"sku,on_demand_per_hour\nb-1,2.5\nb-2,-3\n")
        response = self.client.post(url, {"provider": self.acme.pk, "file": upload})
        assert response.status_code == 400
        assert response.context["form"].errors["file"] == ["row 2: negative price"]
        assert not CloudOffer.all_orgs.filter(sku="b-1").exists()
        upload = SimpleUploadedFile("feed.csv", b"sku,on_demand_per_hour\nb-1,2.5\nb-2,3\n")
        response = self.client.post(url, {"provider": self.acme.pk, "file": upload}, follow=True)
        assert response.status_code == 200
        assert b"Feed loaded: 2 offers, 0 rows skipped." in response.content
        offer = CloudOffer.all_orgs.get(sku="b-1")
        assert offer.organization == self.org_b
        assert PriceSource.all_orgs.get(organization=self.org_b).kind == "feed"
        # Org A's members do not see it.
        self.client.force_login(self.bob)
        assert b"b-1" not in self.client.get(reverse("pricing:prices")).content

    def test_the_upload_form_needs_exactly_one_of_url_and_file(self) -> None:
        self.client.force_login(self.alice)
        response = self.client.post(
            reverse("pricing:org-feed", args=["org-a"]), {"provider": self.acme.pk}
        )
        assert response.status_code == 400


class AdminRefreshTests(CastTestCase):
    def test_refresh_now_queues_a_run_and_the_progress_page_shows_its_result(self) -> None:
        staff = User.objects.create_superuser("staff", "s@x.example", "pw-staff-123")
        provider = CloudProvider.objects.create(name="Acme", slug="acme")
        source = PriceSource.all_orgs.create(
            provider=provider, kind="feed", feed_content="sku,on_demand_per_hour\nz,1\n"
        )
        self.client.force_login(staff)
        # Run the task in this process whatever the broker (the real-worker test is in test_tasks).
        run_here = mock.patch.object(
            refresh_prices, "delay", side_effect=lambda *a: refresh_prices.apply(args=a)
        )
        with run_here, self.captureOnCommitCallbacks(execute=True):
            response = self.client.post(
                reverse("admin:pricing_pricesource_changelist"),
                {"action": "refresh_now", "_selected_action": [source.pk]},
            )
        run = RefreshRun.objects.get(source=source)
        assert response.status_code == 302
        assert response["Location"] == reverse("admin:pricing_refreshrun_progress", args=[run.pk])
        assert run.status == "succeeded"  # the task ran on commit
        page = self.client.get(response["Location"])
        assert page.status_code == 200 and b"Succeeded" in page.content
        assert b"every 2s" not in page.content  # finished: no more polling
        RefreshRun.objects.filter(pk=run.pk).update(status="running")
        partial = self.client.get(response["Location"], headers={"HX-Request": "true"})
        assert partial.content.lstrip().startswith(b'<div id="progress"')
        assert b"every 2s" in partial.content

    def test_unmatched_offers_are_listed_for_review(self) -> None:
        staff = User.objects.create_superuser("staff", "s@x.example", "pw-staff-123")
        self.client.force_login(staff)
        services.pricing_seed_load()
        response = self.client.get(
            reverse("admin:pricing_cloudoffer_changelist"), {"matched": "no"}
        )
        assert response.status_code == 200
        assert (
            response.context["cl"].result_count
            == CloudOffer.all_orgs.filter(accelerator=None).count()
            > 0
        )


def test_gpu_names_normalise_across_provider_spellings() -> None:
    assert tokens("H100 (80 GB SXM5)") == tokens("NVIDIA H100 SXM 80GB") == {"h100", "sxm", "80gb"}
    assert tokens("A100-SXM4-80GB") == tokens("A100 80GB SXM4")
