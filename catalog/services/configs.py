"""config.json importer: validate with the estimator's parser, then create or update."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext as _

from catalog import adapters
from catalog.models import LLMModel, Origin
from catalog.services.common import CatalogError, validation_text
from estimator.model import ConfigError, ModelSpec

# A config.json is a few kB; a megabyte is already an upload mistake.
MAX_CONFIG_BYTES = 1_000_000


@dataclass
class ConfigImport:
    model: LLMModel
    created: bool
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)


def config_json_loads(text: str | bytes) -> Any:
    """json.loads, but bare NaN/Infinity (Python writes them; some published configs
    contain them, e.g. Nemotron-H's time_step_limit) become strings: JSON columns and
    strict parsers reject them, and the estimator never reads those keys."""
    return json.loads(text, parse_constant=str)


def config_parse_text(*, text: str | bytes) -> dict[str, Any]:
    """Pasted or uploaded text -> a JSON object, or CatalogError saying why not."""
    if len(text) > MAX_CONFIG_BYTES:
        raise CatalogError(_("A config.json is at most 1 MB."))
    try:
        data = config_json_loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CatalogError(_("Not valid JSON: %(error)s") % {"error": exc}) from None
    if not isinstance(data, dict):
        raise CatalogError(_("A config.json must be a JSON object."))
    return data


def model_config_validate(*, config: Any) -> ModelSpec:
    """Run the estimator's parser; its complaint becomes a CatalogError naming the key."""
    try:
        return adapters.spec_from_config(config)
    except ConfigError as exc:
        raise CatalogError(
            _("config.json: %(field)s %(message)s") % {"field": exc.field, "message": exc.message}
        ) from None


def model_apply_config(*, model: LLMModel, config: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Set config and the fields derived from it; returns {field: (old, new)} of changes."""
    spec = model_config_validate(config=config)
    values: dict[str, Any] = {"config": config, **adapters.spec_fields(spec)}
    if model.max_context_tokens is None:
        values["max_context_tokens"] = spec.max_context_tokens or None
    changed = {}
    for name, value in values.items():
        old = getattr(model, name)
        if old != value:
            changed[name] = (old, value)
            setattr(model, name, value)
    return changed


def _identity(config: dict[str, Any], hf_repo: str) -> str:
    repo = hf_repo or str(config.get("_name_or_path") or "")
    if repo.count("/") != 1:
        raise CatalogError(
            _("Name the model: give its slug or Hugging Face repo (organisation/name).")
        )
    return repo


@transaction.atomic
def model_import_config(
    *, config: dict[str, Any], slug: str = "", hf_repo: str = "", name: str = ""
) -> ConfigImport:
    """Create or update the model named by slug (or by its repo) from a config.json."""
    model_config_validate(config=config)
    if not slug:
        repo = _identity(config, hf_repo)
        existing = LLMModel.objects.filter(hf_repo__iexact=repo).first()
        slug = existing.slug if existing else slugify(repo.split("/")[1].replace(".", "-"))
        hf_repo = repo
    model = LLMModel.objects.select_for_update().filter(slug=slug).first()
    created = model is None
    if model is None:
        if not (name or hf_repo):
            raise CatalogError(_("No model with slug “%(slug)s”.") % {"slug": slug})
        model = LLMModel(
            slug=slug,
            name=name or hf_repo.split("/")[1],
            hf_repo=hf_repo,
            origin=Origin.IMPORT,
            needs_review=True,
        )
    changed = model_apply_config(model=model, config=config)
    try:
        model.full_clean()
    except ValidationError as exc:
        raise CatalogError(validation_text(exc)) from None
    model.save()
    return ConfigImport(model=model, created=created, changed=changed)
