"""The organisation feed page under attack: URLs inside the network, hostile files, a
broker that is down, and a load that fails."""

from __future__ import annotations

from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse
from kombu.exceptions import OperationalError

from pricing import outbound
from pricing.admin import PriceSourceForm
from pricing.models import CloudOffer, CloudProvider, PriceSource, RefreshRun, RunStatus
from pricing.tasks import refresh_prices
from tests.cast import CastTestCase
from tests.pricing.hostile import answer, serving
from tests.pricing.test_outbound import dns

# One message for every refused feed URL, whatever the reason (see the test below).
REFUSED = "This address cannot be used: a feed must be on a public http or https address."


class FeedFormTests(CastTestCase):
    acme: CloudProvider

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.acme = CloudProvider.objects.create(name="Acme GPU", slug="acme")

    def setUp(self) -> None:
        self.client.force_login(self.alice)  # admin of org A
        self.url = reverse("pricing:org-feed", args=["org-a"])

    def post_url(self, feed_url: str) -> list[str]:
        response = self.client.post(self.url, {"provider": self.acme.pk, "url": feed_url})
        assert response.status_code == 400
        assert not PriceSource.all_orgs.filter(organization=self.org_a).exists()
        return list(response.context["form"].errors["url"])

    def post_file(self, content: bytes, name: str = "feed.csv") -> list[str]:
        upload = SimpleUploadedFile(name, content)
        response = self.client.post(self.url, {"provider": self.acme.pk, "file": upload})
        assert response.status_code == 400
        assert not CloudOffer.all_orgs.filter(organization=self.org_a).exists()
        return list(response.context["form"].errors["file"])

    # -- URLs -----------------------------------------------------------------------------

    def test_feed_urls_inside_the_network_get_400_and_are_never_fetched(self) -> None:
        with serving(answer(b"sku,on_demand_per_hour\nx,1\n")) as local:
            port = local.base.rsplit(":", 1)[1]
            for feed_url in [
                f"http://127.0.0.1:{port}/feed.csv",
                f"http://[::1]:{port}/feed.csv",
                f"http://localhost:{port}/feed.csv",
                "http://10.0.0.1/feed.csv",
                "http://169.254.169.254/latest/meta-data/",
            ]:
                with self.subTest(feed_url):
                    assert self.post_url(feed_url) == [REFUSED]
        assert local.requests == []

    def test_ftp_gets_400(self) -> None:
        assert self.post_url("ftp://example.com/feed.csv") == [REFUSED]

    def test_every_refused_url_gets_the_same_message(self) -> None:
        # Which host names exist inside the network must not show: a name that does not
        # resolve, one that resolves to a private address, a resolver too slow to answer
        # and a refused scheme all read the same (and so does the API, through this form).
        def slow(*args: object, **kwargs: object) -> list[object]:
            raise outbound.TransientFetchError("the source did not answer in time")

        with dns({"intranet.example.com": ["10.1.2.3"]}):
            answers = {
                feed_url: self.post_url(feed_url)
                for feed_url in (
                    "https://intranet.example.com/feed.csv",
                    "https://no-such-host.invalid/feed.csv",
                    "http://10.0.0.1/feed.csv",
                    "ftp://intranet.example.com/feed.csv",
                )
            }
            with mock.patch.object(outbound, "_lookup", side_effect=slow):
                answers["slow resolver"] = self.post_url("https://slow.example.com/feed.csv")
        assert set(map(tuple, answers.values())) == {(REFUSED,)}, answers
        api = self.client.post(
            "/api/v1/o/org-a/prices/feeds/",
            {"provider": "acme", "url": "https://no-such-host.invalid/feed.csv"},
            content_type="application/json",
        )
        assert api.json() == {"errors": {"url": [REFUSED]}}

    def test_a_host_resolving_to_private_space_gets_400(self) -> None:
        with dns({"prices.example.com": ["10.20.30.40"]}):
            assert self.post_url("https://prices.example.com/feed.csv") == [REFUSED]

    # -- hostile files --------------------------------------------------------------------

    def test_hostile_feed_files_get_400_with_the_field_and_the_reason(self) -> None:
        head = b"sku,gpu_count,on_demand_per_hour,vram_total_gb,checked_at\n"
        cases = {
            "deep JSON": (
                b"[" * 5000 + b"]" * 5000,
                "malformed JSON feed: nested deeper than 8 levels",
            ),
            "200 KiB CSV field": (
                head + b"x" * (200 * 1024) + b",1,1,,\n",
                "malformed CSV feed near line 2: field larger than field limit (131072)",
            ),
            "NUL": (head + b"x\x00,1,1,,\n", "the feed contains a NUL byte"),
            "1e999999 in CSV": (
                head + b"x,1,1e999999,,\n",
                "row 1: on_demand_per_hour must be more than 0 and less than 10,000 USD per hour",
            ),
            "1e999999 in JSON": (
                b'[{"sku": "x", "on_demand_per_hour": 1e999999}]',
                "malformed JSON feed: the number 1e999999 is out of range",
            ),
            "gpu_count 2**63": (
                head + f"x,{2**63},1,,\n".encode(),
                "row 1: gpu_count must be a whole number from 1 to 4096",
            ),
            "superscript gpu_count": (
                head + "x,²,1,,\n".encode(),
                "row 1: gpu_count must be a whole number from 1 to 4096",
            ),
            "date 9999-12-31": (
                head + b"x,1,1,,9999-12-31\n",
                "row 1: checked_at is in the future",
            ),
            "NaN price": (
                head + b"x,1,NaN,,\n",
                "row 1: on_demand_per_hour is not a finite number",
            ),
            "NaN VRAM": (
                head + b"x,1,1,nan,\n",
                "row 1: vram_total_gb must be more than 0 and at most 4194304",
            ),
            "inf spot": (
                b'[{"sku": "x", "spot_per_hour": "Infinity"}]',
                "row 1: spot_per_hour is not a finite number",
            ),
            "NaN in JSON": (
                b'[{"sku": "x", "on_demand_per_hour": NaN}]',
                "malformed JSON feed: NaN is not a number JSON allows",
            ),
        }
        for name, (content, message) in cases.items():
            with self.subTest(name):
                assert self.post_file(content) == [message]

    def test_every_bad_row_is_listed_up_to_ten(self) -> None:
        rows = b"".join(b"x%d,-1\n" % n for n in range(12))
        errors = self.post_file(b"sku,on_demand_per_hour\n" + rows)
        assert errors[0] == "row 1: negative price"
        assert len(errors) == 11 and errors[-1] == "and 2 more rows with errors"

    # -- saving ---------------------------------------------------------------------------

    def test_saving_while_the_broker_is_down_keeps_the_row_and_says_so(self) -> None:
        down = OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        with (
            dns({"prices.example.com": ["8.8.8.8"]}),
            override_settings(CELERY_TASK_ALWAYS_EAGER=False),
            mock.patch.object(refresh_prices, "delay", side_effect=down),
        ):
            response = self.client.post(
                self.url,
                {"provider": self.acme.pk, "url": "https://prices.example.com/feed.csv"},
                follow=True,
            )
        assert response.status_code == 200
        assert b"its refresh could not be queued" in response.content
        assert b"6379" not in response.content
        feed = PriceSource.all_orgs.get(organization=self.org_a)
        assert feed.base_url == "https://prices.example.com/feed.csv"
        run = RefreshRun.objects.get(source=feed)
        assert (run.status, run.error) == (RunStatus.FAILED, "the refresh could not be queued")
        assert feed.last_run_at is None  # still due: the hourly schedule fetches it

    def test_a_failed_load_is_reported_as_failed_not_as_zero_offers(self) -> None:
        def broken(config: object) -> None:
            raise RuntimeError("database went away at 10.0.0.7:5432")

        upload = SimpleUploadedFile("feed.csv", b"sku,on_demand_per_hour\nx,1\n")
        with mock.patch.dict("pricing.fetchers.FETCHERS", {"feed": broken}):
            response = self.client.post(
                self.url, {"provider": self.acme.pk, "file": upload}, follow=True
            )
        assert response.status_code == 200
        assert b"Feed loaded" not in response.content
        assert b"The feed could not be loaded: the refresh failed unexpectedly" in response.content
        assert b"10.0.0.7" not in response.content

    def test_a_good_upload_still_loads(self) -> None:
        upload = SimpleUploadedFile("feed.csv", b"sku,gpu_count,on_demand_per_hour\nx,8,19.2\n")
        response = self.client.post(
            self.url, {"provider": self.acme.pk, "file": upload}, follow=True
        )
        assert b"Feed loaded: 1 offer, 0 rows skipped." in response.content
        assert CloudOffer.all_orgs.get(organization=self.org_a).gpu_count == 8


class StaffSourceFormTests(CastTestCase):
    def test_the_admin_form_refuses_an_internal_base_url_unless_allowed(self) -> None:
        provider = CloudProvider.objects.create(name="Acme", slug="acme")
        data = {
            "provider": provider.pk,
            "kind": "aws",
            "base_url": "http://169.254.169.254/latest",
            "config": "{}",
            "refresh_hours": 24,
        }
        form = PriceSourceForm(data=data)
        assert not form.is_valid()
        # Staff configure the sources (and read the logs): their form keeps the reason.
        assert form.errors["base_url"] == [
            "This address cannot be used: the address is not allowed."
        ]
        with override_settings(OUTBOUND_ALLOWED_HOSTS=["169.254.169.254"]):
            assert PriceSourceForm(data=data).is_valid()
