"""The form renderer: Django's, with its select and input widgets written in Python.

Django renders each widget through its templates, and a select through one template
include per option: on the configurator's page, a new setup's form cost ~11 ms of its
~100 ms (in-process), the quant select alone ~7. For the stock templates of those widgets
(django/forms/widgets/select.html, select_option.html and input.html with the templates
that only include it: text, number, checkbox, hidden, ...) this renderer writes the same
HTML in Python, escaped as the templates escape it; every other template, and a stock
name that an installed app overrides (the widget's own or one it includes), goes to
Django's renderer. tests/sizing_site/test_form_renderer.py compares both on
Hypothesis-drawn widgets, attributes and choices in en and de, and on the whole
configurator page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import django
from django.forms.renderers import DjangoTemplates
from django.http import HttpRequest
from django.utils.formats import localize
from django.utils.html import conditional_escape
from django.utils.safestring import SafeData, SafeString, mark_safe
from django.utils.timezone import template_localtime  # type: ignore[attr-defined]

WIDGETS = "django/forms/widgets/"
# Django's own widget templates: a name whose template comes from elsewhere (an app's
# override) is rendered by the template.
STOCK = Path(django.__file__).parent / "forms" / "templates"
# The stock templates whose whole text is {% include "django/forms/widgets/input.html" %}.
INPUT_NAMES = (
    "checkbox",
    "color",
    "date",
    "datetime",
    "email",
    "file",
    "hidden",
    "number",
    "password",
    "search",
    "tel",
    "text",
    "time",
    "url",
)
INPUT_ONLY = frozenset(f"{WIDGETS}{name}.html" for name in INPUT_NAMES)


def _text(value: Any) -> str:
    """{{ value|stringformat:'s' }}, autoescaped: str() of it (a tuple as its repr, as the
    filter does), escaped unless the value was safe (the filter is is_safe)."""
    text = str(value)  # "%s" % value, a tuple as one value
    return text if isinstance(value, SafeData) else conditional_escape(text)


def _shown(value: Any) -> str:
    """{{ value }}: localized as the template engine localizes a number or a time, then
    escaped (django.template.base.render_value_in_context)."""
    shown = localize(template_localtime(value))
    return conditional_escape(shown if isinstance(shown, str) else str(shown))


def _attrs(attrs: Mapping[str, Any]) -> str:
    """attrs.html: ` name="value"` per attribute; ` name` for True, nothing for False."""
    parts = []
    for name, value in attrs.items():
        if value is False:
            continue
        parts.append(f" {_shown(name)}")
        if value is not True:
            parts.append(f'="{_text(value)}"')
    return "".join(parts)


def _input(widget: Mapping[str, Any]) -> str:
    """input.html."""
    value = widget["value"]
    shown = f' value="{_text(value)}"' if value is not None else ""
    return (
        f'<input type="{_shown(widget["type"])}" '
        f'name="{_shown(widget["name"])}"{shown}{_attrs(widget["attrs"])}>'
    )


def _option(option: Mapping[str, Any]) -> str:
    """select_option.html, with the newline that ends the template's file."""
    return (
        f'<option value="{_text(option["value"])}"{_attrs(option["attrs"])}>'
        f"{_shown(option['label'])}</option>\n"
    )


class FastWidgetRenderer(DjangoTemplates):
    """DjangoTemplates, with the stock select and input widgets rendered in Python."""

    def __init__(self) -> None:
        self._stock: dict[str, bool] = {}

    def _is_stock(self, template_name: str) -> bool:
        """Whether `template_name` and the templates it includes (attrs.html; input.html
        for the input widgets) load Django's own files (checked once per name)."""
        if template_name not in self._stock:
            included = [f"{WIDGETS}attrs.html"]
            if template_name in INPUT_ONLY:
                included.append(f"{WIDGETS}input.html")
            self._stock[template_name] = all(
                Path(str(self.get_template(name).template.origin.name)).is_relative_to(STOCK)
                for name in (template_name, *included)
            )
        return self._stock[template_name]

    def _select(self, widget: Mapping[str, Any]) -> str:
        """select.html: its options through their own template names."""
        out = [f'<select name="{_shown(widget["name"])}"{_attrs(widget["attrs"])}>']
        for group_name, group_choices, _index in widget["optgroups"]:
            if group_name:
                out.append(f'\n  <optgroup label="{_shown(group_name)}">')
            for option in group_choices:
                out.append("\n  " + self._option_html(option))
            if group_name:
                out.append("\n  </optgroup>")
        out.append("\n</select>")
        return "".join(out)

    def _option_html(self, option: Mapping[str, Any]) -> str:
        name = option["template_name"]
        if name == f"{WIDGETS}select_option.html" and self._is_stock(name):
            return _option(option)
        # as the select's {% include %}: not stripped
        return str(self.get_template(name).render({"widget": option}))

    def render(
        self, template_name: str, context: dict[str, Any], request: HttpRequest | None = None
    ) -> SafeString:
        writer: Callable[[Mapping[str, Any]], str] | None = None
        if template_name == f"{WIDGETS}select.html":
            writer = self._select
        elif template_name in INPUT_ONLY:
            writer = _input
        if writer is None or "widget" not in context or not self._is_stock(template_name):
            return mark_safe(super().render(template_name, context, request))
        # BaseRenderer.render strips the template's output
        return mark_safe(writer(context["widget"]).strip())
