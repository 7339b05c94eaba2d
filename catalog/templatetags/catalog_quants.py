"""How the catalog pages label a weights file's quantization.

A file keeps the name its uploader gave it ("Q4_0_4_4"); a name the estimator sizes as
another type says so next to it. The ARM repacks of Q4_0 (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8:
estimator.weights.REPACK_BASE) are Q4_0's blocks reordered for ARM CPUs, so they are sized
as Q4_0 (docs/estimator.md, "Model and weights").
"""

from __future__ import annotations

from django import template
from django.utils.translation import gettext as _

from estimator.weights import REPACK_BASE

register = template.Library()


@register.filter
def sized_as(quant: object) -> str:
    """The note a quant name takes on the pages: "sized as Q4_0 (ARM repack)" for an ARM
    repack of Q4_0, "" for every other name (they are sized as what they say)."""
    base = REPACK_BASE.get(quant) if isinstance(quant, str) else None
    if base is None:
        return ""
    return _("sized as %(base)s (ARM repack)") % {"base": base}
