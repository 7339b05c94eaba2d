"""Hardware families and weight kinds: the groups the speed model's corrections and
ranges are fitted on.

A *family* says which memory technology and generation a device belongs to, because
that, not the bandwidth figure, decides how much of the bandwidth an engine reaches:
HBM parts under llama.cpp reach a smaller share than GDDR cards of the same bandwidth,
unified-memory SoCs differ by generation, and a 1,792 GB/s GDDR7 card is not an HBM
accelerator. The family is read from the architecture and memory type when the catalog
gives them, else from the device name.

A *weights kind* groups GGUF / checkpoint types whose per-weight decoding work is alike
(legacy Q4_0, K-quants, Q8_0, F16, BF16, MXFP4 ...): on the same chip the share of the
bandwidth reached falls as the type gets more compressed, and BF16 is slow where a
backend has no native BF16 path (Vulkan).

Families are "current" (fitted together, held to the accuracy targets) or "older or
rare" (Pascal and older, Volta, GCN, NPUs, TPUs and unknown vendors), which carry their
own ranges; see docs/accuracy.md.
"""

from __future__ import annotations

import re
from functools import cache

# (family, human name); the names are shown on pages next to a speed's range.
FAMILIES = {
    "nvidia-gddr": "NVIDIA GeForce / RTX (GDDR, Ampere and newer)",
    "nvidia-turing": "NVIDIA Turing (RTX 20, T4)",
    "nvidia-hbm": "NVIDIA datacenter (HBM)",
    "nvidia-lpddr": "NVIDIA Grace / GB10 / Jetson (LPDDR)",
    "apple-m1": "Apple M1 generation",
    "apple": "Apple M2 and newer (Pro / Max)",
    "apple-ultra": "Apple Ultra (two dies)",
    "amd-rdna": "AMD Radeon (RDNA 2 and newer)",
    "amd-apu": "AMD Ryzen AI (unified LPDDR5X)",
    "amd-cdna": "AMD Instinct (CDNA, HBM)",
    "intel-arc": "Intel Arc",
    "nvidia-pascal-or-older": "NVIDIA Pascal and older",
    "nvidia-volta": "NVIDIA Volta",
    "amd-gcn": "AMD GCN (incl. MI50 / MI60)",
    "other": "other or unknown hardware",
}
OLDER_OR_RARE = ("nvidia-pascal-or-older", "nvidia-volta", "amd-gcn", "other")

_NVIDIA_RULES = (
    (r"pascal|maxwell|kepler|gtx 10\d0|gtx 9\d0|titan x|tesla [pkm]\d|\bp100\b|\bp40\b", "old"),
    (r"volta|v100|titan v", "nvidia-volta"),
    (r"turing|rtx 20\d0|gtx 16\d0|\bt4\b|quadro rtx|titan rtx", "nvidia-turing"),
    (r"\b(g?[hb][1-3]00|a100|a800|h800|h20|a30)\b|hbm", "nvidia-hbm"),
    (r"gb10\b|dgx spark|jetson|thor", "nvidia-lpddr"),
)


def _nvidia(text: str) -> str:
    for pattern, family in _NVIDIA_RULES:
        if re.search(pattern, text):
            return "nvidia-pascal-or-older" if family == "old" else family
    return "nvidia-gddr"


def _amd(text: str) -> str:
    if re.search(r"gcn|vega|\bmi(25|50|60)\b|gfx90[0-6]", text):
        return "amd-gcn"
    if re.search(r"cdna|instinct|\bmi\d{3}", text):
        return "amd-cdna"
    if re.search(r"strix|ryzen ai|8060s|8050s|890m|780m|rdna 3\.5", text):
        return "amd-apu"
    return "amd-rdna"


def _apple(text: str) -> str:
    if "ultra" in text:
        return "apple-ultra"
    return "apple-m1" if re.search(r"\bm1\b", text) else "apple"


@cache  # called for every card of a sweep: a few regex searches on the same names
def device_family(
    name: str, architecture: str = "", memory_type: str = "", vendor: str = ""
) -> str:
    """The device's family (FAMILIES key) from its vendor, name, architecture and
    memory type, e.g. "NVIDIA GeForce RTX 2080 Ti" -> "nvidia-turing", "NVIDIA H100 SXM"
    -> "nvidia-hbm", "Apple M2 Ultra" -> "apple-ultra", "AMD Instinct MI50" -> "amd-gcn".
    Memory type decides HBM for NVIDIA cards whose name does not (HBM2e, HBM3 ...)."""
    text = " ".join((vendor, name, architecture, memory_type)).lower()
    if "apple" in text or re.search(r"\bm[1-5]\b", text):
        return _apple(text)
    if "nvidia" in text or re.search(r"geforce|quadro|tesla|\brtx\b|\bgtx\b", text):
        family = _nvidia(text)
        if family == "nvidia-gddr" and "hbm" in memory_type.lower():
            return "nvidia-hbm"
        return family
    if re.search(r"\bamd\b|radeon|instinct|ryzen", text):
        return _amd(text)
    if "intel" in text or re.search(r"\barc\b|xe-hpg|xe2|battlemage|alchemist", text):
        return "intel-arc" if re.search(r"\barc\b|xe-hpg|xe2|xe-lpg", text) else "other"
    return "other"


def is_current(family: str) -> bool:
    """Whether a family is current hardware (held to the accuracy targets) rather than
    older or rare (OLDER_OR_RARE)."""
    return family not in OLDER_OR_RARE


@cache  # called for every quant of a sweep
def weights_kind(weights_name: str) -> str:
    """The decoding-work group of a weights type: "bf16", "f16", "q8" (Q8_0 and 8-bit
    K-quant mixes), "q4_0" (legacy Q4_0 / Q4_1 / Q5_0 / Q5_1, incl. ARM repacks),
    "k" (Q2_K .. Q6_K and Unsloth UD mixes below 8 bits), "iq" (i-quants), "mxfp4",
    or "other" (MLX, EXL2, GPTQ, AWQ, FP8: engines with their own kernels)."""
    name = weights_name.strip().lower()
    rules = (
        (r"^(bf16|bfloat16)", "bf16"),
        (r"^(f16|fp16|float16)", "f16"),
        (r"mxfp4", "mxfp4"),
        (r"^(ud-)?q8|8_k_xl", "q8"),
        (r"^q[45]_[01]", "q4_0"),
        (r"^(ud-)?q[2-6]_k", "k"),
        (r"^(ud-)?iq\d", "iq"),
    )
    return next((kind for pattern, kind in rules if re.search(pattern, name)), "other")
