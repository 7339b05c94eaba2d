"""The form renderer writes the select and input widgets in Python: the same HTML, byte for
byte, as Django's templates, for drawn names, values, attributes and choices, in English
and German (numbers in labels are localized), and on the configurator's real form."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings
from django.core.cache import caches
from django.forms.renderers import DjangoTemplates
from django.test import override_settings
from django.utils import translation
from django.utils.safestring import mark_safe
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from sizing_site.core.form_renderer import FastWidgetRenderer
from tests.configurator.test_views import GlmOnA100

FAST, DJANGO = FastWidgetRenderer(), DjangoTemplates()

texts = st.text(alphabet=st.sampled_from("ab <>&\"'é8,.-_ü漢"), max_size=8)
scalars = st.one_of(
    texts,
    st.integers(-(10**7), 10**7),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
    texts.map(mark_safe),
)
attrs = st.dictionaries(
    st.sampled_from(
        [
            "class",
            "min",
            "max",
            "step",
            "aria-describedby",
            "required",
            "disabled",
            "data-x",
            "placeholder",
        ]
    ),
    scalars,
    max_size=4,
)
labels = st.one_of(texts, st.integers(-(10**7), 10**7), st.floats(0, 1e6, width=32))
choices = st.lists(st.tuples(st.one_of(texts, st.integers(0, 10**6)), labels), max_size=6)
groups = st.lists(st.tuples(texts.filter(bool), choices), max_size=2)


def both(widget: forms.Widget, name: str, value: Any, extra: dict[str, Any]) -> tuple[str, str]:
    return (
        widget.render(name, value, attrs=extra, renderer=FAST),
        widget.render(name, value, attrs=extra, renderer=DJANGO),
    )


@hsettings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(
    kind=st.sampled_from(
        [
            forms.TextInput,
            forms.NumberInput,
            forms.HiddenInput,
            forms.CheckboxInput,
            forms.EmailInput,
            forms.DateInput,
        ]
    ),
    name=texts,
    value=scalars,
    extra=attrs,
    language=st.sampled_from(["en", "de"]),
)
def test_inputs_are_the_templates_html(
    kind: type[forms.Widget], name: str, value: Any, extra: dict[str, Any], language: str
) -> None:
    with translation.override(language):
        fast, django = both(kind(), name, value, extra)
    assert fast == django


@hsettings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(
    flat=choices,
    grouped=groups,
    multiple=st.booleans(),
    name=texts,
    value=st.one_of(texts, st.integers(0, 10**6), st.lists(texts, max_size=2), st.none()),
    extra=attrs,
    language=st.sampled_from(["en", "de"]),
)
def test_selects_are_the_templates_html(
    flat: list[Any],
    grouped: list[Any],
    multiple: bool,
    name: str,
    value: Any,
    extra: dict[str, Any],
    language: str,
) -> None:
    kind = forms.SelectMultiple if multiple else forms.Select
    with translation.override(language):
        fast, django = both(kind(choices=[*flat, *grouped]), name, value, extra)
    assert fast == django


def test_it_is_the_form_renderer_and_other_widgets_go_to_the_templates() -> None:
    assert settings.FORM_RENDERER == "sizing_site.core.form_renderer.FastWidgetRenderer"
    radio = forms.RadioSelect(choices=[("a", "A"), ("b", "B")])
    fast, django = both(radio, "pick", "a", {})
    assert fast == django and 'type="radio"' in fast
    # a German number in a label, as the template localizes it
    with translation.override("de"):
        fast, _ = both(forms.Select(choices=[(1, 0.5)]), "n", 1, {})
    assert '<option value="1" selected>0,5</option>' in fast


# Per request: the CSRF token (a form field, htmx's header) and the CSP nonce.
TOKEN = re.compile(r"[A-Za-z0-9_+/=-]{32,}")


class ConfiguratorPage(GlmOnA100):
    def test_the_page_is_the_same_with_djangos_renderer(self) -> None:
        self.client.force_login(self.bob)
        url = f"/en/models/{self.model.slug}/on/{self.card.slug}/?quant=Q4_K_M&ctx=8192"

        def page() -> str:
            for name in ("default", "fragments"):  # nothing rendered by the other renderer
                caches[name].clear()
            response = self.client.get(url)
            assert response.status_code == 200
            html = response.content.decode()
            return TOKEN.sub("", html)

        fast = page()
        with override_settings(FORM_RENDERER="django.forms.renderers.DjangoTemplates"):
            django = page()
        assert fast == django
        assert '<select name="quant"' in fast and 'type="number"' in fast
