"""The configurator under bad input: the htmx analysis part answers
400 with the errors, never a 500, and the memory bar needs no inline style."""

from __future__ import annotations

import re

from django.urls import reverse
from django.utils import translation

from catalog.templatetags.catalog_units import gb, gib
from sizing_site.configurator.templatetags.configurator_charts import memory_bar
from tests.reports.base import ReportsTestCase


def test_unit_filters_turn_a_missing_value_into_none() -> None:
    # A missing context variable reaches a filter as "" (string_if_invalid).
    assert gib("") is None and gb("") is None and gib(True) is None
    assert gib(3 * 2**30) == 3.0 and gb(2_000_000_000) == 2.0


def test_memory_bar_gives_each_part_its_start_for_the_svg_bar() -> None:
    bar = memory_bar(
        weights=60, multimodal=0, offloaded=0, kv=20, overhead=10, total=90, usable=100
    )
    # scale = max(90, 100) / 100 = 1 byte per percent: weights 0-60, kv 60-80, overhead 80-90
    assert [(p.key, p.x, p.percent) for p in bar.parts] == [
        ("weights", 0.0, 60.0),
        ("kv", 60.0, 20.0),
        ("overhead", 80.0, 10.0),
    ]
    assert bar.usable_percent == 100.0


class AnalysisPart(ReportsTestCase):
    def setUp(self) -> None:
        self.client.force_login(self.bob)
        with translation.override("en"):
            self.page = reverse("configurator:configure", args=[self.model.slug, self.card.slug])

    def test_bad_parameters_on_the_htmx_analysis_part_are_a_400_fragment(self) -> None:
        for query in (
            {"ctx": "abc"},
            {"ctx": "²"},
            {"gpus": "1e999999"},
            {"seqs": "-1"},
            {"ctx": "9" * 5000},
            {"hours": "inf", "ctx": "8192"},
        ):
            response = self.client.get(
                self.page, {**query, "part": "analysis"}, headers={"HX-Request": "true"}
            )
            body = response.content.decode()
            assert response.status_code == 400, query
            assert body.lstrip().startswith('<div id="analysis">'), query
            assert "<html" not in body

    def test_the_page_has_no_inline_style_and_the_bar_is_svg(self) -> None:
        response = self.client.get(self.page, {"ctx": "8192"})
        body = response.content.decode()
        assert response.status_code == 200
        assert 'style="' not in body and "<style" not in body
        widths = [
            float(w)
            for w in re.findall(
                r'<rect class="seg seg-\w+" x="[\d.]+" y="0" width="([\d.]+)"', body
            )
        ]
        assert widths and 0 < sum(widths) <= 100.01
        assert "Content-Security-Policy" in response
