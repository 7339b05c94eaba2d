"""What a configurator setup nobody asked before costs in sizing work, split by part.

    DATABASE_URL=sqlite:////tmp/newsetup_cat.sqlite3 .venv/bin/python manage.py migrate
    DATABASE_URL=sqlite:////tmp/newsetup_cat.sqlite3 .venv/bin/python manage.py load_catalog
    .venv/bin/python benchmarks/newsetup_bench.py [--db PATH] [--setups 20] [--profile]

On a loaded catalog (the database above unless --db names another), for each model
(Llama 3.1 8B, GLM-4.5-Air, Qwen3-30B-A3B, Llama 3.1 405B) on one card, it sizes
`--setups` distinct setups (context, quant, GPU count, sequences and KV type vary, so
every cache key is new) and prints the mean milliseconds per setup of each part the
configurator pays for a new setup:

    form       the form's and page scope's model facts (rope_context, layer_counts,
               model_context_limit)
    size       size_setup (the main estimate; "best that fits" runs the family ladder)
    smallest   smallest_cards: the model on every curated card, every quant of its family
    matrix     quant_matrix: every quant of the family on one device
    by_ctx     memory_by_context: one sweep or estimate per context point
    recs       model_on_cards at the setup's context (the recommendation boxes: the explore
               ladder on every curated card); a new context misses its cache

The first setup of each model is timed apart ("first"): it pays the per-model work
(parsed config, weights per quant) that every later setup of the model shares.
--profile prints cProfile's top functions over the new setups of all models.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PARTS = ("form", "size", "smallest", "matrix", "by_ctx", "recs")
MODELS = ("llama-3-1-8b-instruct", "glm-4-5-air", "qwen3-30b-a3b", "llama-3-1-405b-instruct")
QUANTS = ("", "Q4_K_M", "Q8_0", "Q3_K_M", "Q6_K")


@dataclass(frozen=True)
class Variant:
    quant: str
    context_tokens: int
    gpus: int
    sequences: int
    kv: str


def variants(count: int, limit: int) -> list[Variant]:
    """`count` distinct setups below the model's context limit (reproducible)."""
    out = []
    for i in range(count):
        context = min(limit, 4096 + 1024 * (i + 1))
        out.append(
            Variant(
                quant=QUANTS[i % len(QUANTS)],
                context_tokens=context,
                gpus=1 + i % 2,
                sequences=1 + (i // 2) % 3,
                kv=("f16", "q8_0")[(i // 3) % 2],
            )
        )
    return out


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="/tmp/newsetup_cat.sqlite3")
    parser.add_argument("--card", default="nvidia-geforce-rtx-4090")
    parser.add_argument("--setups", type=int, default=20)
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--profile", action="store_true")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    os.environ["DATABASE_URL"] = f"sqlite:///{args.db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sizing_site.settings")
    import django

    django.setup()
    from catalog import hardware, sizing
    from catalog.models import Accelerator, LLMModel
    from catalog.sizing.cache import pinned_version
    from catalog.sizing.candidates import default_floor, ladder_down_to, quant_ladder
    from catalog.sizing.specs import layer_counts, model_context_limit, rope_context

    cards = list(Accelerator.objects.filter(curated=True).order_by("vendor", "name"))
    matrix = hardware.support_matrix()
    card = Accelerator.objects.get(slug=args.card)
    sizeable = [c for c in cards if sizing.can_size_accelerator(c)]  # as recommendations()
    rungs = quant_ladder()
    ladder = ladder_down_to(rungs, default_floor(rungs))
    profile = cProfile.Profile()

    def one_setup(model: LLMModel, variant: Variant, times: dict[str, float]) -> None:
        def timed(part: str, work: Callable[[], object]) -> object:
            start = time.perf_counter()
            value = work()
            times[part] = times.get(part, 0.0) + time.perf_counter() - start
            return value

        limit = timed(
            "form",
            lambda: (rope_context(model), layer_counts(model), model_context_limit(model))[2],
        )
        assert isinstance(limit, int)
        setup = sizing.Setup(
            quant=variant.quant,
            context_tokens=variant.context_tokens,
            gpus=variant.gpus,
            sequences=variant.sequences,
            kv=variant.kv,
        )
        sized = timed("size", lambda: sizing.size_setup(model=model, accelerator=card, setup=setup))
        assert isinstance(sized, sizing.Sizing)
        files = sizing.measured_bytes(sizing.measured_weights(model))
        choice = timed(
            "smallest", lambda: sizing.smallest_cards(sized.request, cards, files, matrix)
        )
        assert isinstance(choice, sizing.CardChoice)
        timed("matrix", lambda: sizing.quant_matrix(sized, files, choice))
        timed("by_ctx", lambda: sizing.memory_by_context(sized, limit))
        timed(
            "recs",
            lambda: sizing.model_on_cards(
                model, sizeable, quants=ladder, context_tokens=setup.context_tokens, matrix=matrix
            ),
        )

    print(f"{len(cards)} curated cards; {args.setups} new setups per model on {card.name}")
    print(f"{'model':<28}{'setup':>7}" + "".join(f"{p:>10}" for p in PARTS) + f"{'total':>10}")
    with pinned_version():
        for slug in args.models:
            model = LLMModel.objects.prefetch_related("weights").get(slug=slug)
            limit = model_context_limit(model) or 8192
            first, *rest = variants(args.setups + 1, limit)
            times: dict[str, float] = {}
            one_setup(model, first, times)
            report(slug, "first", times, 1)
            times = {}
            if args.profile:
                profile.enable()
            for variant in rest:
                one_setup(model, variant, times)
            profile.disable()
            report(slug, "new", times, len(rest))
    if args.profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    return 0


def report(slug: str, label: str, times: dict[str, float], count: int) -> None:
    """One line: mean ms per setup of each part and their total."""
    means = [times.get(part, 0.0) / count * 1000 for part in PARTS]
    cells = "".join(f"{ms:10.2f}" for ms in means)
    print(f"{slug:<28}{label:>7}{cells}{sum(means):10.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
