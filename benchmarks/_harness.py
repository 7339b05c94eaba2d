"""Shared set-up for the page benchmarks: a throw-away SQLite database, Django, a trivial
view to compare against, synthetic accelerators and a timer.

Import this module before anything from Django or the project: it points DATABASE_URL at
a scratch file and calls django.setup().
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DATABASE_URL"] = f"sqlite:///{Path(tempfile.mkdtemp()) / 'bench.sqlite3'}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sizing_site.settings")

import django  # noqa: E402

django.setup()

from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import path  # noqa: E402

from catalog.models import Accelerator  # noqa: E402
from sizing_site import urls as site_urls  # noqa: E402


def trivial(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


# ROOT_URLCONF for the benchmarks: the site plus /trivial/.
urlpatterns = [*site_urls.urlpatterns, path("trivial/", trivial)]


def synthetic_cards(cards: int) -> None:
    """`cards` accelerators across five vendors, 7 % of them curated as in the seed data."""
    vendors = ["NVIDIA", "AMD", "Apple", "Intel", "Huawei"]
    # Architectures the engine support matrix names, so every card gets its engine.
    architectures = ["Ampere", "RDNA 3", "Apple M2", "Xe-HPG", "Da Vinci"]
    Accelerator.objects.bulk_create(
        Accelerator(
            vendor=vendors[i % 5],
            architecture=architectures[i % 5],
            memory_type="HBM3" if i % 3 == 0 else "GDDR6",
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


def timed(client: Client, url: str, runs: int, **headers: str) -> tuple[float, float]:
    """(cold ms of the first request, median ms of the next `runs`)."""
    start = time.perf_counter()
    assert client.get(url, **headers).status_code == 200, url
    cold = time.perf_counter() - start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(url, **headers)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (url, response.status_code)
    return cold * 1000, statistics.median(times) * 1000
