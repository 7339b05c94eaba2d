"""The imputed FP16 rate of the configurator's card, for the speed section's sentence
"compute rate imputed from N GPU cores x clock" (catalog.sizing.imputed: the same rate
the estimator's device was given, per device)."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext_lazy as _

from catalog.models import Accelerator
from catalog.sizing.imputed import device_rate
from estimator.speed.compute_rates import ImputedRate

register = template.Library()

# estimator.speed.compute_rates.UNIT_KINDS in the page's words.
UNIT_LABELS = {
    "gpu_core": _("GPU cores"),
    "sm": _("streaming multiprocessors"),
    "cu": _("compute units"),
    "xe_core": _("Xe-cores"),
}


@register.simple_tag
def imputed_compute(accelerator: Accelerator | None) -> ImputedRate | None:
    """The card's imputed per-device FP16 rate, or None (a published rate, or none)."""
    return None if accelerator is None else device_rate(accelerator)


@register.filter
def compute_unit_label(kind: str) -> str:
    """The name of a compute unit kind ("gpu_core" -> "GPU cores")."""
    return str(UNIT_LABELS.get(kind, _("compute units")))
