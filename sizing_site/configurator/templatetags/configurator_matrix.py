"""The quantization matrix's rows (configurator/sections/quant_matrix.html), built in
Python: two configurator links and four localised numbers a row, for every quant of the
family (27 GGUF rows), cost several times more through the template engine than the
strings themselves. The HTML is the one the template's loop wrote, byte for byte; the
msgids are the ones it used, so the existing translations apply."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from catalog.sizing import QuantRow
from catalog.templatetags.catalog_units import gib
from sizing_site.configurator.links import configure_path, query_string, with_query
from sizing_site.configurator.templatetags.configurator_labels import verdict_word
from sizing_site.core.numbers import floatformat

register = template.Library()

_ROW = (
    '\n      <tr{}><th><a href="{}">{}</a></th>\n'
    '        <td class="num">{}</td><td class="num">{}</td>\n'
    '        <td class="num">{}</td><td class="num">{}</td>\n'
    '        <td class="v-{}">{}</td>\n'
    "        <td>{}</td>\n"
    "        <td>{}</td></tr>\n    "
)
_CURRENT = ' class="current"'


@register.simple_tag
def quant_matrix_rows(
    matrix: Sequence[QuantRow], setup: Any, model: Any, accelerator: Any, result: Any
) -> SafeString:
    """Every row of the matrix: the format (a link to it on this card, the setup's own
    marked current), weights, the setup's KV cache and the total per device in GiB (two
    decimals), decode tok/s (one decimal, "—" when it does not fit), the verdict, whether
    the size is measured, and the smallest card that fits it (a link) or none.

    The text is escaped as format_html would (html.escape, what Django's escape runs);
    the numbers are floatformat's safe strings. A row's two links share its query string
    and each card's path is reversed once (configurator.links)."""
    kv = floatformat(gib(result.kv_cache_bytes), "2")
    measured, computed = escape(gettext("measured")), escape(gettext("computed"))
    nowhere = escape(gettext("none in the catalog"))
    own_path = configure_path(model.slug, accelerator.slug)
    words: dict[str, str] = {}
    rows = []
    for row in matrix:
        query = query_string(quant=row.quant, ctx=setup.context_tokens, engine=setup.engine)
        card = nowhere
        if row.card:
            url = with_query(configure_path(model.slug, row.card.slug), query)
            card = f'<a href="{escape(url)}">{escape(row.card.name)}</a>'
        speed = row.decode_tokens_per_s
        verdict = row.verdict
        if verdict not in words:
            words[verdict] = escape(verdict_word(verdict))
        rows.append(
            _ROW.format(
                _CURRENT if row.quant == setup.quant else "",
                escape(with_query(own_path, query)),
                escape(row.quant),
                floatformat(gib(row.weights_bytes), "2"),
                kv,
                floatformat(gib(row.per_device_bytes), "2"),
                "—" if speed is None else floatformat(speed, "1"),
                escape(verdict),
                words[verdict],
                measured if row.measured else computed,
                card,
            )
        )
    return mark_safe("".join(rows))


def escape(text: object) -> str:
    """Django's escape without its SafeString: html.escape of the text."""
    return html.escape(str(text))
