"""The configurator form's fields (configurator/sections/form.html), written in Python.

Each field was a `{% partial field %}` of the template: a label, the widget, the notes
that follow the engine (weights format, KV cache, context and its RoPE note), the help
text and the error span, for the 13 fields of every form a new setup renders, and again
for the out-of-band part of an HTMX answer. Through the template engine that loop cost
more than the widgets themselves. The HTML is the one the partial wrote, byte for byte:
each value is written as the engine writes a variable (`shown`), the translated strings
keep their msgids, and tests/configurator/test_form_sections.py renders the old partials
beside these tags. The widgets are still Django's (str(field), FORM_RENDERER).
"""

from __future__ import annotations

import html
from collections.abc import Collection
from typing import Any

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.forms import BaseForm, BoundField
from django.forms.utils import ErrorList
from django.template.base import render_value_in_context
from django.template.context import Context
from django.template.defaultfilters import join
from django.utils import translation
from django.utils.functional import Promise
from django.utils.html import conditional_escape
from django.utils.safestring import SafeData, SafeString, mark_safe
from django.utils.translation import gettext_noop

register = template.Library()

# The context field's limit, as the partial's {% blocktranslate %} wrote its msgid.
AT_MOST = gettext_noop("at most %(n)s")
# `{{ field.errors|join:" " }}`: a template literal is safe.
SPACE = mark_safe(" ")


def shown(value: Any, context: Context) -> str:
    """`{{ value }}` as the template engine writes it (render_value_in_context): escaped
    when autoescaping unless it is safe; a number or a time localized first. Text (a
    str, a lazy translation, a bound field's widget) has nothing to localize and is
    escaped here with html.escape, what Django's escape runs, without its wrappers."""
    kind = type(value)
    if kind is SafeString:
        return value
    if kind is not str:
        if not isinstance(value, (Promise, BoundField)):
            return render_value_in_context(value, context)
        value = str(value)  # a translation in the active language; a widget is safe
        if type(value) is not str:
            return conditional_escape(value) if context.autoescape else value
    return html.escape(value) if context.autoescape else value


def errors(messages: ErrorList, context: Context) -> str:
    """`{{ field.errors|join:" " }}`: the messages, each escaped, joined by a space."""
    if not messages:
        return ""
    return shown(join(messages, SPACE, autoescape=context.autoescape), context)


def blocktranslated(msgid: str, context: Context, **values: Any) -> str:
    """`{% blocktranslate with name=value %}`: the translation of `msgid` with the values
    written as `{{ }}` writes them. A translation that does not format is dropped for the
    msgid itself, with the values written again with no language active, as the tag
    does."""
    try:
        return translation.gettext(msgid) % {k: shown(v, context) for k, v in values.items()}
    except (KeyError, ValueError):
        with translation.override(None):
            data = {k: shown(v, context) for k, v in values.items()}
            return translation.gettext(msgid) % data


def grouped(value: Any) -> Any:
    """`value|intcomma`: humanize's filter; a safe value stays safe (the filter is
    is_safe, so the template engine marks its output safe when its input was)."""
    text = intcomma(value)
    return mark_safe(text) if isinstance(value, SafeData) else text


def translated(msgid: str) -> str:
    """`{% translate "msgid" %}` of a literal: its translation, not escaped (a literal is
    safe, and so is its translation), with the tag's doubled percent signs restored."""
    return translation.gettext(msgid.replace("%", "%%")).replace("%%", "%")


def _widget(field: BoundField, context: Context, max_context_tokens: Any, oob: bool) -> str:
    """The partial's widget line after its indent: the select or input, with the notes
    that follow the quant, KV and context fields (and their line breaks); nothing for a
    checkbox, whose widget sits in its label."""
    form, name = field.form, field.name
    if name == "quant":
        widget = shown(field.as_sent if oob else field, context)  # type: ignore[attr-defined]
        note = getattr(form, "quant_note", "")
        if note:
            note = f'<small class="field-note" role="status">{shown(note, context)}</small>'
        return f"{widget}\n    {note}\n  "
    widget = shown(field, context)
    if name == "kv":
        note = getattr(form, "kv_note", "")
        if note:
            note = f'<small class="field-note" role="status">{shown(note, context)}</small>'
        return f"{widget}{note}\n  "
    if name == "ctx":
        limit = blocktranslated(AT_MOST, context, n=grouped(max_context_tokens))
        rope = getattr(form, "rope_note", "")
        if rope:
            rope = f'<small class="muted">{shown(rope, context)}</small>'
        return f"{widget}<small>{limit}</small>{rope}\n  "
    return widget


def field_html(
    field: BoundField, context: Context, max_context_tokens: Any, oob: bool = False
) -> str:
    """One field as form.html's `field` partial wrote it: `oob` marks the block for an
    out-of-band swap and shows the quant select as the visitor sent it (`as_sent`)."""
    name = shown(field.name, context)
    label_for, label = shown(field.id_for_label, context), shown(field.label, context)
    if field.widget_type == "checkbox":
        label_line = f'<label class="cfg-check" for="{label_for}">{shown(field, context)} '
        label_line += f"{label}</label>\n  "
        widget = ""
    else:
        label_line = f'<label for="{label_for}">{label}</label>'
        widget = _widget(field, context, max_context_tokens, oob)
    help_text = field.help_text
    help_line = f'<small class="muted">{shown(help_text, context)}</small>' if help_text else ""
    messages = field.errors
    has_error = " has-error" if messages else ""
    swap = ' hx-swap-oob="true"' if oob else ""
    return (
        f'\n<div class="cfg-field{has_error}" id="field-{name}"{swap}>\n'
        f"  {label_line}\n"
        f"  {widget}\n"
        f"  {help_line}\n"
        f'  <span class="field-error" id="err-{name}">{errors(messages, context)}</span>\n'
        "</div>\n"
    )


@register.simple_tag(takes_context=True)
def configure_fields(
    context: Context,
    form: BaseForm,
    max_context_tokens: Any,
    *,
    only: Collection[str] | None = None,
    exclude: Collection[str] = (),
) -> SafeString:
    """The form's fields in its order, each as field_html writes it: those named in
    `only` (every field when it is not given) and not in `exclude`."""
    return mark_safe(
        "".join(
            field_html(field, context, max_context_tokens)
            for field in form
            if (only is None or field.name in only) and field.name not in exclude
        )
    )


@register.simple_tag(takes_context=True)
def configure_field(
    context: Context, field: BoundField, max_context_tokens: Any, *, oob: bool = False
) -> SafeString:
    """One field as field_html writes it (the quant and KV fields of an HTMX answer)."""
    return mark_safe(field_html(field, context, max_context_tokens, bool(oob)))


@register.simple_tag(takes_context=True)
def oob_errors(
    context: Context, form: BaseForm, *skipped: str, exclude: Collection[str] = ()
) -> SafeString:
    """For an HTMX answer: each field's error span, swapped out of band, but for the
    fields named in `skipped` or `exclude` (sent whole, or in the offload section)."""
    spans = [
        f'<span class="field-error" id="err-{shown(field.name, context)}" hx-swap-oob="true">'
        f"{errors(field.errors, context)}</span>"
        for field in form
        if field.name not in skipped and field.name not in exclude
    ]
    return mark_safe("".join(spans))
