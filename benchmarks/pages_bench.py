"""Median server time of the configurator page and its results partial, beside a trivial
view, with ~1,000 accelerators in the catalog.

    python benchmarks/pages_bench.py [--cards 1000] [--runs 30]

Builds a throw-away SQLite database (migrations, GLM-4.5-Air from the validation configs,
the MLU590 and `--cards` synthetic accelerators, 7 % of them curated as in the seed data),
then times requests through Django's test client: the whole middleware stack, view,
estimator and template, without a network. Target: the results partial under 30 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
_DB = Path(tempfile.mkdtemp()) / "bench.sqlite3"
os.environ["DATABASE_URL"] = f"sqlite:///{_DB}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sizing_site.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.urls import path  # noqa: E402

from catalog.models import Accelerator, LLMModel, Segment  # noqa: E402
from estimator.validate import rebuilt_config  # noqa: E402
from sizing_site import urls as site_urls  # noqa: E402


def trivial(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


urlpatterns = [*site_urls.urlpatterns, path("trivial/", trivial)]


def seed(cards: int) -> None:
    call_command("migrate", verbosity=0)
    LLMModel.objects.create(
        name="GLM-4.5-Air",
        slug="glm-4-5-air",
        hf_repo="zai-org/GLM-4.5-Air",
        config=rebuilt_config("GLM-4.5-Air"),
    )
    Accelerator.objects.create(
        vendor="Cambricon",
        name="MLU590",
        slug="cambricon-mlu590",
        memory_gb=80,
        bandwidth_gbps=2048,
        fp16_tflops=314,
        segment=Segment.DATACENTER,
        curated=True,
    )
    vendors = ["NVIDIA", "AMD", "Apple", "Intel", "Huawei"]
    Accelerator.objects.bulk_create(
        Accelerator(
            vendor=vendors[i % 5],
            name=f"Card {i}",
            slug=f"card-{i}",
            memory_gb=8 + (i % 24) * 8,
            bandwidth_gbps=200 + (i * 37) % 7800,
            fp16_tflops=20 + (i * 13) % 2000,
            memory_kind="unified" if vendors[i % 5] == "Apple" else "discrete",
            curated=i % 14 == 0,
            price_usd=500 + i,
        )
        for i in range(cards)
    )
    User.objects.create_user("bench", password="bench-pw-123")


def median_ms(client: Client, url: str, runs: int, **headers: str) -> float:
    client.get(url, **headers)  # warm: estimator caches, template loading
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(url, **headers)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (url, response.status_code)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with override_settings(ROOT_URLCONF=__name__, ALLOWED_HOSTS=["testserver"], DEBUG=False):
        seed(args.cards)
        client = Client()
        client.force_login(User.objects.get(username="bench"))
        page = "/en/models/glm-4-5-air/on/cambricon-mlu590/?quant=Q4_K_M&ctx=8192"
        rows = [
            ("trivial view", median_ms(client, "/trivial/", args.runs)),
            ("configurator, full page", median_ms(client, page, args.runs)),
            (
                "configurator, results partial (HTMX)",
                median_ms(client, page, args.runs, HTTP_HX_REQUEST="true"),
            ),
            (
                "configurator, analysis partial (HTMX)",
                median_ms(client, page + "&part=analysis", args.runs, HTTP_HX_REQUEST="true"),
            ),
        ]
    print(f"{Accelerator.objects.count()} accelerators, median of {args.runs} runs")
    for name, ms in rows:
        print(f"  {name:<40} {ms:8.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
