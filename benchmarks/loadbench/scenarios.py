"""What the clients ask for: the configurator's fixed and varied setups (as page URLs and
as API bodies), a row of requests (Page), and a target beside what was measured."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from urllib.parse import urlencode

MODEL, CARD = "llama-3-1-8b-instruct", "nvidia-h100-sxm5-80gb"
CONFIGURE = f"/en/models/{MODEL}/on/{CARD}/?quant=Q4_K_M&ctx=8192"
HTMX = {"HX-Request": "true"}
API_ESTIMATE = "/api/v1/estimate/"
# The "varied" configurator rows: every combination once (the empty quant is "best that fits").
VARIED_CARDS = (CARD, "nvidia-h100-pcie-80gb", "nvidia-geforce-rtx-4090", "amd-instinct-mi300x")
VARIED_CTX = (2048, 4096, 8192, 16384, 32768, 65536)
VARIED_QUANTS = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "")
VARIED_GPUS = (1, 2, 4, 8)
# The pairs users open most, as the configurator's full page: (label, model, card, query).
POPULAR: tuple[tuple[str, str, str, dict[str, str | int]], ...] = (
    ("GLM-4.5-Air on H100 SXM", "glm-4-5-air", CARD, {"quant": "Q4_K_M", "ctx": 8192}),
    ("Qwen3-30B-A3B on RTX 4090", "qwen3-30b-a3b", "nvidia-geforce-rtx-4090", {}),
)


@dataclass(frozen=True)
class Page:
    """A row of the pages table: its URLs (cycled), headers and target, if any."""

    name: str
    paths: tuple[str, ...]
    headers: dict[str, str] = field(default_factory=dict)
    min_pct_of_login: float | None = None
    bodies: tuple[str, ...] = ()  # POSTed with the paths, cycled alike; none: GET


# No database, no template: the p50 reference of every table.
TRIVIAL = Page("trivial view (/health/live/)", ("/health/live/",))
LOGIN = Page("login page", ("/en/accounts/login/",))


def varied_setups() -> list[tuple[str, dict[str, str | int]]]:
    """Distinct setups of MODEL (cards x contexts x weights x GPU counts) as (card, query),
    in a fixed shuffled order so that consecutive requests differ in every parameter."""
    setups: list[tuple[str, dict[str, str | int]]] = [
        (card, {"quant": quant, "ctx": ctx, "gpus": gpus})
        for card in VARIED_CARDS
        for ctx in VARIED_CTX
        for quant in VARIED_QUANTS
        for gpus in VARIED_GPUS
    ]
    random.Random(12).shuffle(setups)
    return setups


def configurator_variants() -> list[str]:
    """The varied setups as configurator URLs."""
    return [f"/en/models/{MODEL}/on/{card}/?" + urlencode(q) for card, q in varied_setups()]


def popular_url(model: str, card: str, query: dict[str, str | int]) -> str:
    """A popular pair's configurator address (no query: the page's defaults)."""
    return f"/en/models/{model}/on/{card}/" + (f"?{urlencode(query)}" if query else "")


def api_items() -> list[str]:
    """The varied setups as POST /api/v1/estimate/ bodies (the catalog shortcut)."""
    return [json.dumps({"model": MODEL, "accelerator": card, **q}) for card, q in varied_setups()]


@dataclass(frozen=True)
class Target:
    """One of the targets beside what was measured."""

    name: str
    goal: str
    measured: str
    ok: bool


def print_targets(targets: list[Target], widths: tuple[int, int, int]) -> None:
    """The targets, each PASS or MISS; `widths` of the name, goal and measured columns."""
    name, goal, measured = widths
    print("targets:")
    for t in targets:
        print(
            f"  {t.name:<{name}} {t.goal:<{goal}} {t.measured:>{measured}}  "
            + ("PASS" if t.ok else "MISS")
        )
