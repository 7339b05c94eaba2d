"""Every fetcher against a local fake provider serving the provider's real format."""

from __future__ import annotations

import json
import urllib.parse
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.test import override_settings
from django.utils import translation

from pricing import outbound
from pricing.fetchers import aws, azure, feed, lambda_, runpod, vastai
from pricing.fetchers.base import (
    MAX_PER_HOUR,
    FetchError,
    SourceConfig,
    TransientFetchError,
    grouped,
)
from tests.pricing.fakeprovider import FIXTURES, FakeProvider

NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
TODAY = datetime(2026, 11, 29, tzinfo=UTC)


def config(fake: FakeProvider, path: str, **kwargs: object) -> SourceConfig:
    return SourceConfig(base_url=fake.url(path), now=NOW, timeout_s=2, **kwargs)  # type: ignore[arg-type]


# -- Azure ----------------------------------------------------------------------------------


def test_azure_follows_next_page_link_and_keeps_linux_on_demand_and_spot(
    fake: FakeProvider,
) -> None:
    fake.serve_fixture("/azure", "azure_page1.json")
    fake.serve_fixture("/azure/page2", "azure_page2.json")
    result = azure.fetch(config(fake, "/azure", config={"regions": ["eastus"]}))
    offers = {o.sku: o for o in result.offers}
    # Windows, Low Priority, reservations and the non-GPU D2s v5 are all left out.
    assert sorted(offers) == ["Standard_NC40ads_H100_v5", "Standard_ND96isr_H100_v5"]
    nd = offers["Standard_ND96isr_H100_v5"]
    assert (nd.on_demand_per_hour, nd.spot_per_hour) == (Decimal("98.32"), Decimal("39.33"))
    assert (nd.gpu_name, nd.gpu_count, nd.vram_total_gb) == ("H100 SXM 80GB", 8, 640)
    assert nd.observed_at == datetime(2026, 6, 1, tzinfo=UTC)
    assert offers["Standard_NC40ads_H100_v5"].on_demand_per_hour == Decimal("6.98")
    # Two pages were read: the first with the OData filter, then NextPageLink as given.
    assert [r[1].split("?")[0] for r in fake.requests] == ["/azure", "/azure/page2"]
    assert "armRegionName+eq+%27eastus%27" in fake.requests[0][1]


def test_azure_empty_page_gives_no_offers(fake: FakeProvider) -> None:
    fake.serve("/azure", json.dumps({"Items": [], "NextPageLink": None, "Count": 0}))
    assert azure.fetch(config(fake, "/azure", config={"regions": ["eastus"]})).offers == []


def test_azure_malformed_answer_is_a_fetch_error(fake: FakeProvider) -> None:
    fake.serve("/azure", '{"Items": [ {"armSkuName": ')
    with pytest.raises(FetchError, match="malformed JSON") as raised:
        azure.fetch(config(fake, "/azure", config={"regions": ["eastus"]}))
    assert not isinstance(raised.value, TransientFetchError)


def test_azure_http_500_is_transient(fake: FakeProvider) -> None:
    fake.serve("/azure", '{"error": "boom"}', status=500)
    with pytest.raises(TransientFetchError, match="HTTP 500"):
        azure.fetch(config(fake, "/azure", config={"regions": ["eastus"]}))


def test_azure_slow_answer_times_out_as_transient(fake: FakeProvider) -> None:
    fake.serve_fixture("/azure", "azure_page2.json", delay_s=1.5)
    slow = SourceConfig(base_url=fake.url("/azure"), now=NOW, timeout_s=0.3)
    # The message is the policy's, in words: no address, port or OS error text.
    with pytest.raises(TransientFetchError, match=r"^the source did not answer in time$"):
        azure.fetch(slow)


# -- AWS ------------------------------------------------------------------------------------


def serve_aws(fake: FakeProvider) -> None:
    fake.serve_fixture(
        "/offers/v1.0/aws/AmazonEC2/current/region_index.json", "aws_region_index.json"
    )
    fake.serve_fixture(
        "/offers/v1.0/aws/AmazonEC2/20261120180000/us-east-1/index.json", "aws_us-east-1.json"
    )


