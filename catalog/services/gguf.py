"""GGUF importer: a whole file or its header bytes -> ModelWeights with the exact size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any

from django.db import transaction
from django.utils.translation import gettext as _

from catalog.gguf_header import GGUFHeader, check_fits, read_header
from catalog.models import LLMModel, ModelWeights, Origin, WeightsFamily
from catalog.services.common import CatalogError
from catalog.sizing import specs
from estimator.model import ConfigError


@dataclass
class GGUFImport:
    weights: ModelWeights
    header: GGUFHeader
    created: bool
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)


def _repo_hint(metadata: dict[str, Any]) -> str:
    for key in ("general.source.huggingface.repository", "general.base_model.0.repo_url"):
        value = str(metadata.get(key) or "")
        if value:
            return value.removeprefix("https://huggingface.co/").strip("/")
    return ""


def _model_for(header: GGUFHeader, model_slug: str) -> LLMModel:
    """The model named by slug, else the one the header's repo or name points to."""
    if model_slug:
        model = LLMModel.objects.filter(slug=model_slug).first()
        if model is None:
            raise CatalogError(_("No model with slug “%(slug)s”.") % {"slug": model_slug})
        return model
    repo, name = _repo_hint(header.metadata), str(header.metadata.get("general.name") or "")
    candidates = list(LLMModel.objects.filter(hf_repo__iexact=repo)[:2]) if repo else []
    if not candidates and name:
        candidates = list(LLMModel.objects.filter(name__iexact=name)[:2])
    if len(candidates) != 1:
        raise CatalogError(
            _("Which model is this file for? Choose one (the file names “%(name)s”).")
            % {"name": name or repo or "?"}
        )
    return candidates[0]


def _computed(model: LLMModel, quant: str) -> int | None:
    if not model.config:
        return None
    try:
        return specs.computed_bytes(specs.model_spec(model), "gguf", quant)
    except (ConfigError, ValueError, KeyError):
        return None  # the estimator cannot size this pairing; the measured size stands


def gguf_read(*, stream: IO[bytes], file_size: int | None) -> GGUFHeader:
    """Parse the header; with file_size (the real file's size) refuse tensors past it."""
    header = read_header(stream)
    if file_size is not None:
        check_fits(header, file_size)
    return header


@transaction.atomic
def weights_import_gguf(
    *, stream: IO[bytes], file_name: str, file_size: int | None, model_slug: str = ""
) -> GGUFImport:
    """Create or update the model's GGUF weights row from a file or its first megabytes.

    file_size is the size of the real file when known (a whole file, or the browser's
    File.size for a header-only upload); the stored size is the exact one the header
    implies, and a disagreement is an error, not a silent correction.
    """
    header = gguf_read(stream=stream, file_size=file_size)
    model = _model_for(header, model_slug)
    quant = header.file_type
    weights = ModelWeights.objects.filter(
        model=model, format=WeightsFamily.GGUF, quant=quant
    ).first()
    created = weights is None
    if weights is None:
        weights = ModelWeights(
            model=model, format=WeightsFamily.GGUF, quant=quant, origin=Origin.IMPORT
        )
    values = {
        "file_bytes": header.file_bytes,
        "file_bytes_source": _("GGUF header of %(file)s (exact)") % {"file": file_name},
        "tensor_summary": header.tensor_summary,
        "gguf_arch": header.architecture,
        "computed_bytes": _computed(model, quant),
    }
    changed = {}
    for name, value in values.items():
        if getattr(weights, name) != value:
            changed[name] = (getattr(weights, name), value)
            setattr(weights, name, value)
    weights.save()
    return GGUFImport(weights=weights, header=header, created=created, changed=changed)
