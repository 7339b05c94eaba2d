"""What the configurator's form offers for an engine: the weights formats it loads, grouped
and in quality order, and the CPU offload settings it has.

Weights formats are listed least compressed first. The order is the quality rank of
catalog/data/quant_formats.csv (highest first); an uploader recipe the CSV does not rank
(bartowski's *_L / Q3_K_XL, unsloth's UD-*: estimator.weights.gguf_types RECIPE_BASE and
UD_RECIPES) sits just above the llama.cpp file type it is built on, as it keeps some tensors
wider than that type. Groups are the bits of the main type (Q4_K_M: 4-bit).

Which engine loads which format is estimator.launch.refusal's business (the one place
that decides), and which offload settings an engine has is estimator.engines'; this module
only asks them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _

from estimator import launch, quality
from estimator.engines import ENGINE_TABLE, engine_capability, engine_label, runs_on_hardware

# (bits, formats least compressed first); bits "" = unquantized (16 or 32 bits).
GGUF_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("F32", "F16", "BF16")),
    ("8", ("UD-Q8_K_XL", "Q8_0")),
    ("6", ("UD-Q6_K_XL", "Q6_K_L", "Q6_K")),
    ("5", ("UD-Q5_K_XL", "Q5_K_L", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0")),
    (
        "4",
        (
            *("UD-Q4_K_XL", "Q4_K_L", "Q4_K_M", "Q4_K_S", "Q4_1"),
            *("IQ4_XS", "IQ4_NL", "Q4_0", "MXFP4_MOE"),
        ),
    ),
    (
        "3",
        (
            *("Q3_K_XL", "Q3_K_L", "UD-Q3_K_XL", "Q3_K_M"),
            *("IQ3_M", "IQ3_S", "Q3_K_S", "IQ3_XS", "IQ3_XXS"),
        ),
    ),
    (
        "2",
        (
            *("UD-Q2_K_XL", "Q2_K_L", "Q2_K", "Q2_K_S"),
            *("UD-IQ2_M", "IQ2_M", "IQ2_S", "IQ2_XS", "UD-IQ2_XXS", "IQ2_XXS"),
        ),
    ),
    ("1", ("UD-IQ1_M", "IQ1_M", "UD-IQ1_S", "IQ1_S")),
)
HF_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("fp32", "bf16", "fp16")),
    ("8", ("fp8", "w8a8")),
    ("4", ("nvfp4", "awq-int4", "gptq-int4", "mxfp4")),
)
GGUF_ORDER: tuple[str, ...] = tuple(q for _bits, names in GGUF_GROUPS for q in names)
HF_ORDER: tuple[str, ...] = tuple(q for _bits, names in HF_GROUPS for q in names)
# GGUF file types that quantize routed experts only: nothing to size on a dense model.
MOE_ONLY_QUANTS = ("MXFP4_MOE",)
# The form's offload fields, by the estimator Offload field each sets.
FORM_OFFLOAD_FIELDS = {
    "fraction": "offload",
    "layers": "layers",
    "moe_experts": "moe",
    "moe_layers": "moe_layers",
}
ALL_OFFLOAD_FIELDS = tuple(FORM_OFFLOAD_FIELDS.values())
# The CPU offload settings each engine has (EngineCapability.offload), as form fields:
# llama.cpp keeps the first layers (-ngl) or MoE experts (--cpu-moe, --n-cpu-moe N) in host
# memory; Ollama layers (num_gpu); vLLM and SGLang a share of the weights
# (--cpu-offload-gb), vLLM also the experts first. TensorRT-LLM documents none; MLX runs on
# unified memory, where nothing is offloaded.
OFFLOAD_FIELDS: dict[str, tuple[str, ...]] = {
    engine.name: tuple(FORM_OFFLOAD_FIELDS[field] for field in engine.offload)
    for engine in ENGINE_TABLE
}
# How the page names an engine's own weights format (EngineCapability.weight_formats).
WEIGHTS_FAMILY_NAMES = {"gguf": "GGUF", "mlx": "MLX", "hf": "Hugging Face"}


def family_name(engine: str) -> str:
    """How the page names the weights an engine loads."""
    return WEIGHTS_FAMILY_NAMES[engine_capability(engine).weight_formats[0]]


def group_label(family: str, bits: str) -> str:
    if not bits:
        return _("%(family)s · unquantized") % {"family": family}
    return _("%(family)s · %(bits)s-bit") % {"family": family, "bits": bits}


def loads(engine: str, backend: str, quant: str) -> bool:
    """Whether `engine` on `backend` loads `quant` weights (estimator.launch.refusal with
    the cache type every engine has)."""
    fmt = "gguf" if quant in GGUF_ORDER else "hf"
    reason = launch.refusal(
        engine=engine, weights_format=fmt, quant=quant, backend=backend, kv="f16"
    )
    return reason is None


# The quality tiers' names on the pages (estimator.quality.TIERS).
TIER_LABELS = {
    "recommended": gettext_lazy("recommended"),
    "good": gettext_lazy("good"),
    "degraded": gettext_lazy("degraded"),
    "experimental": gettext_lazy("experimental"),
}


def tier_label(quant: str) -> str:
    """The translated quality tier of a weights format ("" when the tier table does not
    know it)."""
    tier = quality.tier_of(quant)
    return str(TIER_LABELS[tier]) if tier else ""


def option_label(quant: str) -> str:
    """A format as a select offers it, with its tier: "Q4_K_M · recommended"."""
    tier = tier_label(quant)
    return _("%(quant)s · %(tier)s") % {"quant": quant, "tier": tier} if tier else quant


def _grouped(
    groups: Iterable[tuple[str, Sequence[str]]], family: str, keep: set[str]
) -> list[tuple[str, list[tuple[str, str]]]]:
    out = []
    for bits, names in groups:
        options = [(q, option_label(q)) for q in names if q in keep]
        if options:
            out.append((group_label(family, bits), options))
    return out


@dataclass(frozen=True)
class WeightsChoices:
    """The weights formats the form offers: `groups` for the select (optgroups), `formats`
    the same names in order."""

    groups: list[tuple[str, list[tuple[str, str]]]]
    formats: tuple[str, ...]


def weights_choices(
    engine: str | None, backend: str | None, *, moe: bool, architecture: str | None = None
) -> WeightsChoices:
    """The formats `engine` loads on `backend` (every format, in both families, when the
    engine is unknown or does not run on the card: the form says so on the engine); with
    the card's `architecture`, only the checkpoints it runs (estimator.engines
    .runs_on_hardware: NVFP4 on Blackwell only). Computed once per engine, backend,
    architecture, kind of model and language (the group labels are translated): the rules
    it reads (estimator.launch.refusal, the format orders) are code."""
    return _weights_choices(engine, backend, moe, architecture, get_language())


@functools.lru_cache(maxsize=512)
def _weights_choices(
    engine: str | None,
    backend: str | None,
    moe: bool,
    architecture: str | None,
    language: str | None,
) -> WeightsChoices:
    quants = [*GGUF_ORDER, *HF_ORDER]
    if not moe:
        quants = [q for q in quants if q not in MOE_ONLY_QUANTS]
    if engine is None or backend is None:
        groups = [
            *_grouped(GGUF_GROUPS, "GGUF", set(quants)),
            *_grouped(HF_GROUPS, "Hugging Face", set(quants)),
        ]
    else:
        keep = {q for q in quants if loads(engine, backend, q)}
        if architecture is not None:
            keep = {q for q in keep if runs_on_card(q, backend, architecture)}
        family = family_name(engine)
        groups = [*_grouped(GGUF_GROUPS, family, keep), *_grouped(HF_GROUPS, family, keep)]
    return WeightsChoices(groups, tuple(q for _label, options in groups for q, _ in options))


def runs_on_card(quant: str, backend: str, architecture: str) -> bool:
    """A GGUF quant runs wherever its engine does; a checkpoint where the card's
    architecture has the kernels (estimator.engines.runs_on_hardware)."""
    return quant in GGUF_ORDER or runs_on_hardware(quant, backend, architecture)


def quant_note(engine: str, quant: str, *, card: str = "", backend: str = "") -> str:
    """Why the form dropped a format: the engine does not load it, or (the engine does)
    the card has no kernels for it."""
    if card and backend and loads(engine, backend, quant):
        return _("%(quant)s does not run on %(card)s: showing the best that fits instead.") % {
            "quant": quant,
            "card": card,
        }
    return _("%(engine)s does not load %(quant)s: showing the best that fits instead.") % {
        "engine": engine_label(engine),
        "quant": quant,
    }