def test_aws_streams_the_region_file_and_keeps_linux_gpu_on_demand(fake: FakeProvider) -> None:
    serve_aws(fake)
    result = aws.fetch(config(fake, ""))
    offers = {o.sku: o for o in result.offers}
    assert sorted(offers) == ["g6e.xlarge", "p5.48xlarge"]  # not Windows, not m7i
    p5 = offers["p5.48xlarge"]
    assert (p5.on_demand_per_hour, p5.gpu_count, p5.region) == (Decimal("55.04"), 8, "us-east-1")
    assert p5.observed_at == datetime(2026, 11, 20, 18, tzinfo=UTC)
    assert offers["g6e.xlarge"].gpu_name == "L40S 48GB"


def test_aws_stream_reader_works_with_tiny_chunks(fake: FakeProvider) -> None:
    # Values split across reads must parse the same as whole ones.
    from pricing.fetchers import jsonstream

    serve_aws(fake)
    original = jsonstream.JsonStream.__init__

    def tiny(self: jsonstream.JsonStream, raw: object, **kw: object) -> None:
        original(self, raw, **{**kw, "chunk": 7})  # type: ignore[arg-type]

    jsonstream.JsonStream.__init__ = tiny  # type: ignore[method-assign]
    try:
        assert len(aws.fetch(config(fake, "")).offers) == 2
    finally:
        jsonstream.JsonStream.__init__ = original  # type: ignore[method-assign]


def test_aws_truncated_region_file_is_a_fetch_error(fake: FakeProvider) -> None:
    serve_aws(fake)
    path = "/offers/v1.0/aws/AmazonEC2/20261120180000/us-east-1/index.json"
    fake.serve(path, fake.routes[path].body[:900])
    with pytest.raises(FetchError):
        aws.fetch(config(fake, ""))


def test_aws_empty_products_give_no_offers(fake: FakeProvider) -> None:
    serve_aws(fake)
    path = "/offers/v1.0/aws/AmazonEC2/20261120180000/us-east-1/index.json"
    fake.serve(path, '{"formatVersion": "v1.0", "products": {}, "terms": {"OnDemand": {}}}')
    assert aws.fetch(config(fake, "")).offers == []


def test_aws_http_503_is_transient(fake: FakeProvider) -> None:
    fake.serve("/offers/v1.0/aws/AmazonEC2/current/region_index.json", "", status=503)
    with pytest.raises(TransientFetchError):
        aws.fetch(config(fake, ""))


# -- Vast.ai --------------------------------------------------------------------------------


def test_vastai_takes_the_median_per_gpu_and_count(fake: FakeProvider) -> None:
    fake.serve_fixture("/bundles/", "vastai.json")
    result = vastai.fetch(config(fake, "/bundles/"))
    offers = {o.sku: o for o in result.offers}
    # H100: median of 2.10, 2.40, 3.00 is 2.40; the A100 row has no price and is skipped.
    h100 = offers["1x H100 SXM (marketplace median)"]
    assert (h100.on_demand_per_hour, h100.gpu_name) == (Decimal("2.4000"), "H100 SXM 80GB")
    assert offers["2x RTX 4090 (marketplace median)"].vram_total_gb == 48
    assert result.skipped == ["offer 301: no GPUs or no price"]
    assert h100.observed_at == TODAY
    query = json.loads(
        urllib.parse.parse_qs(urllib.parse.urlsplit(fake.requests[0][1]).query)["q"][0]
    )
    assert query["verified"] == {"eq": True} and query["type"] == "on-demand"


def test_vastai_error_answer_and_single_offer_dict(fake: FakeProvider) -> None:
    fake.serve("/bundles/", '{"success": false, "msg": "invalid query"}')
    with pytest.raises(FetchError, match="invalid query"):
        vastai.fetch(config(fake, "/bundles/"))
    fake.serve(
        "/bundles/",
        '{"offers": {"id": 1, "gpu_name": "RTX 5090", "num_gpus": 1, "dph_total": 0.44}}',
    )
    assert [o.sku for o in vastai.fetch(config(fake, "/bundles/")).offers] == [
        "1x RTX 5090 (marketplace median)"
    ]


