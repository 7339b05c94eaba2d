"""Median server time of the explore pages beside a trivial view, with ~1,000 accelerators.

    python benchmarks/explore_bench.py [--cards 1000] [--runs 30]

Builds a throw-away SQLite database (migrations, the quant formats of the seed data, every
config in catalog/data/configs as a model, `--cards` synthetic accelerators) and times
requests through Django's test client: middleware, view, sweep and template, without a
network. The first request of each URL is left out (it fills the estimator's and the
sweep's caches); the cold time is printed apart. Target: the model-on-every-GPU page
under 150 ms at the median.
"""

from __future__ import annotations

import argparse
import csv
import json

from _harness import ROOT, synthetic_cards, timed  # sets up Django first
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client, override_settings

from catalog.models import Accelerator, LLMModel, QuantFormat

HARNESS = "_harness"
DATA = ROOT / "catalog/data"


def seed(cards: int) -> None:
    call_command("migrate", verbosity=0)
    with (DATA / "quant_formats.csv").open() as f:
        QuantFormat.objects.bulk_create(
            QuantFormat(
                name=row["name"],
                slug=f"{row['family']}-{row['name']}".lower(),
                family=row["family"],
                bits_per_weight=float(row["bits_per_weight"]),
                quality_rank=int(row["quality_rank"]),
            )
            for row in csv.DictReader(f)
        )
    for config in sorted((DATA / "configs").glob("*.json")):
        slug = config.stem.split("__")[-1].lower().replace(".", "-")
        data = json.loads(config.read_text())
        try:
            json.dumps(data, allow_nan=False)
        except ValueError:
            continue  # a config with NaN is not valid JSON for the database
        LLMModel.objects.create(name=slug, slug=slug, config=data)
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
        model = "/en/models/llama-3-1-8b-instruct/gpus/"
        pages = [
            ("trivial view", "/trivial/", {}),
            ("model on every GPU, full page", model, {}),
            ("model on every GPU, table (HTMX)", model + "?sort=name", {"HTTP_HX_REQUEST": "true"}),
            ("model on every GPU, 32K, all cards", model + "?ctx=32768&show_all=on", {}),
            ("GPU across every model", "/en/gpus/card-3/", {}),
            ("home", "/en/", {}),
            ("search suggestions (HTMX)", "/en/search/?q=card+1", {"HTTP_HX_REQUEST": "true"}),
            (
                "compare, 3 columns",
                "/en/compare/?c1=llama-3-1-8b-instruct:card-1:Q4_K_M:1"
                "&c2=llama-3-1-8b-instruct:card-2:Q4_K_M:2&c3=qwen3-8b:card-3",
                {},
            ),
        ]
        rows = [(name, *timed(client, url, args.runs, **headers)) for name, url, headers in pages]
    print(f"{Accelerator.objects.count()} accelerators, {LLMModel.objects.count()} models,")
    print(f"median of {args.runs} warm runs (first, cold request apart)")
    for name, cold, warm in rows:
        print(f"  {name:<40} {warm:8.1f} ms   (cold {cold:8.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
