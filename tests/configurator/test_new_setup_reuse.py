"""What a configurator setup nobody asked before reuses: the quant matrix's rows built in
Python (the template loop's HTML, byte for byte), configurator paths reversed once per
pair and language, the curated cards and the support matrix kept in the process under
the catalog version. The figures stay the ones the template wrote; the queries stay flat."""

from __future__ import annotations

from django.db import connection
from django.template import engines
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator
from catalog.sizing import QuantRow
from catalog.sizing.cache import bump_catalog_version
from estimator.units import GIB
from sizing_site.configurator import links, rows
from sizing_site.configurator.templatetags.configurator_matrix import quant_matrix_rows
from tests.configurator.test_views import GlmOnA100

# The loop quant_matrix.html had before its rows were built in Python.
TEMPLATE_LOOP = """{% load i18n catalog_units configurator_labels explore %}{% for row in matrix %}
      <tr{% if row.quant == setup.quant %} class="current"{% endif %}><th><a href="{% configure_url model.slug accelerator.slug quant=row.quant ctx=setup.context_tokens engine=setup.engine %}">{{ row.quant }}</a></th>
        <td class="num">{{ row.weights_bytes|gib|floatformat:2 }}</td><td class="num">{{ result.kv_cache_bytes|gib|floatformat:2 }}</td>
        <td class="num">{{ row.per_device_bytes|gib|floatformat:2 }}</td><td class="num">{% if row.decode_tokens_per_s is None %}—{% else %}{{ row.decode_tokens_per_s|floatformat:1 }}{% endif %}</td>
        <td class="v-{{ row.verdict }}">{{ row.verdict|verdict_word }}</td>
        <td>{% if row.measured %}{% translate "measured" %}{% else %}{% translate "computed" %}{% endif %}</td>
        <td>{% if row.card %}<a href="{% configure_url model.slug row.card.slug quant=row.quant ctx=setup.context_tokens engine=setup.engine %}">{{ row.card.name }}</a>{% else %}{% translate "none in the catalog" %}{% endif %}</td></tr>
    {% endfor %}"""  # noqa: E501


class NewSetupReuse(GlmOnA100):
    def setUp(self) -> None:
        self.client.force_login(self.bob)
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def page(self, lang: str = "en", **params: str) -> dict[str, object]:
        with translation.override(lang):
            url = reverse("configurator:configure", args=[self.model.slug, self.card.slug])
        response = self.client.get(url, params)
        assert response.status_code == 200
        names = ("matrix", "setup", "model", "accelerator", "result")
        return {name: response.context[name] for name in names}

    def test_the_rows_are_the_template_loops_html_in_each_language(self) -> None:
        loop = engines["django"].from_string(TEMPLATE_LOOP)
        for lang in ("en", "de"):
            context = self.page(lang, ctx="8192", quant="Q4_K_M", gpus="2")
            with translation.override(lang):
                built = quant_matrix_rows(**context)  # type: ignore[arg-type]
                assert built == loop.render(context)
            matrix = context["matrix"]
            assert isinstance(matrix, list) and len(matrix) > 20  # the GGUF family's rows
            assert built.count("<tr") == len(matrix)
            assert built.count(' class="current"') == 1  # Q4_K_M, the setup's own
        assert "gemessen" in built or "berechnet" in built  # German words, German numbers

    def test_a_rows_figures_worked_by_hand(self) -> None:
        context = self.page(ctx="8192", quant="Q4_K_M")
        setup, result = context["setup"], context["result"]
        row = QuantRow(
            quant="Q4_K_M",
            weights_bytes=int(4.5 * GIB),  # 4.5 GiB -> "4.50"
            per_device_bytes=int(10.125 * GIB),  # 10.125 GiB -> "10.13" (half up)
            verdict="tight",
            decode_tokens_per_s=123.45,  # one decimal, half up -> "123.5"
            measured=True,
            card=None,
        )
        html = quant_matrix_rows([row], setup, self.model, self.card, result)
        assert '<tr class="current"><th><a href="/en/models/glm-4-5-air/on/' in html
        assert "?quant=Q4_K_M&amp;ctx=8192&amp;engine=" in html
        assert '<td class="num">4.50</td>' in html
        assert '<td class="num">10.13</td>' in html
        assert '<td class="num">123.5</td>' in html
        assert '<td class="v-tight">tight</td>' in html
        assert "<td>measured</td>" in html and "<td>none in the catalog</td></tr>" in html
        with translation.override("de"):
            german = quant_matrix_rows([row], setup, self.model, self.card, result)
        assert '<td class="num">4,50</td>' in german and '<td class="num">123,5</td>' in german

    def test_a_pairs_path_is_reversed_once_per_language(self) -> None:
        links._configure_path.cache_clear()
        first = links.configure_url("glm-4-5-air", "nvidia-a100-80gb-pcie", quant="Q8_0")
        again = links.configure_url("glm-4-5-air", "nvidia-a100-80gb-pcie", ctx=4096, gpus=None)
        with translation.override("de"):
            german = links.configure_url("glm-4-5-air", "nvidia-a100-80gb-pcie")
        path = reverse("configurator:configure", args=["glm-4-5-air", "nvidia-a100-80gb-pcie"])
        assert first == f"{path}?quant=Q8_0" and again == f"{path}?ctx=4096"
        assert german == path.replace("/en/", "/de/", 1)
        info = links._configure_path.cache_info()
        assert (info.misses, info.hits) == (2, 1)  # en and de reversed once each

    def test_new_setups_read_the_curated_cards_and_the_matrix_once(self) -> None:
        with CaptureQueriesContext(connection) as first:
            self.page(ctx="4096")  # the first setup reads them
        with CaptureQueriesContext(connection) as second:
            self.page(ctx="6000")
        with CaptureQueriesContext(connection) as third:
            self.page(ctx="7000")
        assert len(second) == len(third)  # flat: nothing per setup but the rows and offers
        curated = '"catalog_accelerator"."curated")'
        read = " ".join(q["sql"] for q in first.captured_queries)
        assert curated in read and "catalog_enginesupport" in read
        again = " ".join(q["sql"] for q in second.captured_queries)
        assert curated not in again and "catalog_enginesupport" not in again

    def test_a_catalog_version_reads_them_afresh(self) -> None:
        assert [c.slug for c in rows.curated_accelerators()] == [self.card.slug]
        rows.support_matrix()  # two queries, the first time under this version
        with CaptureQueriesContext(connection) as kept:
            rows.curated_accelerators()
            rows.support_matrix()
        assert len(kept) == 0
        # An update through the queryset sends no signal: the version is bumped by hand,
        # as load_catalog does.
        Accelerator.objects.filter(pk=self.card.pk).update(curated=False)
        assert [c.slug for c in rows.curated_accelerators()] == [self.card.slug]
        bump_catalog_version()
        with CaptureQueriesContext(connection) as fresh:
            assert rows.curated_accelerators() == []
        assert len(fresh) == 1