def test_vastai_empty_and_500(fake: FakeProvider) -> None:
    fake.serve("/bundles/", '{"offers": []}')
    assert vastai.fetch(config(fake, "/bundles/")).offers == []
    fake.serve("/bundles/", "oops", status=502)
    with pytest.raises(TransientFetchError):
        vastai.fetch(config(fake, "/bundles/"))


# -- RunPod ---------------------------------------------------------------------------------


def test_runpod_keeps_prices_only_where_the_cloud_offers_the_gpu(fake: FakeProvider) -> None:
    fake.serve_fixture("/graphql", "runpod.json")
    result = runpod.fetch(config(fake, "/graphql", api_key="rp-key"))
    offers = {o.sku: o for o in result.offers}
    assert sorted(offers) == [
        "B200 (Secure Cloud pod)",  # community flag false: its 5.98 placeholder is ignored
        "H100 SXM (Community Cloud pod)",
        "H100 SXM (Secure Cloud pod)",
        "RTX 4090 (Community Cloud pod)",
        "RTX 4090 (Secure Cloud pod)",
    ]
    secure = offers["H100 SXM (Secure Cloud pod)"]
    assert (secure.on_demand_per_hour, secure.spot_per_hour) == (Decimal("3.99"), Decimal("2.49"))
    assert secure.gpu_name == "H100 SXM 80GB"
    method, _path, headers, body = fake.requests[0]
    assert method == "POST" and headers["Authorization"] == "Bearer rp-key"
    assert "gpuTypes" in json.loads(body)["query"]


def test_runpod_graphql_errors_and_missing_key(fake: FakeProvider) -> None:
    fake.serve("/graphql", '{"errors": [{"message": "Unauthorized"}]}')
    with pytest.raises(FetchError, match="Unauthorized"):
        runpod.fetch(config(fake, "/graphql", api_key="bad"))
    with pytest.raises(FetchError, match="RUNPOD_API_KEY"):
        runpod.fetch(config(fake, "/graphql"))
    fake.serve("/graphql", '{"data": {"gpuTypes": []}}')
    assert runpod.fetch(config(fake, "/graphql", api_key="k")).offers == []
    fake.serve("/graphql", '{"data": null}')
    with pytest.raises(FetchError, match="malformed"):
        runpod.fetch(config(fake, "/graphql", api_key="k"))


def test_runpod_slow_answer_times_out(fake: FakeProvider) -> None:
    fake.serve_fixture("/graphql", "runpod.json", delay_s=1.5)
    with pytest.raises(TransientFetchError):
        runpod.fetch(SourceConfig(base_url=fake.url("/graphql"), api_key="k", timeout_s=0.3))


# -- Lambda ---------------------------------------------------------------------------------


def test_lambda_converts_cents_per_instance_hour(fake: FakeProvider) -> None:
    fake.serve_fixture("/instance-types", "lambda.json")
    result = lambda_.fetch(config(fake, "/instance-types", api_key="l-key"))
    offers = {o.sku: o for o in result.offers}
    # 3192 cents per hour = $31.92 for 8 GPUs ($3.99 per GPU-hour).
    h100 = offers["gpu_8x_h100_sxm5"]
    assert (h100.on_demand_per_hour, h100.gpu_count) == (Decimal("31.92"), 8)
    assert h100.gpu_name == "H100 (80 GB SXM5)"
    assert offers["gpu_1x_a10"].on_demand_per_hour == Decimal("1.29")
    assert result.skipped and result.skipped[0].startswith("gpu_1x_broken")
    assert fake.requests[0][2]["Authorization"] == "Bearer l-key"


def test_lambda_malformed_empty_and_500(fake: FakeProvider) -> None:
    fake.serve("/instance-types", '{"error": {"code": "global/invalid-api-key"}}')
    with pytest.raises(FetchError, match="no data"):
        lambda_.fetch(config(fake, "/instance-types", api_key="k"))
    fake.serve("/instance-types", '{"data": {}}')
    assert lambda_.fetch(config(fake, "/instance-types", api_key="k")).offers == []
    fake.serve("/instance-types", "", status=500)
    with pytest.raises(TransientFetchError):
        lambda_.fetch(config(fake, "/instance-types", api_key="k"))


