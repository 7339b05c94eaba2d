"""The configurator's catalog rows, read once per catalog version in each process: the
model and card a page names (configuration_rows), the curated cards every new setup is
sized against and the engine support matrix. Every value here is shared between requests
and threads, so nothing may change it; a catalog edit starts a new catalog version
(catalog.signals), which every key below includes (remembered_here)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Prefetch

from catalog import hardware
from catalog import selectors as catalog_selectors
from catalog.models import Accelerator, LLMModel, ModelWeights
from catalog.scoping import Owner
from catalog.sizing.cache import remembered_here


def configuration_rows(
    *, model_slug: str, accelerator_slug: str, organizations: Sequence[Owner] = ()
) -> tuple[LLMModel, Accelerator]:
    """The public rows, or the given organisations' own (the viewer's memberships: a
    private slug is unknown to anyone else). They are read before any shared-cache lookup,
    and every cache key after names the rows by primary key, so an organisation's rows are
    never served from an entry another viewer could reach. Each row (the model with its
    weights) is kept in this process under the catalog version, keyed by its slug and the
    organisations it was looked up for: the pages of a model or card read the same rows
    (two queries, and the model's config parsed, saved per request). Raises
    LLMModel.DoesNotExist or Accelerator.DoesNotExist (not kept: an unknown slug is looked
    up again)."""
    owners = tuple(sorted(organization.pk for organization in organizations))
    model = remembered_here(
        "configurator-model", (model_slug, owners), lambda: _model_row(model_slug, organizations)
    )
    card = remembered_here(
        "configurator-card",
        (accelerator_slug, owners),
        lambda: catalog_selectors.visible_accelerators(organizations).get(slug=accelerator_slug),
    )
    return model, card


def _model_row(slug: str, organizations: Sequence[Owner]) -> LLMModel:
    weights = Prefetch("weights", queryset=ModelWeights.objects.order_by("format", "quant"))
    return catalog_selectors.visible_models(organizations).prefetch_related(weights).get(slug=slug)


def curated_accelerators() -> list[Accelerator]:
    """The curated cards (catalog rows only): every setup the cache has not seen yet sizes
    against them. Kept in this process under the catalog version (remembered_here), as is
    the support matrix: some fifty rows that every new setup would otherwise fetch and
    unpickle from the shared cache. Nothing changes them."""
    return remembered_here(
        "configurator-curated",
        (),
        lambda: list(Accelerator.objects.filter(curated=True).order_by("vendor", "name")),
    )


def support_matrix() -> hardware.SupportMatrix:
    """hardware.support_matrix() (two queries), kept in this process (remembered_here)."""
    return remembered_here("configurator-matrix", (), hardware.support_matrix)
