"""The configurator form's fields and the rent-or-buy inputs written in Python
(configurator_form, configurator_rent): the HTML the template loops wrote, byte for byte.

The old markup is kept here: each test builds the old template from today's section (its
tags swapped back for the loops and the `field` partial they replaced) and renders both
with one context: the form, its out-of-band part and the rent section, for the states
that change what a field shows, in the four languages."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.template import engines
from django.template.backends.django import Template as BackendTemplate
from django.template.loader import get_template
from django.test import RequestFactory, SimpleTestCase
from django.urls import reverse
from django.utils import translation
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.hardware import EngineChoice
from catalog.models import Accelerator
from catalog.sizing.specs import LayerCounts, RopeContext
from sizing_site.configurator.forms import ConfigureForm
from sizing_site.configurator.rent_forms import RentBuyForm
from tests.configurator.test_views import GlmOnA100

SECTIONS = (
    Path(__file__).resolve().parents[2] / "sizing_site/configurator/templates/configurator/sections"
)
# form.html's `field` partial, as it was; each field is now configurator_form.field_html.
FIELD_PARTIAL = """{% partialdef field %}
<div class="cfg-field{% if field.errors %} has-error{% endif %}" id="field-{{ field.name }}"{% if oob_field %} hx-swap-oob="true"{% endif %}>
  {% if field.widget_type == "checkbox" %}<label class="cfg-check" for="{{ field.id_for_label }}">{{ field }} {{ field.label }}</label>
  {% else %}<label for="{{ field.id_for_label }}">{{ field.label }}</label>{% endif %}
  {% if field.widget_type == "checkbox" %}{% elif field.name == "quant" %}{% if oob_field %}{{ field.as_sent }}{% else %}{{ field }}{% endif %}
    {% if form.quant_note %}<small class="field-note" role="status">{{ form.quant_note }}</small>{% endif %}
  {% elif field.name == "kv" %}{{ field }}{% if form.kv_note %}<small class="field-note" role="status">{{ form.kv_note }}</small>{% endif %}
  {% elif field.name == "ctx" %}{{ field }}<small>{% blocktranslate with n=max_context_tokens|intcomma %}at most {{ n }}{% endblocktranslate %}</small>{% if form.rope_note %}<small class="muted">{{ form.rope_note }}</small>{% endif %}
  {% else %}{{ field }}{% endif %}
  {% if field.help_text %}<small class="muted">{{ field.help_text }}</small>{% endif %}
  <span class="field-error" id="err-{{ field.name }}">{{ field.errors|join:" " }}</span>
