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

from _harness import synthetic_cards, timed  # sets up Django first
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client, override_settings

from catalog.models import Accelerator, LLMModel, Segment
from estimator.validate import rebuilt_config

HARNESS = "_harness"


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
    synthetic_cards(cards)
    User.objects.create_user("bench", password="bench-pw-123")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with override_settings(ROOT_URLCONF=HARNESS, ALLOWED_HOSTS=["testserver"], DEBUG=False):
        seed(args.cards)
        client = Client()
        client.force_login(User.objects.get(username="bench"))
        page = "/en/models/glm-4-5-air/on/cambricon-mlu590/?quant=Q4_K_M&ctx=8192"
        rows = [
            ("trivial view", timed(client, "/trivial/", args.runs)[1]),
            ("configurator, full page", timed(client, page, args.runs)[1]),
            (
                "configurator, results partial (HTMX)",
                timed(client, page, args.runs, HTTP_HX_REQUEST="true")[1],
            ),
            (
                "configurator, analysis partial (HTMX)",
                timed(client, page + "&part=analysis", args.runs, HTTP_HX_REQUEST="true")[1],
            ),
        ]
    print(f"{Accelerator.objects.count()} accelerators, median of {args.runs} runs")
    for name, ms in rows:
        print(f"  {name:<40} {ms:8.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
