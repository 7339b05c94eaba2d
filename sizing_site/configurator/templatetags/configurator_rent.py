"""The rent-or-buy form's inputs (configurator/sections/rent.html), written in Python: a
hidden input per configurator field, so that the rent form sends the setup along, and
the rent form's seven fields with the notes on the owned hardware's price. The HTML is
the one the template's two loops wrote, byte for byte, values written as the template
engine writes them and the notes under their msgids (configurator_form's helpers);
tests/configurator/test_form_sections.py renders the old loops beside these tags."""

from __future__ import annotations

from typing import Any

from django import template
from django.forms import BaseForm, BoundField
from django.template.context import Context
from django.templatetags.l10n import unlocalize
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_noop

from sizing_site.configurator.templatetags.configurator_form import (
    blocktranslated,
    errors,
    grouped,
    shown,
    translated,
)
from sizing_site.core.numbers import floatformat

register = template.Library()

SERVER_SHARE = gettext_noop(
    "An SXM / OAM module is sold only in its server: each GPU's share of a %(price)s USD "
    "server of %(modules)s, host included."
)
UNPRICED = gettext_noop(
    "An SXM / OAM module is sold only in its server, and no server price is known for it: "
    "type the server's share for these GPUs."
)
BASE_PRICE = gettext_noop(
    "The catalog's %(price)s USD is the base configuration's price: type this "
    "configuration's real price."
)
# A field's three note lines, when it has none (all but the hardware price).
NO_NOTES = ["", "", ""]


@register.simple_tag(takes_context=True)
def hidden_inputs(context: Context, form: BaseForm) -> SafeString:
    """A hidden input per field of `form`, its value as sent and not localized
    (`field.value|default_if_none:''|unlocalize`)."""
    inputs = []
    for field in form:
        value = field.value()
        sent = shown(unlocalize("" if value is None else value), context)
        inputs.append(f'<input type="hidden" name="{shown(field.name, context)}" value="{sent}">')
    return mark_safe("".join(inputs))


def _price_notes(rent: BaseForm, accelerator: Any, answer: Any, context: Context) -> list[str]:
    """The hardware price field's three note lines: an SXM / OAM module's share of its
    server, or that no server price is known; the catalog price being a base
    configuration's. Each "" when it does not apply."""
    basis = getattr(rent, "owned_basis", "")
    server = unpriced = base = ""
    if basis == "server":
        price = grouped(floatformat(getattr(accelerator, "server_price_usd", ""), 0))
        modules = getattr(accelerator, "server_modules", "")
        text = blocktranslated(SERVER_SHARE, context, price=price, modules=modules)
        server = f'<small class="muted" data-owned="server">{text}</small>'
    if basis == "unpriced":
        unpriced = f'<small class="warn" data-owned="unpriced">{translated(UNPRICED)}</small>'
    if getattr(answer, "base_price", False):
        price = floatformat(getattr(accelerator, "price_usd", ""), 0)
        base = f'<small class="warn">{blocktranslated(BASE_PRICE, context, price=price)}</small>'
    return [server, unpriced, base]


def _rent_field(field: BoundField, notes: list[str], context: Context) -> str:
    """One field of the rent form with its three note lines, as the template's loop wrote
    it."""
    name, messages = shown(field.name, context), errors(field.errors, context)
    label = f'<label for="{shown(field.id_for_label, context)}">{shown(field.label, context)}'
    return (
        '\n      <div class="cfg-field">\n'
        f"        {label}</label>{shown(field, context)}\n"
        f"        {notes[0]}\n"
        f"        {notes[1]}\n"
        f"        {notes[2]}\n"
        f'        <span class="field-error" id="err-{name}">{messages}</span>\n'
        "      </div>\n    "
    )


@register.simple_tag(takes_context=True)
def rent_fields(context: Context, rent: BaseForm, accelerator: Any, answer: Any) -> SafeString:
    """The rent form's fields, each with its label, input and error, the hardware price
    with its notes (_price_notes)."""
    fields = []
    for field in rent:
        notes = NO_NOTES
        if field.name == "hw_usd":
            notes = _price_notes(rent, accelerator, answer, context)
        fields.append(_rent_field(field, notes, context))
    return mark_safe("".join(fields))
