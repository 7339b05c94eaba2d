"""The quantization matrix's rows (configurator/sections/quant_matrix.html), built in
Python: two configurator links and four localised numbers a row, for every quant of the
family (27 GGUF rows), cost several times more through the template engine than the
strings themselves. The HTML is the one the template's loop wrote, byte for byte; the
msgids are the ones it used, so the existing translations apply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import template
from django.template.defaultfilters import floatformat
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from catalog.sizing import QuantRow
from catalog.templatetags.catalog_units import gib
from sizing_site.configurator.links import configure_url
from sizing_site.configurator.templatetags.configurator_labels import verdict_word

register = template.Library()

_ROW = (
    '\n      <tr{}><th><a href="{}">{}</a></th>\n'
    '        <td class="num">{}</td><td class="num">{}</td>\n'
    '        <td class="num">{}</td><td class="num">{}</td>\n'
    '        <td class="v-{}">{}</td>\n'
    "        <td>{}</td>\n"
    "        <td>{}</td></tr>\n    "
)


@register.simple_tag
def quant_matrix_rows(
    matrix: Sequence[QuantRow], setup: Any, model: Any, accelerator: Any, result: Any
) -> SafeString:
    """Every row of the matrix: the format (a link to it on this card, the setup's own
    marked current), weights, the setup's KV cache and the total per device in GiB (two
    decimals), decode tok/s (one decimal, "—" when it does not fit), the verdict, whether
    the size is measured, and the smallest card that fits it (a link) or none."""
    kv = floatformat(gib(result.kv_cache_bytes), "2")
    measured, computed = gettext("measured"), gettext("computed")
    nowhere = gettext("none in the catalog")
    params = {"ctx": setup.context_tokens, "engine": setup.engine}
    rows = []
    for row in matrix:
        link = configure_url(model.slug, accelerator.slug, quant=row.quant, **params)
        card: str = nowhere
        if row.card:
            url = configure_url(model.slug, row.card.slug, quant=row.quant, **params)
            card = format_html('<a href="{}">{}</a>', url, row.card.name)
        speed = row.decode_tokens_per_s
        rows.append(
            format_html(
                _ROW,
                mark_safe(' class="current"') if row.quant == setup.quant else "",
                link,
                row.quant,
                floatformat(gib(row.weights_bytes), "2"),
                kv,
                floatformat(gib(row.per_device_bytes), "2"),
                "—" if speed is None else floatformat(speed, "1"),
                row.verdict,
                verdict_word(row.verdict),
                measured if row.measured else computed,
                card,
            )
        )
    return mark_safe("".join(rows))
