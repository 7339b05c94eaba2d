"""Reads for the catalog pages: filtered lists and detail rows, with the related rows each
page shows fetched up front so query counts stay flat as the catalog grows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet

from catalog.models import Accelerator, LLMModel, ModelWeights
from catalog.scoping import Owner

PAGE_SIZE = 50


def model_list(
    *,
    q: str = "",
    family: str = "",
    publisher: str = "",
    architecture: str = "",
    weights_availability: str = "",
) -> QuerySet[LLMModel]:
    models = LLMModel.objects.annotate(weights_count=Count("weights")).defer("config")
    if q:
        models = models.filter(
            Q(name__icontains=q)
            | Q(family__icontains=q)
            | Q(hf_repo__icontains=q)
            | Q(publisher__icontains=q)
            | Q(slug__icontains=q)
        )
    exact = {
        "family": family,
        "publisher": publisher,
        "architecture": architecture,
        "weights_availability": weights_availability,
    }
    models = models.filter(**{k: v for k, v in exact.items() if v})
    return models.order_by("family", "name")


def model_families() -> list[str]:
    return list(
        LLMModel.objects.exclude(family="")
        .values_list("family", flat=True)
        .distinct()
        .order_by("family")
    )


def model_publishers() -> list[str]:
    return list(
        LLMModel.objects.exclude(publisher="")
        .values_list("publisher", flat=True)
        .distinct()
        .order_by("publisher")
    )


def model_detail(*, slug: str) -> LLMModel:
    """Raises LLMModel.DoesNotExist; the weights come in the same round trip set."""
    weights = ModelWeights.objects.order_by("format", "quant")
    return LLMModel.objects.prefetch_related(Prefetch("weights", queryset=weights)).get(slug=slug)


def accelerator_list(
    *,
    q: str = "",
    vendor: str = "",
    segment: str = "",
    memory_min_gb: float | None = None,
    curated: bool | None = None,
) -> QuerySet[Accelerator]:
    accelerators = Accelerator.objects.all()
    if q:
        # aliases is a JSON list; a text match on its serialised form finds "RTX 4090".
        accelerators = accelerators.filter(
            Q(name__icontains=q) | Q(vendor__icontains=q) | Q(aliases__icontains=q)
        )
    if vendor:
        accelerators = accelerators.filter(vendor=vendor)
    if segment:
        accelerators = accelerators.filter(segment=segment)
    if memory_min_gb is not None:
        # Accelerator.capacity_gib: the capacity as built, else the vendor's figure.
        accelerators = accelerators.filter(
            Q(memory_gib__gte=memory_min_gb)
            | Q(memory_gib__isnull=True, memory_gb__gte=memory_min_gb)
        )
    if curated is not None:
        accelerators = accelerators.filter(curated=curated)
    return accelerators.order_by("-curated", "vendor", "name")


def accelerator_vendors() -> list[str]:
    return list(Accelerator.objects.values_list("vendor", flat=True).distinct().order_by("vendor"))


def accelerator_detail(*, slug: str) -> Accelerator:
    return Accelerator.objects.get(slug=slug)


def visible_models(organizations: Sequence[Owner]) -> QuerySet[LLMModel]:
    """The public models plus the given organisations' own (the caller's memberships)."""
    return LLMModel.objects.visible_to(organizations)


def visible_accelerators(organizations: Sequence[Owner]) -> QuerySet[Accelerator]:
    """The public accelerators plus the given organisations' own."""
    return Accelerator.objects.visible_to(organizations)


def organizations_with_own_rows() -> frozenset[int]:
    """The keys of the organisations that own a model or a card: only they see anything
    but the public catalog (visible_models, visible_accelerators). Keys only, no row of
    theirs leaves here."""
    owned = {"organization": None}
    models = LLMModel.all_orgs.exclude(**owned).order_by().values_list("organization", flat=True)
    cards = Accelerator.all_orgs.exclude(**owned).order_by().values_list("organization", flat=True)
    return frozenset(models.union(cards))


def visible_models_among(organization_keys: QuerySet[Any] | None) -> QuerySet[LLMModel]:
    """visible_models for the organisations whose keys the subquery `organization_keys`
    selects (the caller's memberships, as the web layer builds it; None: none): the
    memberships are read inside the rows' own query, so a caller of no organisation costs
    no extra query."""
    if organization_keys is None:
        return LLMModel.objects.all()
    own = LLMModel.all_orgs.filter(organization__in=organization_keys)
    return LLMModel.objects.public() | own


def visible_accelerators_among(
    organization_keys: QuerySet[Any] | None,
) -> QuerySet[Accelerator]:
    """visible_accelerators for the organisations `organization_keys` selects, in one
    query with the rows (visible_models_among)."""
    if organization_keys is None:
        return Accelerator.objects.all()
    own = Accelerator.all_orgs.filter(organization__in=organization_keys)
    return Accelerator.objects.public() | own
