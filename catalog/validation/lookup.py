"""Catalog look-ups for the published rows, and the page's request for each."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup, Sizing, size_setup
from catalog.validation.cases import Case
from estimator.api import parse_request
from estimator.calibration.models import config_stem
from estimator.calibration.rows import DEVICE_ALIASES
from estimator.engines import llama_family

# GGUF sizes name no device; weights_bytes does not depend on it, the page needs one.
REFERENCE_ACCELERATOR = "H100 SXM5 80GB"
SKIP_MODEL = "model not in catalog"
SKIP_CONFIG = "catalog model has no config"
SKIP_DEVICE = "device not in catalog"
SKIP_PIPELINE = "pipeline parallel (the page runs tensor parallel over every GPU)"


def _compact(text: str) -> str:
    return re.sub(r"[^a-z0-9+]", "", text.lower())


def _without_parenthesis(text: str) -> str:
    return re.sub(r"\s*\(.*\)\s*$", "", text).strip()


@dataclass(frozen=True)
class CatalogIndex:
    """Catalog models and accelerators by the names the data sets use."""

    models: tuple[LLMModel, ...]
    accelerators: tuple[Accelerator, ...]

    def model(self, names: Sequence[str]) -> LLMModel | None:
        """The model a data set names: its repo, repo name or catalog name; else the
        stand-in estimator.validate uses (calibration.models.MODEL_CONFIGS)."""
        for name in names:
            found = self._by_name(name) or self._by_stem(config_stem(name))
            if found is not None:
                return found
        return None

    def _by_name(self, name: str) -> LLMModel | None:
        wanted = name.strip().lower()
        return next(
            (
                m
                for m in self.models
                if wanted
                in (m.hf_repo.lower(), m.hf_repo.lower().rpartition("/")[2], m.name.lower())
            ),
            None,
        )

    def _by_stem(self, stem: str | None) -> LLMModel | None:
        """Config stems are "<org>__<repo>"; CSV rebuilds and "rebuilt__" stems name only the
        repo, which may lack the catalog's suffix (Qwen3-Next-80B-A3B -> ...-Instruct)."""
        if stem is None:
            return None
        org, _, repo = stem.rpartition("__")
        by_repo = self._by_name(f"{org}/{repo}" if org else repo) or self._by_name(repo)
        prefix = repo.lower() + "-"
        return by_repo or next(
            (m for m in self.models if m.hf_repo.lower().rpartition("/")[2].startswith(prefix)),
            None,
        )

    def accelerator(self, name: str) -> Accelerator | None:
        """By name, vendor + name or alias, ignoring case, spaces and punctuation; the
        estimator's DEVICE_ALIASES and a trailing "(...)" note are tried too. A core count
        in the name ("76-core GPU") must appear in the catalog name as well."""
        cores = re.search(r"\d+-core", name)
        tries = (name, DEVICE_ALIASES.get(name.lower(), name), _without_parenthesis(name))
        for attempt in tries:
            for card in self.accelerators:
                keys = {_compact(card.name), _compact(f"{card.vendor} {card.name}")}
                keys |= {_compact(a) for a in card.aliases}
                keys |= {_compact(f"{card.vendor} {a}") for a in card.aliases}
                if _compact(attempt) in keys and (cores is None or cores.group() in card.name):
                    return card
        return None


def catalog_index() -> CatalogIndex:
    """Every model (weights prefetched) and accelerator, curated cards first."""
    models = tuple(LLMModel.objects.prefetch_related("weights").order_by("slug"))
    cards = tuple(Accelerator.objects.order_by("-curated", "vendor", "name"))
    return CatalogIndex(models, cards)


# --- replaying one row through the page ---------------------------------------------------


def setup_for(*, request: Mapping[str, Any], gpus: int) -> Setup | str:
    """The configurator Setup replaying estimator.validate's request (its JSON form) on
    `gpus` devices with the engine settings it names, as the estimator reads them; or why
    the page cannot express it."""
    parsed = parse_request(request)
    workload = parsed.workload
    if not llama_family(parsed.engine.name) and workload.tensor_parallel != gpus:
        return SKIP_PIPELINE
    named = (k for k in request.get("engine", {}) if k != "name")
    options = tuple((k, getattr(parsed.engine, k)) for k in named)
    return Setup(
        quant=parsed.weights.name,
        context_tokens=workload.context_tokens,
        gpus=gpus,
        sequences=workload.concurrent_sequences,
        kv=workload.kv_cache_dtype,
        engine=parsed.engine.name,
        offload_percent=round(workload.offload.fraction * 100),
        prompt_tokens=workload.prompt_tokens,
        output_tokens=workload.output_tokens,
        engine_options=options,
    )


@dataclass(frozen=True)
class Match:
    model: LLMModel
    accelerator: Accelerator
    setup: Setup


def match_case(*, case: Case, catalog: CatalogIndex) -> Match | str:
    """The catalog rows and page setup standing for a published row, or why there are none."""
    model = catalog.model(case.model_names)
    if model is None:
        return SKIP_MODEL
    if not model.config:
        return SKIP_CONFIG
    if case.device_skip:
        return case.device_skip
    accelerator = catalog.accelerator(case.device or REFERENCE_ACCELERATOR)
    if accelerator is None:
        return SKIP_DEVICE
    setup = setup_for(request=case.request, gpus=case.device_count)
    if isinstance(setup, str):
        return setup
    return Match(model, accelerator, setup)


def portal_sizing(*, match: Match) -> Sizing:
    """These catalog rows and setup sized as the configurator page sizes them. Raises
    estimator.api.RequestError."""
    return size_setup(model=match.model, accelerator=match.accelerator, setup=match.setup)


Value = tuple[float, float | None, float | None]  # estimate, low, high


def figure_value(result: Mapping[str, Any], path: str) -> Value | None:
    """A result figure as (estimate, low, high); kv_budget_bytes is the KV capacity's input
    (usable - per-device weights - overhead). None when the result has no such figure."""
    if path == "kv_budget_bytes":
        entry = next(e for e in result["explanation"] if e["figure"] == "kv_cache_capacity_tokens")
        return float(entry["inputs"]["kv_budget_bytes"]), None, None
    value: Any = result
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return None
    if isinstance(value, Mapping):
        return float(value["estimate"]), float(value["low"]), float(value["high"])
    return float(value), None, None