</div>
{% endpartialdef %}"""  # noqa: E501
# Each tag of today's sections, and the template markup it replaced.
FORM_LOOPS = (
    (
        "{# Each field: configurator_form.field_html (label, widget, notes, help text, error). #}",
        FIELD_PARTIAL,
    ),
    (
        "{% configure_fields form max_context_tokens exclude=form.offload_section %}",
        "{% for field in form %}{% if field.name not in form.offload_section %}{% partial field %}{% endif %}{% endfor %}",  # noqa: E501
    ),
    (
        "{% configure_fields form max_context_tokens only=shown %}",
        "{% for field in form %}{% if field.name in shown %}{% partial field %}{% endif %}{% endfor %}",  # noqa: E501
    ),
    (
        '{% oob_errors form "quant" "kv" exclude=form.offload_section %}',
        '{% for field in form %}{% if field.name != "quant" and field.name != "kv" and field.name not in form.offload_section %}<span class="field-error" id="err-{{ field.name }}" hx-swap-oob="true">{{ field.errors|join:" " }}</span>{% endif %}{% endfor %}',  # noqa: E501
    ),
    (
        "{% configure_field form.quant max_context_tokens oob=True %}",
        "{% with field=form.quant oob_field=True %}{% partial field %}{% endwith %}",
    ),
    (
        "{% configure_field form.kv max_context_tokens oob=True %}",
        "{% with field=form.kv oob_field=True %}{% partial field %}{% endwith %}",
    ),
)
RENT_LOOPS = (
    (
        "{% hidden_inputs form %}",
        """{% for field in form %}<input type="hidden" name="{{ field.name }}" value="{{ field.value|default_if_none:''|unlocalize }}">{% endfor %}""",  # noqa: E501
    ),
    (
        "{% rent_fields rent accelerator answer %}",
        """{% for field in rent %}
      <div class="cfg-field">
        <label for="{{ field.id_for_label }}">{{ field.label }}</label>{{ field }}
        {% if field.name == "hw_usd" and rent.owned_basis == "server" %}<small class="muted" data-owned="server">{% blocktranslate with price=accelerator.server_price_usd|floatformat:0|intcomma modules=accelerator.server_modules %}An SXM / OAM module is sold only in its server: each GPU's share of a {{ price }} USD server of {{ modules }}, host included.{% endblocktranslate %}</small>{% endif %}
        {% if field.name == "hw_usd" and rent.owned_basis == "unpriced" %}<small class="warn" data-owned="unpriced">{% translate "An SXM / OAM module is sold only in its server, and no server price is known for it: type the server's share for these GPUs." %}</small>{% endif %}
        {% if field.name == "hw_usd" and answer.base_price %}<small class="warn">{% blocktranslate with price=accelerator.price_usd|floatformat:0 %}The catalog's {{ price }} USD is the base configuration's price: type this configuration's real price.{% endblocktranslate %}</small>{% endif %}
        <span class="field-error" id="err-{{ field.name }}">{{ field.errors|join:" " }}</span>
      </div>
    {% endfor %}""",  # noqa: E501
    ),
)
LANGUAGES = ("en", "de", "it", "zh-hans")
LLAMA_CPP = EngineChoice("llama.cpp", "cuda", "supported", "", "")
VLLM = EngineChoice("vllm", "cuda", "supported", "", "")
GLM_LAYERS = LayerCounts(46, moe=True)  # GLM-4.5-Air: 46 layers of experts
QWEN3_8B_ROPE = RopeContext(native_tokens=40960, max_tokens=131072, scaling_type="")
YARN = RopeContext(native_tokens=32768, max_tokens=131072, scaling_type="yarn")


def old_template(name: str, loops: tuple[tuple[str, str], ...]) -> BackendTemplate:
    """Today's section with each tag swapped back for the markup it replaced."""
    source = (SECTIONS / name).read_text()
    for tag, markup in loops:
        assert source.count(tag) == 1, tag
        source = source.replace(tag, markup)
    # the libraries the loops used; a {% load %} writes nothing
    template = engines["django"].from_string("{% load humanize l10n %}" + source)
    assert isinstance(template, BackendTemplate)
    return template


def partial(template: BackendTemplate, name: str) -> BackendTemplate:
    """A partial of a template made from a string, as the partials loader hands it out."""
    proxy = template.template.extra_data["partials"][name]  # type: ignore[attr-defined]
    proxy.engine = template.template.engine
    return BackendTemplate(proxy, template.backend)


OLD_FORM = old_template("form.html", FORM_LOOPS)
OLD_OOB = partial(OLD_FORM, "oob")
OLD_RENT = old_template("rent.html", RENT_LOOPS)
REQUEST = RequestFactory().get("/en/models/glm-4-5-air/on/nvidia-a100-80gb-pcie/")
REQUEST.user = AnonymousUser()  # for the context processors


def configure_form(data: dict[str, str], **kwargs: Any) -> ConfigureForm:
    """GLM-4.5-Air's form on a card that runs llama.cpp and vLLM (131,072 tokens)."""
    options: dict[str, Any] = {
        "max_context_tokens": 131072,
        "engines": (LLAMA_CPP, VLLM),
        "card_name": "A100 80GB PCIe",
        "layers": GLM_LAYERS,
        **kwargs,
    }
    form = ConfigureForm(data, **options)
    form.is_valid()
    return form


