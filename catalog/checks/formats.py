"""formats: a weights format appears only on hardware that runs it.

The quant matrix, "best that fits" and the explore tables take a card's checkpoint
formats from catalog.sizing.requests.sizeable_quants, which keeps those the card's
backend and architecture run (estimator.engines.QUANT_HARDWARE, the one capability
table). This check asks that same function for every public card and every engine the
support matrix (EngineSupport rows, editable in admin) runs on it, sizing a reference
MoE model (so that MXFP4, which quantizes experts, is sizeable), and holds the answer
against the vendors' and engines' published support, restated here by vendor:

- NVFP4: NVIDIA Blackwell only (compute capability 10.x and 12.x): "Introducing NVFP4
  for Efficient and Accurate Low-Precision Inference", NVIDIA Technical Blog, 2025-06
  (FP4 in Blackwell's fifth-generation Tensor Cores; Hopper's smallest format is FP8).
- MXFP4 checkpoints: NVIDIA Ampere and later, AMD CDNA 3, CDNA 4 and RDNA 4:
  vllm-project/recipes OpenAI/GPT-OSS.md (H100, H200, B200, MI300X, MI325X, MI355X,
  Radeon AI PRO R9700; A100 through the Marlin MXFP4 MoE kernel). A Cambricon MLU590,
  an Ascend or a TPU lists neither.

GGUF files are not checked here: llama.cpp dequantizes every GGUF type (MXFP4_MOE
included) on each of its backends.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from catalog import hardware
from catalog.checks import Violation
from catalog.models import Accelerator, LLMModel
from catalog.sizing.requests import sizeable_quants
from catalog.sizing.sweeps import card_request
from estimator.api import RequestError
from estimator.engines import runs_gguf
from estimator.weights import HF_FORMATS

NAME = "formats"
# Format -> vendor -> the architectures (start of the catalog's name, lower case) that run
# it, from the sources in the module docstring. A format not listed runs everywhere.
RULES: dict[str, dict[str, tuple[str, ...]]] = {
    "nvfp4": {"nvidia": ("blackwell",)},
    "mxfp4": {
        "nvidia": ("ampere", "ada", "hopper", "blackwell"),
        "amd": ("cdna 3", "cdna 4", "rdna 4"),
    },
}
# The model whose checkpoint formats the check sizes: an MoE with every format sizeable.
REFERENCE_MODELS = ("gpt-oss-20b", "qwen3-30b-a3b", "gpt-oss-120b")


def rule_allows(fmt: str, vendor: str, architecture: str) -> bool:
    """Whether the published support (RULES) has `fmt` run on this vendor's architecture."""
    by_vendor = RULES.get(fmt)
    if by_vendor is None:
        return True
    allowed = by_vendor.get(vendor.strip().casefold(), ())
    arch = architecture.strip().casefold()
    return bool(arch) and arch.startswith(allowed) if allowed else False


def reference_model() -> LLMModel | None:
    models = {m.slug: m for m in LLMModel.objects.filter(slug__in=REFERENCE_MODELS)}
    return next((models[s] for s in REFERENCE_MODELS if s in models and models[s].config), None)


def offered_formats(model: LLMModel, card: Accelerator, choice: hardware.EngineChoice) -> list[str]:
    """The checkpoint formats the pages offer for `model` on `card` under `choice`."""
    try:
        request = card_request(model, card, quant="bf16", context_tokens=4096, choice=choice)
    except (RequestError, ValueError):
        return []
    return sizeable_quants(request, HF_FORMATS)


def check() -> list[Violation]:
    """Every public card x every checkpoint engine on it (module docstring)."""
    model = reference_model()
    if model is None:
        return []
    matrix = hardware.support_matrix()
    cards = Accelerator.objects.filter(memory_gb__gt=0, bandwidth_gbps__gt=0).order_by("slug")
    seen: dict[tuple[str, str, str, str], list[str]] = {}
    out = []
    for card in cards:
        for choice in matrix.engines_for(card):
            if runs_gguf(choice.engine):
                continue
            key = (card.vendor, card.architecture, choice.engine, choice.backend)
            if key not in seen:
                offered = offered_formats(model, card, choice)
                seen[key] = [
                    f for f in offered if not rule_allows(f, card.vendor, card.architecture)
                ]
            for fmt in seen[key]:
                message = _(
                    "%(engine)s (%(backend)s) offers %(format)s on this %(vendor)s "
                    "%(architecture)s card, which does not run it"
                ) % {
                    "engine": choice.engine,
                    "backend": choice.backend,
                    "format": fmt,
                    "vendor": card.vendor,
                    "architecture": card.architecture or _("(architecture unknown)"),
                }
                out.append(Violation(NAME, f"accelerator {card.slug}", message))
    return out
