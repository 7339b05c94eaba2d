"""Writes for an organisation's own catalog entries: models imported from a config.json, a
GGUF header or a Hugging Face repository, and accelerators entered by hand. Each row
carries the organisation (catalog's CatalogManager hides it from every other reader), a
random-suffixed slug (so a slug never collides with, nor reveals, another organisation's
entry) and the user who made each change in its history. Refusals are CatalogError (a
message for the form) or ValidationError (by field)."""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from typing import IO, Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from catalog.gguf_header import GGUFHeader, check_fits, read_header
from catalog.hub import hub_repo_read
from catalog.models import Accelerator, LLMModel, ModelWeights, Origin, WeightsFamily
from catalog.services.common import CatalogError
from catalog.services.configs import model_apply_config, model_config_require_size
from catalog.services.hub import (
    HUB_SOURCE,
    HubImport,
    hub_model_mark,
    hub_model_update,
    hub_weights_apply,
)
from catalog.sizing import specs
from estimator.model import ConfigError
from sizing_site.fleet.models import InventoryMachine
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Organization, Role

ACCELERATOR_FIELDS = (
    "vendor",
    "name",
    "memory_gb",
    "memory_gib",
    "memory_kind",
    "bandwidth_gbps",
    "fp16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "tdp_w",
    "interconnect",
    "interconnect_gbps",
    "price_usd",
    "notes",
)
MODEL_EDIT_FIELDS = ("name", "notes")

# GGUF architecture -> the Hugging Face model_type whose parser reads the same layout.
GGUF_MODEL_TYPES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "phi3": "phi3",
    "granite": "granite",
    "olmo2": "olmo2",
}


def _need(tenant: Tenant, role: str) -> None:
    if not tenant.can(role):
        raise PermissionDenied


def _own(tenant: Tenant, row: LLMModel | Accelerator) -> None:
    if row.organization_id != tenant.organization.pk:
        raise PermissionDenied


def _unique_slug(model: type[models.Model], name: str) -> str:
    """slugify(name) plus a random suffix, unique among every organisation's rows."""
    base = slugify(name)[:100].strip("-") or "entry"
    manager: Any = model.all_orgs  # type: ignore[attr-defined]
    while True:
        slug = f"{base}-{secrets.token_hex(4)}"
        if not manager.filter(slug=slug).exists():
            return slug


def _save(row: models.Model, user: Any) -> None:
    row._history_user = user  # type: ignore[attr-defined]
    row.full_clean()
    row.save()


# --- models ----------------------------------------------------------------------------


@transaction.atomic
def own_model_import_config(
    *,
    tenant: Tenant,
    user: Any,
    name: str,
    config: dict[str, Any],
    hf_repo: str = "",
    notes: str = "",
    source: str = "config.json",
) -> LLMModel:
    """A new model of the tenant's organisation from a parsed config.json (editors).

    The config must state its own size (model_config_require_size): a bare
    {"model_type": "llama"} would otherwise parse as a 7B Llama."""
    _need(tenant, Role.EDITOR)
    model = _org_model_new(
        organization=tenant.organization,
        name=name,
        config=config,
        hf_repo=hf_repo,
        notes=notes,
        source=source,
    )
    _save(model, user)
    return model


def _import_note(organization: Organization, source: str) -> str:
    return _("Imported by %(org)s from %(source)s on %(date)s") % {
        "org": organization.name,
        "source": source,
        "date": timezone.localdate().isoformat(),
    }


def _org_model_new(
    *,
    organization: Organization,
    name: str,
    config: dict[str, Any],
    hf_repo: str,
    notes: str,
    source: str,
) -> LLMModel:
    model_config_require_size(config=config)
    model = LLMModel(
        organization=organization,
        name=name.strip(),
        slug=_unique_slug(LLMModel, name),
        hf_repo=hf_repo.strip(),
        notes=notes,
        sources={"config": _import_note(organization, source)},
    )
    model_apply_config(model=model, config=config)
    return model


def org_model_import_hub(
    *,
    organization: Organization,
    user: Any,
    repo_id: str,
    revision: str = "main",
    allow_private: bool = True,
) -> HubImport:
    """The organisation's model of a Hugging Face repository, with its weights rows
    (catalog.services.hub); importing the same repository again updates that row. For
    staff and `import_hf --org`: no role is checked here.

    `allow_private=False` refuses a private repository: the portal's token (HF_TOKEN) may
    read one, and an organisation must not read another's through it."""
    repo = hub_repo_read(repo_id=repo_id, revision=revision)
    if repo.private and not allow_private:
        raise CatalogError(
            _("%(repo)s is private: the portal imports public and gated repositories only.")
            % {"repo": repo.repo_id}
        )
    with transaction.atomic():
        model = (
            LLMModel.objects.for_organization(organization)
            .select_for_update()
            .filter(hf_repo__iexact=repo.repo_id, sources__has_key=HUB_SOURCE)
            .order_by("pk")
            .first()
        )
        created = model is None
        if model is None:
            model = _org_model_new(
                organization=organization,
                name=repo.name,
                config=repo.config,
                hf_repo=repo.repo_id,
                notes="",
                source=repo.url,
            )
        else:
            hub_model_update(model=model, repo=repo)
            model.sources["config"] = _import_note(organization, repo.url)
        hub_model_mark(model=model, repo=repo)
        _save(model, user)
        result = HubImport(model=model, repo=repo, created=created)
        hub_weights_apply(model=model, repo=repo, result=result, user=user)
    return result