# What changes a field's markup: errors, the notes, the offload section open or not.
FORM_STATES: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "default": ({}, {}),
    "errors": ({"gpus": "0", "ctx": "999999", "seqs": "abc", "prompt": ""}, {}),
    "quant note": ({"engine": "vllm", "quant": "Q4_K_M"}, {}),
    "kv note": ({"engine": "vllm", "kv": "q8_0"}, {}),
    "rope note": ({"ctx": "65536"}, {"rope": QWEN3_8B_ROPE}),
    "yarn note": ({"ctx": "65536"}, {"rope": YARN}),
    "offload": ({"offload": "30", "host_bw": "120.5"}, {}),
    "offload errors": ({"layers": "99", "moe": "on", "moe_layers": "3"}, {}),
    "vllm layers": ({"engine": "vllm", "layers": "3"}, {}),
    "unified memory": (
        {"offload": "20"}, {"unified_memory": True, "card_name": 'M3 <Ultra> & "Max"'}
    ),
    "engine elsewhere": ({"engine": "vllm"}, {"engines": (LLAMA_CPP,), "card_name": "R&D <card>"}),
    "sent markup": ({"ctx": '"><b>8192', "host_bw": "<i>", "quant": "Q4_K_M"}, {}),
}  # fmt: skip


def form_context(form: ConfigureForm, **more: Any) -> dict[str, Any]:
    return {"form": form, "max_context_tokens": form.max_context_tokens, **more}


def state_form(state: str, lang: str = "en") -> ConfigureForm:
    """A state's form, validated in `lang` as the view validates it in the request's."""
    data, options = FORM_STATES[state]
    with translation.override(lang):
        return configure_form(data, **options)


def assert_same_form(form: ConfigureForm, lang: str) -> tuple[str, str]:
    """Today's form and its out-of-band part against the old ones; both returned."""
    context = form_context(form)
    with translation.override(lang):
        new = get_template("configurator/sections/form.html").render(context, REQUEST)
        assert new == OLD_FORM.render(context, REQUEST)
        oob = get_template("configurator/sections/form.html#oob").render(context, REQUEST)
        assert oob == OLD_OOB.render(context, REQUEST)
    return new, oob


