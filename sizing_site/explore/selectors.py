"""Reads for the explore pages and their sweeps: a model across every card, a card across
every model, search and the home page's pairs.

A table has one selector (model_card_table_for, card_model_table_for) that the page
(sizing_site.explore.views) and the sweep endpoint (sizing_site.explore.sweeps_api) both
call with the same typed query (sizing_site.explore.queries), so a row on the page is the
row of the sweep; each only renders it. The selector reads the candidate set in a fixed
number of queries, builds the table in Python (sizing_site.explore.tables: the sweep
behind it covers every card anyway and is cached per model, context and ladder by
catalog.sizing), keeps it in the shared sizing cache, and pages it. The query count
stays flat however large the catalog grows, and a warm table reads nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from django.utils.translation import get_language

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.scoping import Owner
from catalog.sizing import candidates
from catalog.sizing.cache import remembered
from sizing_site.explore import tables
from sizing_site.explore.costs import Offer, cheapest_offers, offers_key, unit_powers
from sizing_site.explore.queries import CardModelsQuery, ModelCardsQuery
from sizing_site.explore.search import SearchResults, search_catalog
from sizing_site.explore.tables import CardTable, ContextOutlook, ModelTable, TablePage

T = TypeVar("T")


@dataclass
class ExploreViewer:
    """Whose rows a table holds (the public catalog and the `organizations`' own), and
    what its tables read, each at most once a request and only when needed: a warm page
    reads the offers (prices change without a catalog edit) and the ladder alone."""

    organizations: Sequence[Owner] = field(default_factory=list)

    @functools.cached_property
    def cards(self) -> list[Accelerator]:
        return candidates.sweep_accelerators(self.organizations)

    @functools.cached_property
    def vendors(self) -> list[str]:
        """The cards' vendors (the model page's filter), cached; the cards read on a miss
        are the ones the table reads."""
        return candidates.card_vendors(lambda: self.cards, self.organizations)

    @functools.cached_property
    def models(self) -> list[LLMModel]:
        return candidates.explore_models(self.organizations)

    @functools.cached_property
    def ladder(self) -> list[candidates.Rung]:
        return candidates.quant_ladder()

    @functools.cached_property
    def offers(self) -> dict[int, Offer]:
        return cheapest_offers()

    @functools.cached_property
    def matrix(self) -> hardware.SupportMatrix:
        return hardware.support_matrix()


def remembered_for(
    namespace: str, parts: tuple[object, ...], viewer: ExploreViewer, compute: Callable[[], T]
) -> T:
    """The one place the explore tables (and the pages' rendered results, which hold
    nothing but a table's figures) are cached in the shared sizing cache: per catalog
    version (remembered), `parts` (the row, the prices and the typed query it is computed
    from: never the raw query, so a parameter the form ignores makes no new entry), the
    viewer's organisations (their own rows stay in their members' entries) and the
    language (a skipped model's reason is text)."""
    orgs = candidates.organization_keys(viewer.organizations)
    return remembered(f"explore:{namespace}", (*parts, orgs, get_language()), compute)


def model_card_table_for(
    *, model: LLMModel, query: ModelCardsQuery, viewer: ExploreViewer
) -> CardTable:
    """`model` on every card the viewer sees, at `query`'s filters and sort, and the
    query's page of its rows: the model page's table (explore:model-gpus) and the model
    sweep's. Raises estimator.api.RequestError (e.g. a context the model cannot read)."""

    def build() -> CardTable:
        return tables.model_card_table(
            model=model,
            accelerators=viewer.cards,
            quants=query.quants,
            context_tokens=query.ctx,
            q=query.q,
            vendor=query.vendor,
            memory_min_gb=query.memory_min_gb,
            show_all=query.show_all,
            sort=query.sort,
            offers=viewer.offers,
            powers=unit_powers(organizations=viewer.organizations),
            matrix=viewer.matrix,
        )

    parts = (model.pk, offers_key(viewer.offers), query.table_key())
    table = remembered_for("model-cards", parts, viewer, build)
    return replace(table, page=TablePage.of(table.rows, number=query.page, size=query.page_size))


def context_outlooks_for(
    *, model: LLMModel, query: ModelCardsQuery, viewer: ExploreViewer, contexts: Sequence[int]
) -> list[ContextOutlook]:
    """The model table's card filters at each of `contexts` (the model page's FAQ): how
    many cards fit, the smallest and the fastest; the model's limit past it."""
    max_context = sizing.model_context_limit(model) or 0
    filters = (query.quants, query.q, query.vendor, query.memory_min_gb)

    def build() -> list[ContextOutlook]:
        return tables.context_outlooks(
            model=model,
            accelerators=viewer.cards,
            quants=query.quants,
            contexts=contexts,
            max_context=max_context,
            q=query.q,
            vendor=query.vendor,
            memory_min_gb=query.memory_min_gb,
            matrix=viewer.matrix,
        )

    parts = (model.pk, tuple(contexts), max_context, filters)
    return remembered_for("model-outlooks", parts, viewer, build)


def card_model_table_for(
    *, card: Accelerator, query: CardModelsQuery, viewer: ExploreViewer
) -> ModelTable:
    """`card` across every model the viewer sees, at `query`'s filters and sort, and the
    query's page of its rows and of its family groups: the card page's table
    (explore:gpu-models, which shows the families) and the card sweep's (the rows)."""

    def build() -> ModelTable:
        return tables.card_model_table(
            accelerator=card,
            models=viewer.models,
            quants=query.quants,
            context_tokens=query.ctx,
            q=query.q,
            show_all=query.show_all,
            sort=query.sort,
            offers=viewer.offers,
            powers=unit_powers([card.pk], viewer.organizations),
            matrix=viewer.matrix,
        )

    # The card's own offer is all of the prices its table reads.
    parts = (card.pk, viewer.offers.get(card.pk), query.table_key())
    table = remembered_for("card-models", parts, viewer, build)
    number, size = query.page, query.page_size
    return replace(
        table,
        page=TablePage.of(table.rows, number=number, size=size),
        family_page=TablePage.of(table.groups, number=number, size=size),
    )


def search(*, q: str, limit: int = 8, organizations: Sequence[Owner] = ()) -> SearchResults:
    """Models and cards matching `q` by name, alias or fuzzily, and "MODEL on GPU" pairs
    (sizing_site.explore.search); the public name index is cached per catalog version, the
    `organizations`' own rows are read afresh."""
    return search_catalog(q, limit=limit, organizations=organizations)


# Pairs people ask about first: (model slug, accelerator slug, context tokens). Each pair
# exists in the seed data (tests/explore checks it against load_catalog); a pair whose
# rows an admin deleted simply drops off the home page.
POPULAR_PAIRS: tuple[tuple[str, str, int], ...] = (
    ("llama-3-1-8b-instruct", "nvidia-geforce-rtx-4090", 8192),
    ("qwen3-30b-a3b", "nvidia-geforce-rtx-3090", 32768),
    ("gpt-oss-20b", "nvidia-geforce-rtx-5090", 32768),
    ("llama-3-3-70b-instruct", "apple-macbook-pro-m4-max-40-core-gpu-128gb", 8192),
    ("qwen3-32b", "amd-radeon-rx-7900-xtx", 8192),
    ("gpt-oss-120b", "nvidia-h100-pcie-80gb", 32768),
    ("deepseek-r1", "nvidia-h200-sxm-141gb", 8192),
    ("qwen3-235b-a22b", "amd-ryzen-ai-max-395-radeon-8060s", 8192),
)


@dataclass(frozen=True)
class Pair:
    model: LLMModel
    accelerator: Accelerator
    context_tokens: int


def popular_pairs() -> list[Pair]:
    """POPULAR_PAIRS whose rows exist, in two queries."""
    models = LLMModel.objects.exclude(config={}).only("slug", "name")
    models_by_slug = {m.slug: m for m in models.filter(slug__in={p[0] for p in POPULAR_PAIRS})}
    cards = Accelerator.objects.only("slug", "name", "vendor")
    cards_by_slug = {a.slug: a for a in cards.filter(slug__in={p[1] for p in POPULAR_PAIRS})}
    return [
        Pair(models_by_slug[m], cards_by_slug[a], ctx)
        for m, a, ctx in POPULAR_PAIRS
        if m in models_by_slug and a in cards_by_slug
    ]