def own_model_import_hub(
    *, tenant: Tenant, user: Any, repo_id: str, revision: str = "main"
) -> HubImport:
    """org_model_import_hub for the tenant's organisation (editors), public and gated
    repositories only."""
    _need(tenant, Role.EDITOR)
    return org_model_import_hub(
        organization=tenant.organization,
        user=user,
        repo_id=repo_id,
        revision=revision,
        allow_private=False,
    )


def gguf_config(header: GGUFHeader) -> dict[str, Any]:
    """A Hugging Face style config.json from a GGUF header's llama.cpp metadata
    (<arch>.block_count, .embedding_length, .attention.head_count, ...), or CatalogError
    naming the key that is missing. The vocabulary comes from the token embedding's shape
    (the reader skips the token list)."""
    meta = header.metadata
    arch = header.architecture
    if not arch:
        raise CatalogError(_("The GGUF header has no general.architecture."))

    def num(key: str) -> int | None:
        value = meta.get(f"{arch}.{key}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        # A count must be a positive whole number: NaN, infinity or 2.5 layers is missing.
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            return None
        return int(value) if value > 0 else None

    required = {
        "num_hidden_layers": "block_count",
        "hidden_size": "embedding_length",
        "num_attention_heads": "attention.head_count",
    }
    config: dict[str, Any] = {"model_type": GGUF_MODEL_TYPES.get(arch, arch)}
    for hf_key, gguf_key in required.items():
        value = num(gguf_key)
        if not value:
            raise CatalogError(
                _("The GGUF header has no %(key)s: its size cannot be read.")
                % {"key": f"{arch}.{gguf_key}"}
            )
        config[hf_key] = value
    optional = {
        "intermediate_size": "feed_forward_length",
        "num_key_value_heads": "attention.head_count_kv",
        "max_position_embeddings": "context_length",
        "head_dim": "attention.key_length",
        "vocab_size": "vocab_size",
        "num_experts": "expert_count",
        "num_experts_per_tok": "expert_used_count",
        "moe_intermediate_size": "expert_feed_forward_length",
        "shared_expert_intermediate_size": "expert_shared_feed_forward_length",
    }
    for hf_key, gguf_key in optional.items():
        value = num(gguf_key)
        if value:
            config[hf_key] = value
    tensors = {t.name: t for t in header.tensors}
    embed = tensors.get("token_embd.weight")
    if "vocab_size" not in config and embed is not None and len(embed.shape) == 2:
        config["vocab_size"] = embed.shape[0]
    if "num_experts" in config and config["model_type"] == "llama":
        # llama.cpp writes Mixtral as a "llama" with experts, the expert width as
        # feed_forward_length: Mixtral's own config names them so.
        config["model_type"] = "mixtral"
        config["num_local_experts"] = config.pop("num_experts")
    elif "num_experts" in config and "moe_intermediate_size" not in config:
        config["moe_intermediate_size"] = config.get("intermediate_size")
    config["tie_word_embeddings"] = "output.weight" not in tensors
    # Only finite, positive floats: NaN or infinity cannot be stored as JSON.
    eps = meta.get(f"{arch}.attention.layer_norm_rms_epsilon")
    if isinstance(eps, float) and math.isfinite(eps) and eps > 0:
        config["rms_norm_eps"] = eps
    theta = meta.get(f"{arch}.rope.freq_base")
    if isinstance(theta, float) and math.isfinite(theta) and theta > 0:
        config["rope_theta"] = theta
    return config


def _computed(model: LLMModel, quant: str) -> int | None:
    """The estimator's size of the model at this quant (None when it cannot size it)."""
    try:
        return specs.computed_bytes(specs.model_spec(model), "gguf", quant)
    except (ConfigError, ValueError, KeyError):
        return None


def gguf_header_read(*, stream: IO[bytes], file_size: int | None) -> GGUFHeader:
    """Read only the header (metadata and tensor infos; never the tensor data), and with
    file_size refuse a header whose tensors end past the real file."""
    header = read_header(stream)
    if file_size is not None:
        check_fits(header, file_size)
    return header


@transaction.atomic
def own_model_import_gguf(
    *,
    tenant: Tenant,
    user: Any,
    name: str,
    stream: IO[bytes],
    file_name: str,
    file_size: int | None,
    hf_repo: str = "",
    notes: str = "",
) -> LLMModel:
    """A new model from a GGUF file's header, with a GGUF weights row at the file's quant
    (its exact size from the header), so the model is sizeable at that quant (editors)."""
    _need(tenant, Role.EDITOR)
    header = gguf_header_read(stream=stream, file_size=file_size)
    config = gguf_config(header)
    model = own_model_import_config(
        tenant=tenant,
        user=user,
        name=name or str(header.metadata.get("general.name") or file_name),
        config=config,
        hf_repo=hf_repo,
        notes=notes,
        source=_("the GGUF header of %(file)s") % {"file": file_name},
    )
    weights = ModelWeights(
        model=model,
        format=WeightsFamily.GGUF,
        quant=header.file_type,
        file_bytes=header.file_bytes,
        file_bytes_source=_("GGUF header of %(file)s (exact)") % {"file": file_name},
        tensor_summary=header.tensor_summary,
        gguf_arch=header.architecture,
        origin=Origin.IMPORT,
        computed_bytes=_computed(model, header.file_type),
    )
    _save(weights, user)
    return model


@transaction.atomic
def own_model_update(
    *, tenant: Tenant, user: Any, model: LLMModel, values: Mapping[str, Any]
) -> LLMModel:
    """Change the model's name and notes (editors)."""
    _need(tenant, Role.EDITOR)
    _own(tenant, model)
    for field in MODEL_EDIT_FIELDS:
        if field in values:
            setattr(model, field, values[field])
    _save(model, user)
    return model


@transaction.atomic
def own_model_delete(*, tenant: Tenant, user: Any, model: LLMModel) -> None:
    """Delete the model and its weights rows (admins); its history keeps who did it."""
    _need(tenant, Role.ADMIN)
    _own(tenant, model)
    model._history_user = user  # type: ignore[attr-defined]
    model.delete()


# --- accelerators ----------------------------------------------------------------------


def _assign(accelerator: Accelerator, values: Mapping[str, Any]) -> None:
    for field in ACCELERATOR_FIELDS:
        if field in values:
            setattr(accelerator, field, values[field])


@transaction.atomic
def own_accelerator_create(*, tenant: Tenant, user: Any, values: Mapping[str, Any]) -> Accelerator:
    """A new accelerator of the tenant's organisation (editors); ValidationError by field
    for a figure out of the model's ranges."""
    _need(tenant, Role.EDITOR)
    org = tenant.organization
    accelerator = Accelerator(
        organization=org,
        curated=False,
        origin=Origin.ADMIN,
        sources={"specs": _("Entered by %(org)s") % {"org": org.name}},
    )
    _assign(accelerator, values)
    accelerator.slug = _unique_slug(Accelerator, f"{accelerator.vendor} {accelerator.name}".strip())
    _save(accelerator, user)
    return accelerator


@transaction.atomic
def own_accelerator_update(
    *, tenant: Tenant, user: Any, accelerator: Accelerator, values: Mapping[str, Any]
) -> Accelerator:
    _need(tenant, Role.EDITOR)
    _own(tenant, accelerator)
    _assign(accelerator, values)
    _save(accelerator, user)
    return accelerator


def accelerator_machines(*, tenant: Tenant, accelerator: Accelerator) -> list[str]:
    """The names of the organisation's inventory machines built on this accelerator."""
    return list(
        tenant.scoped(InventoryMachine)
        .filter(accelerator=accelerator)
        .order_by("name")
        .values_list("name", flat=True)
    )


@transaction.atomic
def own_accelerator_delete(*, tenant: Tenant, user: Any, accelerator: Accelerator) -> None:
    """Delete the accelerator (admins). Inventory machines protect their card
    (on_delete=PROTECT): while any uses it, CatalogError names them."""
    _need(tenant, Role.ADMIN)
    _own(tenant, accelerator)
    used = accelerator_machines(tenant=tenant, accelerator=accelerator)
    if used:
        raise CatalogError(
            _(
                "Machines of the inventory use this accelerator: %(names)s. Change or "
                "delete them first."
            )
            % {"names": ", ".join(used)}
        )
    accelerator._history_user = user  # type: ignore[attr-defined]
    try:
        accelerator.delete()
    except models.ProtectedError:
        raise CatalogError(_("Machines of the inventory use this accelerator.")) from None


def validation_errors(exc: ValidationError) -> dict[str, list[str]]:
    """A model's ValidationError by field ("__all__" for the form-wide ones)."""
    if hasattr(exc, "error_dict"):
        return {k: [str(m) for m in v] for k, v in exc.message_dict.items()}
    return {"__all__": [str(m) for m in exc.messages]}