# -- generic feed ---------------------------------------------------------------------------


def test_csv_feed_skips_bad_rows_with_a_reason(fake: FakeProvider) -> None:
    fake.serve_fixture("/feed.csv", "feed.csv", content_type="text/csv")
    result = feed.fetch(config(fake, "/feed.csv"))
    assert [o.sku for o in result.offers] == ["acme-h100x8", "acme-l40s"]
    assert result.skipped == [
        "row 3: negative price",
        "row 4: unknown currency 'XYZ'",
        "row 5: missing sku",
    ]
    l40s = result.offers[1]
    assert (l40s.currency, l40s.spot_per_hour, l40s.billing_granularity) == (
        "EUR",
        Decimal("0.60"),
        "minute",
    )
    assert l40s.checked_at == datetime(2026, 11, 20, tzinfo=UTC)


def test_json_feed_from_uploaded_content() -> None:
    text = (FIXTURES / "feed.json").read_text()
    result = feed.fetch(SourceConfig(base_url="", feed_content=text, now=NOW))
    assert [o.sku for o in result.offers] == ["acme-h200x8", "acme-b200"]
    assert result.offers[1].gpu_count == 1 and result.offers[1].observed_at == TODAY
    assert result.skipped == ["row 3: not an object"]


def test_feed_malformed_empty_and_500(fake: FakeProvider) -> None:
    with pytest.raises(FetchError, match="malformed JSON feed"):
        feed.fetch(SourceConfig(base_url="", feed_content='{"offers": [', now=NOW))
    with pytest.raises(FetchError, match="header row"):
        feed.fetch(SourceConfig(base_url="", feed_content="a,b\n1,2\n", now=NOW))
    assert feed.fetch(SourceConfig(base_url="", feed_content="", now=NOW)).offers == []
    fake.serve("/feed.csv", "", status=500)
    with pytest.raises(TransientFetchError):
        feed.fetch(config(fake, "/feed.csv"))


@override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"])
def test_a_refused_connection_is_transient_and_names_no_port() -> None:
    with pytest.raises(TransientFetchError, match=r"^the source could not be reached$"):
        feed.fetch(SourceConfig(base_url="http://127.0.0.1:9/feed.csv", timeout_s=1))


def test_numbers_in_stored_messages_follow_the_active_language() -> None:
    # The cap in "less than 10,000 USD per hour" is MAX_PER_HOUR; JPY's is 200 x 10,000.
    # 0.5 MiB = 524,288 bytes: "larger than 0.5 MB" (German writes 0,5).
    with translation.override("en"):
        assert (grouped(MAX_PER_HOUR), grouped(MAX_PER_HOUR * 200)) == ("10,000", "2,000,000")
        assert (outbound.megabytes(512 * 1024), outbound.megabytes(32 * 1024**2)) == ("0.5", "32")
    with translation.override("de"):
        assert (grouped(MAX_PER_HOUR), grouped(MAX_PER_HOUR * 200)) == ("10.000", "2.000.000")
        assert (outbound.megabytes(512 * 1024), outbound.megabytes(32 * 1024**2)) == ("0,5", "32")


def test_a_spot_price_above_on_demand_is_skipped_with_the_reason() -> None:
    # Spot is the interruptible discount on the same instance: 35.84 spot beside 6.50
    # on demand (a GH200 row once transcribed that way) is another figure, not a price.
    text = (
        "sku,gpu_count,on_demand_per_hour,spot_per_hour,currency,billing_granularity\n"
        "gh200,1,6.50,35.84,USD,minute\n"
        "h100,1,2.99,1.50,USD,minute\n"
    )
    result = feed.parse(text, now=NOW)
    assert [o.sku for o in result.offers] == ["h100"]
    assert len(result.skipped) == 1 and "above on_demand_per_hour" in result.skipped[0]


def test_no_seeded_offer_has_spot_above_on_demand() -> None:
    import csv
    from pathlib import Path

    seed = Path(__file__).resolve().parents[2] / "pricing/data/offers.csv"
    with seed.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["spot_per_hour"] and row["on_demand_per_hour"]:
                assert float(row["spot_per_hour"]) <= float(row["on_demand_per_hour"]), row