class FormFields(SimpleTestCase):
    def setUp(self) -> None:
        translation.activate("en")  # a page test's request may have left another active
        self.addCleanup(translation.deactivate)

    def test_every_state_is_the_old_partials_html_in_each_language(self) -> None:
        for state in FORM_STATES:
            for lang in LANGUAGES:
                with self.subTest(state=state, lang=lang):
                    form = state_form(state, lang)
                    new, oob = assert_same_form(form, lang)
                    hidden = len(form.offload_section) - len(form.offload_fields)
                    assert new.count(' id="field-') == len(form.fields) - hidden
                    assert oob.count('hx-swap-oob="true"') == 14 - len(form.offload_section)

    def test_each_state_shows_what_it_is_there_for(self) -> None:
        shows = {
            "quant note": "vLLM does not load Q4_K_M: showing the best that fits instead.",
            "kv note": "vLLM has no q8_0 KV cache: showing f16 instead.",
            "rope note": "RoPE scaling is active from 40,960 tokens, as the model card states",
            "yarn note": "RoPE scaling (YaRN) is active from 32,768 tokens",
            "offload": '<details class="cfg-offload" id="cfg-offload" data-keep-open open>',
            "offload errors": "This model has 46 layers.",
            "vllm layers": "vLLM cannot keep a number of layers in host memory",
        }
        for state, text in shows.items():
            new, _ = assert_same_form(state_form(state), "en")
            assert text in new, state
        errors, _ = assert_same_form(state_form("errors"), "en")
        assert errors.count(" has-error") == 4  # gpus, ctx, seqs and prompt
        default, _ = assert_same_form(state_form("default"), "en")
        assert "has-error" not in default and "field-note" not in default

    def test_a_sized_quant_shows_in_the_form_and_as_sent_out_of_band(self) -> None:
        form = configure_form({"ctx": "8192"})
        form.sized_quant = "Q4_K_M"
        for lang in LANGUAGES:
            new, oob = assert_same_form(form, lang)
        new, oob = assert_same_form(form, "en")
        assert '<option value="" selected>Best that fits (Q4_K_M)</option>' in new
        assert '<div class="cfg-field" id="field-quant" hx-swap-oob="true">' in oob

    def test_the_fields_markup_worked_by_hand(self) -> None:
        new, oob = assert_same_form(configure_form({"gpus": "0", "ctx": "65536"}), "en")
        # 131072 with the locale's grouping; gpus=0 is below the minimum of 1.
        assert "<small>at most 131,072</small>" in new
        assert '<div class="cfg-field has-error" id="field-gpus">' in new
        assert (
            '<span class="field-error" id="err-gpus">'
            "Ensure this value is greater than or equal to 1.</span>"
        ) in new
        assert (
            '<span class="field-error" id="err-gpus" hx-swap-oob="true">'
            "Ensure this value is greater than or equal to 1.</span>"
        ) in oob
        german, _ = assert_same_form(configure_form({}), "de")
        assert "<small>höchstens 131.072</small>" in german
        moe = '<label class="cfg-check" for="id_moe"><input type="checkbox" name="moe"'
        assert moe in new

    def test_markup_in_a_card_name_or_a_sent_value_is_escaped(self) -> None:
        new, _ = assert_same_form(state_form("unified memory"), "en")
        assert "M3 &lt;Ultra&gt; &amp; &quot;Max&quot; has unified memory" in new
        engine, _ = assert_same_form(state_form("engine elsewhere"), "en")
        assert "does not run on R&amp;D &lt;card&gt;" in engine
        sent, _ = assert_same_form(state_form("sent markup"), "en")
        assert "<b>" not in sent and "<i>" not in sent

    @settings(max_examples=60, deadline=None)
    @given(
        data=st.dictionaries(
            st.sampled_from(["ctx", "gpus", "quant", "kv", "engine", "offload", "layers", "moe",
                             "moe_layers", "host_bw", "seqs", "prompt", "output"]),
            st.sampled_from(["", "0", "1", "3", "46", "99", "4096", "65536", "abc", "on",
                             "Q4_K_M", "Q8_0", "fp8", "q8_0", "vllm", "llama.cpp", "<&>"]),
        ),
        rope=st.sampled_from([None, QWEN3_8B_ROPE, YARN]),
        unified=st.booleans(),
        lang=st.sampled_from(LANGUAGES),
    )  # fmt: skip
    def test_any_query_is_the_old_partials_html(
        self, data: dict[str, str], rope: RopeContext | None, unified: bool, lang: str
    ) -> None:
        with translation.override(lang):
            form = configure_form(data, rope=rope, unified_memory=unified)
        assert_same_form(form, lang)


def card(**fields: Any) -> Accelerator:
    """An unsaved catalog card: only its fields are read."""
    base = {"name": "H100 SXM5 80GB", "price_usd": 30000.0, "tdp_w": 700, "memory_gb": 80}
    return Accelerator(**{**base, **fields})


def rent_context(
    rent_data: dict[str, str], accelerator: Accelerator, *, base_price: bool = False
) -> dict[str, Any]:
    form = configure_form({"ctx": "8192", "gpus": "2", "prompt": '"<x>"'})
    rent = RentBuyForm.for_card(rent_data, accelerator=accelerator, gpus=2)
    answer = SimpleNamespace(base_price=base_price, owned_per_million=None)
    return form_context(form, rent=rent, accelerator=accelerator, answer=answer)


