"""Import a model from the Hugging Face Hub: its config.json makes or updates the model
(catalog.services.configs), its file list the weights rows (catalog.hub.hub_weights).

`model_import_hub` writes the public catalog (staff, `manage.py import_hf`);
the own catalog's import (sizing_site.owncatalog.services) makes an organisation's row
and then calls `hub_weights_apply` the same way. The Hub is read before any transaction
opens, so no database lock waits on the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext as _

from catalog.hub import FoundWeights, HubRepo, hub_repo_read, hub_weights
from catalog.models import LLMModel, ModelWeights, Origin, WeightsAvailability
from catalog.services.configs import (
    model_apply_config,
    model_config_require_size,
    model_import_config,
)
from catalog.sizing import specs
from estimator.model import ConfigError

# The key in `sources` that marks a model imported from the Hub (its repository at the
# imported commit); a re-import of the same repository finds the row by it.
HUB_SOURCE = "hub"


@dataclass
class HubImport:
    model: LLMModel
    repo: HubRepo
    created: bool
    weights_created: list[str] = field(default_factory=list)
    weights_updated: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def model_import_hub(*, repo_id: str, revision: str = "main") -> HubImport:
    """Create or update the public catalog's model of a Hub repository, with its weights
    rows. HubError (a CatalogError) when the Hub refuses or the config cannot be read."""
    repo = hub_repo_read(repo_id=repo_id, revision=revision)
    with transaction.atomic():
        existing = LLMModel.objects.filter(hf_repo__iexact=repo.repo_id).first()
        result = model_import_config(
            config=repo.config,
            slug=existing.slug if existing else _free_slug(repo),
            hf_repo=existing.hf_repo if existing else repo.repo_id,
            name=repo.name,
        )
        model = result.model
        hub_model_mark(model=model, repo=repo)
        model.sources["config"] = repo.file_url("config.json")
        model.save()
        done = HubImport(model=model, repo=repo, created=result.created)
        hub_weights_apply(model=model, repo=repo, result=done)
    return done


def _free_slug(repo: HubRepo) -> str:
    """The repository's name as a slug; its owner's name joins it when another public
    model has that slug already (two publishers' "Qwen3-8B")."""
    taken = LLMModel.all_orgs.filter
    for candidate in (repo.name, repo.repo_id.replace("/", "-")):
        slug = slugify(candidate.replace(".", "-"))[:110]
        if slug and not taken(slug=slug).exists():
            return slug
    base, n = slugify(repo.repo_id.replace("/", "-").replace(".", "-"))[:100], 2
    while taken(slug=f"{base}-{n}").exists():
        n += 1
    return f"{base}-{n}"


def hub_model_mark(*, model: LLMModel, repo: HubRepo) -> None:
    """Record where the model came from (the repository at the imported commit) and
    whether the Hub gates its weights; the caller saves."""
    model.sources = {**model.sources, HUB_SOURCE: repo.url}
    if repo.gated:
        model.weights_availability = WeightsAvailability.GATED


def hub_model_update(*, model: LLMModel, repo: HubRepo) -> None:
    """A re-import: the config (and the fields counted from it) from the Hub's answer,
    which must state the model's size; the caller saves."""
    model_config_require_size(config=repo.config)
    model_apply_config(model=model, config=repo.config)
    hub_model_mark(model=model, repo=repo)


def hub_weights_apply(
    *, model: LLMModel, repo: HubRepo, result: HubImport, user: Any = None
) -> None:
    """Create or update one weights row per format the repository holds. A row someone
    curated (seed data, admin) is kept as it is and noted; rows of earlier imports are
    updated. `user` is recorded in the rows' history."""
    found, notes = hub_weights(repo)
    result.notes.extend(notes)
    rows = {(w.format, w.quant): w for w in ModelWeights.objects.filter(model=model)}
    for weights in found:
        row = rows.get((weights.format, weights.quant))
        label = f"{weights.format}:{weights.quant}"
        if row is not None and row.origin != Origin.IMPORT:
            result.notes.append(
                _("%(quant)s: the catalog's own row is kept") % {"quant": weights.quant}
            )
            continue
        if row is None:
            row = ModelWeights(
                model=model, format=weights.format, quant=weights.quant, origin=Origin.IMPORT
            )
            result.weights_created.append(label)
        else:
            result.weights_updated.append(label)
        _fill(row, model, repo, weights)
        row._history_user = user  # type: ignore[attr-defined]
        row.save()


def _fill(row: ModelWeights, model: LLMModel, repo: HubRepo, weights: FoundWeights) -> None:
    more = len(weights.files) - 1
    listed = weights.files[0] + (f" (+{more})" if more else "")
    source = f"{repo.url} ({listed})"[:300]
    row.file_bytes = weights.file_bytes
    row.file_bytes_source = source
    row.repo = repo.repo_id
    row.sources = {**row.sources, "file_bytes": source}
    row.computed_bytes = _computed(model, weights)


def _computed(model: LLMModel, weights: FoundWeights) -> int | None:
    """The estimator's size for the row, None where it has no rule for the format."""
    try:
        return specs.computed_bytes(specs.model_spec(model), weights.format, weights.quant)
    except (ConfigError, ValueError, KeyError):
        return None
