"""Words for the estimator's codes (verdicts, memory parts, fine-tuning methods) on the
configurator page and the saved reports, so a template says `{{ verdict|verdict_label }}`
instead of an if/elif chain. The msgids are the ones the templates used, so the existing
translations apply."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext_lazy as _

register = template.Library()

DOES_NOT_FIT = "does_not_fit"

VERDICT_LABELS = {"comfortable": _("Fits comfortably"), "tight": _("Fits, but tight")}
VERDICT_WORDS = {"comfortable": _("comfortable"), "tight": _("tight")}
MEMORY_PARTS = {
    "weights": _("Weights on the GPUs"),
    "kv": _("KV cache"),
    "overhead": _("Engine overhead"),
}
MEMORY_BASES = {
    "reported": _("the total the driver reports to engines (published, see the card's sources)."),
    "built": _(
        "the capacity as built in binary GiB; the driver's reported total is not published."
    ),
}
# Product names, the same in every language.
FINETUNE_METHODS = {"qlora": "QLoRA", "lora": "LoRA"}


@register.filter
def verdict_label(verdict: str) -> str:
    """The fit verdict as the page's headline ("Fits comfortably")."""
    return str(VERDICT_LABELS.get(verdict, _("Does not fit")))


@register.filter
def verdict_word(verdict: str) -> str:
    """The fit verdict as a table cell ("comfortable")."""
    return str(VERDICT_WORDS.get(verdict, _("does not fit")))


@register.filter
def fits_answer(verdict: str) -> str:
    """Whether it fits, "yes" or "no" (tight fits)."""
    return str(_("no") if verdict == DOES_NOT_FIT else _("yes"))


@register.filter
def memory_part_label(key: str) -> str:
    """A part of the memory bar (configurator_charts.Segment.key); the remaining part is
    what stays in host memory."""
    return str(MEMORY_PARTS.get(key, _("Offloaded to host memory")))


@register.filter
def memory_basis_note(basis: str) -> str:
    """Which figure a card's device memory is (catalog.hardware.memory_basis)."""
    return str(
        MEMORY_BASES.get(
            basis,
            _("the vendor's figure read as binary GiB (GPU memory is built in binary sizes)."),
        )
    )


@register.filter
def finetune_method_label(method: str) -> str:
    """A fine-tuning method's name (estimator FINETUNE_METHODS); "full" is a word."""
    return FINETUNE_METHODS.get(method) or str(_("Full"))


# estimator.speed.families.FAMILIES in the page's words (the keys are the estimator's).
SPEED_FAMILIES = {
    "nvidia-gddr": _("NVIDIA GeForce / RTX (GDDR, Ampere and newer)"),
    "nvidia-turing": _("NVIDIA Turing (RTX 20, T4)"),
    "nvidia-hbm": _("NVIDIA datacenter (HBM)"),
    "nvidia-lpddr": _("NVIDIA Grace / GB10 / Jetson (LPDDR)"),
    "apple-m1": _("Apple M1 generation"),
    "apple": _("Apple M2 and newer (Pro / Max)"),
    "apple-ultra": _("Apple Ultra (two dies)"),
    "amd-rdna": _("AMD Radeon (RDNA 2 and newer)"),
    "amd-apu": _("AMD Ryzen AI (unified LPDDR5X)"),
    "amd-cdna": _("AMD Instinct (CDNA, HBM)"),
    "intel-arc": _("Intel Arc"),
    "nvidia-pascal-or-older": _("NVIDIA Pascal and older"),
    "nvidia-volta": _("NVIDIA Volta"),
    "amd-gcn": _("AMD GCN (incl. MI50 / MI60)"),
}


@register.filter
def speed_family_label(family: str) -> str:
    """The hardware family of a speed's corrections and range ("Intel Arc")."""
    return str(SPEED_FAMILIES.get(family, _("other or unknown hardware")))
