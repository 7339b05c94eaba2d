"""config.json importer: validate with the estimator's parser, then create or update."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext as _

from catalog.limits import has_lone_surrogate, json_depth
from catalog.models import LLMModel, Origin
from catalog.services.common import CatalogError, validation_text
from catalog.sizing import specs
from estimator.model import ConfigError, ModelSpec

# A config.json is a few kB; a megabyte is already an upload mistake.
MAX_CONFIG_BYTES = 1_000_000
# Published configs nest 3-4 levels (a vision or text sub-config holding a rope dict).
MAX_CONFIG_DEPTH = 16
# Where a config states its own size; multimodal configs nest the text model's.
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")
WIDTH_KEYS = ("hidden_size", "n_embd", "d_model")
NESTED_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


@dataclass
class ConfigImport:
    model: LLMModel
    created: bool
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)


def _float_or_text(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


def config_json_loads(text: str | bytes) -> Any:
    """json.loads, but bare NaN/Infinity (Python writes them; some published configs
    contain them, e.g. Nemotron-H's time_step_limit) and numbers past float range (1e999)
    stay text: JSON columns and strict parsers reject them, and the estimator never
    reads those keys."""
    return json.loads(text, parse_constant=str, parse_float=_float_or_text)


def config_parse_text(*, text: str | bytes) -> dict[str, Any]:
    """Pasted or uploaded text -> a JSON object, or CatalogError saying why not.

    Size, NUL and nesting are checked before parsing: json recurses once per level and
    a few thousand brackets raise RecursionError, not a ValueError."""
    size = len(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    if size > MAX_CONFIG_BYTES:
        raise CatalogError(_("A config.json is at most 1 MB."))
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if "\x00" in text:
            raise CatalogError(_("A config.json cannot contain a NUL character."))
        if json_depth(text) > MAX_CONFIG_DEPTH:
            raise CatalogError(
                _("A config.json nests at most %(n)s levels.") % {"n": MAX_CONFIG_DEPTH}
            )
        data = config_json_loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CatalogError(_("Not valid JSON: %(error)s") % {"error": exc}) from None
    if not isinstance(data, dict):
        raise CatalogError(_("A config.json must be a JSON object."))
    if has_lone_surrogate(data):
        raise CatalogError(
            _("A config.json cannot contain an unpaired surrogate (such as \\ud800).")
        )
    return data


def model_config_validate(*, config: Any) -> ModelSpec:
    """Run the estimator's parser; its complaint becomes a CatalogError naming the key."""
    try:
        return specs.spec_from_config(config)
    except ConfigError as exc:
        raise CatalogError(
            _("config.json: %(field)s %(message)s") % {"field": exc.field, "message": exc.message}
        ) from None


def config_states_size(config: dict[str, Any], spec: ModelSpec) -> bool:
    """Whether the config gives its own width and layer count (a key, or a per-layer
    pattern as long as the model is deep), rather than leaving the estimator to fill in
    an architecture's defaults: {"model_type": "llama"} alone parses as a 7B Llama."""
    scopes = [config, *(config[k] for k in NESTED_KEYS if isinstance(config.get(k), dict))]
    width = any(k in scope for scope in scopes for k in WIDTH_KEYS)
    layers = any(k in scope for scope in scopes for k in LAYER_KEYS) or any(
        isinstance(v, list | str) and len(v) == spec.n_layers
        for scope in scopes
        for v in scope.values()
    )
    return width and layers and spec.n_layers > 0 and spec.hidden_size > 0


def model_config_require_size(*, config: dict[str, Any]) -> ModelSpec:
    """model_config_validate, and the config must state its own size (importers)."""
    spec = model_config_validate(config=config)
    if not config_states_size(config, spec):
        raise CatalogError(
            _(
                "config.json must state the model's size: hidden_size and "
                "num_hidden_layers (or a per-layer pattern)."
            )
        )
    return spec


def model_apply_config(*, model: LLMModel, config: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Set config and the fields derived from it; returns {field: (old, new)} of changes."""
    spec = model_config_validate(config=config)
    values: dict[str, Any] = {"config": config, **specs.spec_fields(spec)}
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


def _shape(spec: ModelSpec) -> tuple[str, int, int]:
    return (spec.model_type, spec.n_layers, spec.hidden_size)


def _check_same_model(
    model: LLMModel, config: dict[str, Any], hf_repo: str, spec: ModelSpec, *, replace: bool
) -> None:
    """Refuse an update that would turn one model into another: the repo the import
    names differs from the model's, or (unless `replace`) its architecture changes."""
    named = hf_repo or str(config.get("_name_or_path") or "")
    if model.hf_repo and named.count("/") == 1 and named.lower() != model.hf_repo.lower():
        raise CatalogError(
            _("“%(slug)s” is %(repo)s, but this config is for %(named)s.")
            % {"slug": model.slug, "repo": model.hf_repo, "named": named}
        )
    if replace or not model.config:
        return
    try:
        old = _shape(specs.model_spec(model))
    except ConfigError:
        return  # the stored config no longer parses: replacing it is the repair
    if old != _shape(spec):
        raise CatalogError(
            _(
                "“%(slug)s” is a %(old)s; this config describes a %(new)s. Tick “replace” "
                "to overwrite it."
            )
            % {"slug": model.slug, "old": _shape_text(old), "new": _shape_text(_shape(spec))}
        )


def _shape_text(shape: tuple[str, int, int]) -> str:
    return _("%(type)s with %(layers)s layers of width %(width)s") % {
        "type": shape[0],
        "layers": shape[1],
        "width": shape[2],
    }


@transaction.atomic
def model_import_config(
    *,
    config: dict[str, Any],
    slug: str = "",
    hf_repo: str = "",
    name: str = "",
    replace: bool = False,
) -> ConfigImport:
    """Create or update the model named by slug (or by its repo) from a config.json.

    The config must state its own size, and an update never silently turns a model into
    a different one (another repo, or another architecture unless `replace`)."""
    spec = model_config_require_size(config=config)
    if not slug:
        repo = _identity(config, hf_repo)
        existing = LLMModel.objects.filter(hf_repo__iexact=repo).first()
        slug = existing.slug if existing else slugify(repo.split("/")[1].replace(".", "-"))
        hf_repo = repo
    model = LLMModel.objects.select_for_update().filter(slug=slug).first()
    created = model is None
    if model is not None:
        _check_same_model(model, config, hf_repo, spec, replace=replace)
    else:
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