RENT_STATES = {
    "a card with a host": ({}, card(form_factor="PCIe"), False),
    "a module's server share": (
        {},
        card(form_factor="SXM5", server_price_usd=289999.5, server_modules=8),
        False,
    ),
    "an unpriced module": ({}, card(form_factor="SXM5"), False),
    "a base configuration's price": ({}, card(form_factor="PCIe", price_usd=1234.5), True),
    "errors": ({"hours": "25", "hw_usd": "-1", "pue": "x"}, card(form_factor="PCIe"), True),
    "no catalog price": ({}, card(form_factor="PCIe", price_usd=None, tdp_w=None), False),
}


class RentInputs(SimpleTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def test_every_state_is_the_old_loops_html_in_each_language(self) -> None:
        for state, (data, accelerator, base_price) in RENT_STATES.items():
            for lang in LANGUAGES:
                with self.subTest(state=state, lang=lang):
                    with translation.override(lang):
                        context = rent_context(data, accelerator, base_price=base_price)
                        template = get_template("configurator/sections/rent.html")
                        new = template.render(context, REQUEST)
                        assert new == OLD_RENT.render(context, REQUEST)
                    assert new.count('<input type="hidden"') == 13  # the configurator's fields
                    assert new.count('<div class="cfg-field">') == 7  # the rent form's

    def test_the_notes_worked_by_hand(self) -> None:
        data, accelerator, _ = RENT_STATES["a module's server share"]
        context = rent_context(data, accelerator, base_price=True)
        with translation.override("en"):
            html = get_template("configurator/sections/rent.html").render(context, REQUEST)
        # 289,999.5 to no decimals, half up: 290,000; 30,000.0 the base price.
        assert "each GPU's share of a 290,000 USD server of 8, host included." in html
        assert "The catalog's 30,000 USD is the base configuration's price" in html
        # the values as sent, escaped and not localised: ctx 8192, not 8,192
        assert '<input type="hidden" name="ctx" value="8192">' in html
        assert '<input type="hidden" name="prompt" value="&quot;&lt;x&gt;&quot;">' in html
        assert '<input type="hidden" name="moe" value="False">' in html
        with translation.override("de"):
            german = get_template("configurator/sections/rent.html").render(context, REQUEST)
        assert "Server zu 290.000 USD mit 8 Modulen" in german
        assert '<input type="hidden" name="ctx" value="8192">' in german
        # A number (not what a query sends, but what the filter guards against) is not
        # grouped either: 65536, never 65,536 or 65.536.
        context["form"] = configure_form({"ctx": 65536})  # type: ignore[dict-item]
        for lang in ("en", "de"):
            with translation.override(lang):
                numbers = get_template("configurator/sections/rent.html").render(context, REQUEST)
                assert numbers == OLD_RENT.render(context, REQUEST)
            assert '<input type="hidden" name="ctx" value="65536">' in numbers


class ThePagesOwnSections(GlmOnA100):
    """The sections with the context the configurator's view renders them with."""

    def setUp(self) -> None:
        self.client.force_login(self.bob)

    def test_the_pages_form_and_rent_sections_are_the_old_html(self) -> None:
        names = ("form", "max_context_tokens", "rent", "accelerator", "answer", "owner_month",
                 "hours_per_day", "rent_vs_buy", "recommended")  # fmt: skip
        queries = ({"ctx": "8192", "quant": "Q4_K_M", "gpus": "2"}, {"offload": "10"})
        for lang in ("en", "de"):
            with translation.override(lang):
                url = reverse("configurator:configure", args=[self.model.slug, self.card.slug])
            for query in queries:
                response = self.client.get(url, query)
                assert response.status_code == 200
                context = {name: response.context[name] for name in names}
                request = response.wsgi_request
                with translation.override(lang):
                    for new, old in (
                        (get_template("configurator/sections/form.html"), OLD_FORM),
                        (get_template("configurator/sections/form.html#oob"), OLD_OOB),
                        (get_template("configurator/sections/rent.html"), OLD_RENT),
                    ):
                        assert new.render(context, request) == old.render(context, request)
                body = response.content.decode()
                assert 'id="field-ctx"' in body and 'name="hw_usd"' in body
