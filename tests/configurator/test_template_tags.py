"""The configurator's template tags: the two charts' SVG geometry from plain numbers, and the
words for the estimator's codes under the msgids the catalogues already translate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polib
import pytest
from django.template import Context, Template
from django.utils import translation

from estimator.units import GIB
from sizing_site.configurator.templatetags import configurator_labels
from sizing_site.configurator.templatetags.configurator_charts import context_chart, memory_bar
from sizing_site.explore.templatetags import explore
from sizing_site.reports.templatetags import reports_tags

LOCALE = Path(__file__).resolve().parents[2] / "sizing_site" / "locale"


def test_the_memory_bar_scales_to_the_total_when_it_exceeds_the_usable_memory() -> None:
    bar = memory_bar(
        weights=70 * GIB,
        multimodal=10 * GIB,
        offloaded=20 * GIB,
        kv=30 * GIB,
        overhead=20 * GIB,
        total=130 * GIB,
        usable=100 * GIB,
    )
    # 1.3 GiB per percent (max(130, 100) GiB / 100). On the devices: 70 + 10 - 20 = 60 GiB of
    # weights = 46.15 %, KV 30 / 1.3 = 23.08 % from 46.15, overhead 20 / 1.3 = 15.38 % from
    # 69.23, offloaded 15.38 % from 84.62; the usable mark at 100 / 1.3 = 76.92 %.
    assert [(p.key, p.bytes // GIB, p.x, p.percent) for p in bar.parts] == [
        ("weights", 60, 0.0, 46.15),
        ("kv", 30, 46.15, 23.08),
        ("overhead", 20, 69.23, 15.38),
        ("offloaded", 20, 84.62, 15.38),
    ]
    assert bar.usable_bytes == 100 * GIB and bar.usable_percent == 76.92


def test_the_memory_bar_leaves_out_empty_parts_and_survives_missing_figures() -> None:
    # "" is what a missing template variable resolves to: it draws as zero bytes.
    bar = memory_bar(weights=50, multimodal="", offloaded=0, kv=0, overhead=25, total=75, usable="")
    # max(75, 0) / 100 = 0.75 bytes per percent: weights 66.67 %, overhead 33.33 % from 66.67
    assert [(p.key, p.x, p.percent) for p in bar.parts] == [
        ("weights", 0.0, 66.67),
        ("overhead", 66.67, 33.33),
    ]
    assert bar.usable_percent == 0.0
    nothing = memory_bar(weights=0, multimodal=0, offloaded=0, kv=0, overhead=0, total=0, usable=0)
    assert nothing.parts == () and nothing.usable_percent == 0.0


def test_the_context_chart_places_one_bar_per_point_under_the_usable_line() -> None:
    points = [
        {"context_tokens": 4096, "per_device_bytes": 40, "verdict": "comfortable"},
        {"context_tokens": 8192, "per_device_bytes": 80, "verdict": "tight"},
        {"context_tokens": 16384, "per_device_bytes": 110, "verdict": "does_not_fit"},
    ]
    chart = context_chart(points, usable=100)
    # Scale: max(100, 40, 80, 110) = 110 bytes over 55 units = 2 bytes per unit. Slots 90 / 3
    # = 30 wide from x = 8; each bar fills 70 % (21) after a 15 % margin (4.5); labels centre.
    assert [(b.x, b.width, b.height, b.y, b.label_x) for b in chart.bars] == [
        (12.5, 21.0, 20.0, 38.0, 23.0),
        (42.5, 21.0, 40.0, 18.0, 53.0),
        (72.5, 21.0, 55.0, 3.0, 83.0),
    ]
    assert [b.point for b in chart.bars] == points
    assert chart.usable_y == 8.0  # 58 - 100 / 2


def test_the_context_chart_reads_objects_too_and_draws_nothing_without_points() -> None:
    class Point:
        per_device_bytes = 55

    (bar,) = context_chart([Point()], usable=0).bars
    # 55 bytes over 55 units; one slot 90 wide: x = 8 + 13.5, width 63, label at 8 + 45
    assert (bar.x, bar.width, bar.height, bar.y, bar.label_x) == (21.5, 63.0, 55.0, 3.0, 53.0)
    empty = context_chart([], usable="")
    assert empty.bars == () and empty.usable_y == 58.0


def test_the_charts_render_as_svg_attributes_without_localised_decimals() -> None:
    template = Template(
        "{% load l10n configurator_charts %}"
        "{% memory_bar weights=3 multimodal=0 offloaded=0 kv=1 overhead=0 total=4 usable=8"
        " as bar %}{% localize off %}{% for p in bar.parts %}{{ p.key }}={{ p.x }}+{{ p.percent }}"
        " {% endfor %}{{ bar.usable_percent }}{% endlocalize %}"
    )
    with translation.override("de"):
        # 0.08 bytes per percent: weights 37.5, kv 12.5 from 37.5, usable at 100.0
        assert template.render(Context()) == "weights=0.0+37.5 kv=37.5+12.5 100.0"


LABELS = [
    # (filter, code, English) for every branch the templates had
    (configurator_labels.verdict_label, "comfortable", "Fits comfortably"),
    (configurator_labels.verdict_label, "tight", "Fits, but tight"),
    (configurator_labels.verdict_label, "does_not_fit", "Does not fit"),
    (configurator_labels.verdict_word, "comfortable", "comfortable"),
    (configurator_labels.verdict_word, "tight", "tight"),
    (configurator_labels.verdict_word, "does_not_fit", "does not fit"),
    (configurator_labels.fits_answer, "tight", "yes"),
    (configurator_labels.fits_answer, "does_not_fit", "no"),
    (configurator_labels.memory_part_label, "weights", "Weights on the GPUs"),
    (configurator_labels.memory_part_label, "kv", "KV cache"),
    (configurator_labels.memory_part_label, "overhead", "Engine overhead"),
    (configurator_labels.memory_part_label, "offloaded", "Offloaded to host memory"),
    (
        configurator_labels.memory_basis_note,
        "reported",
        "the total the driver reports to engines (published, see the card's sources).",
    ),
    (
        configurator_labels.memory_basis_note,
        "built",
        "the capacity as built in binary GiB; the driver's reported total is not published.",
    ),
    (
        configurator_labels.memory_basis_note,
        "vendor",
        "the vendor's figure read as binary GiB (GPU memory is built in binary sizes).",
    ),
    (configurator_labels.finetune_method_label, "full", "Full"),
    (explore.fit_label, "comfortable", "Comfortable"),
    (explore.fit_label, "tight", "Tight"),
    (explore.fit_label, "no_engine", "No engine in the catalog runs here"),
    (explore.fit_label, "does_not_fit", "Does not fit"),
    (explore.compare_label, "max_sequences", "Concurrent sequences that fit"),
    (explore.compare_error, "unsized", "this accelerator lacks memory or bandwidth figures."),
    (reports_tags.figure_label, "ttft_s.estimate", "Time to first token"),
]


@pytest.mark.parametrize(("label", "code", "english"), LABELS)
def test_each_code_gets_its_words_under_a_msgid_every_catalogue_translates(
    label: Callable[[str], str], code: str, english: str
) -> None:
    with translation.override("en"):
        assert label(code) == english
    for lang in ("de", "it", "zh_Hans"):
        entry = polib.pofile(str(LOCALE / lang / "LC_MESSAGES" / "django.po")).find(english)
        assert entry is not None and entry.msgstr, (lang, english)


def test_every_mapped_word_is_a_msgid_the_catalogue_has() -> None:
    german = polib.pofile(str(LOCALE / "de" / "LC_MESSAGES" / "django.po"))
    mappings = [
        configurator_labels.VERDICT_LABELS,
        configurator_labels.VERDICT_WORDS,
        configurator_labels.MEMORY_PARTS,
        configurator_labels.MEMORY_BASES,
        explore.FIT_LABELS,
        explore.COMPARE_LABELS,
        explore.COMPARE_ERRORS,
        reports_tags.FIGURE_LABELS,
    ]
    with translation.override("en"):
        words = [str(word) for mapping in mappings for word in mapping.values()]
    # COMPARE_LABELS: 12 figure rows + cost, cloud price and hardware price.
    assert len(words) == 2 + 2 + 3 + 2 + 3 + 15 + 3 + 14
    assert [w for w in words if german.find(w) is None] == []


def test_names_and_unknown_codes() -> None:
    assert configurator_labels.finetune_method_label("qlora") == "QLoRA"
    assert configurator_labels.finetune_method_label("lora") == "LoRA"
    assert explore.fit_class("comfortable") == "fit-ok"
    assert explore.fit_class("no_engine") == explore.fit_class("does_not_fit") == "fit-no"
    assert explore.compare_label("nope") == "" and reports_tags.figure_label("x.y") == ""
    # An estimator refusal is its own message.
    assert explore.compare_error("context too long") == "context too long"


def test_configure_url_orders_and_drops_parameters() -> None:
    with translation.override("en"):
        url = explore.configure_url("m", "a", ctx=8192, quant=None, engine="llama.cpp")
        assert url == "/en/models/m/on/a/?ctx=8192&engine=llama.cpp"
        assert explore.configure_url("m", "a", quant="Q4_K_M", ctx="") == (
            "/en/models/m/on/a/?quant=Q4_K_M"
        )
        saved = explore.configure_url("m", "a", query={"quant": "Q8_0", "gpus": "2"}, ctx=4096)
        assert saved == "/en/models/m/on/a/?quant=Q8_0&gpus=2&ctx=4096"
