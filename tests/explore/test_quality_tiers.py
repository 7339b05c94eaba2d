"""Quality tiers on the pages: every format the configurator offers carries its tier in
the select, the explore filter groups its options by tier and defaults to the lowest
"good" rung, a table's format cell has a tier badge apart from the fit badge, and a
ranking whose rows are at different formats says so."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

from django.http import QueryDict
from django.template.loader import render_to_string
from django.test import SimpleTestCase
from django.utils import translation

from catalog.sizing.candidates import Rung, default_floor
from estimator import quality
from sizing_site.configurator.fields import GGUF_ORDER, HF_ORDER, option_label, weights_choices
from sizing_site.explore.forms import ModelCardsForm
from sizing_site.explore.tables import CardTable, distinct_formats

CSV = Path(__file__).resolve().parents[2] / "catalog" / "data" / "quant_formats.csv"


def catalog_ladder() -> list[Rung]:
    """The catalog's GGUF rungs, least compressed first (as candidates.quant_ladder)."""
    with CSV.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["family"] == "gguf"]
    rows.sort(key=lambda r: (-int(r["quality_rank"]), r["name"]))
    return [Rung(r["name"], float(r["bits_per_weight"]), int(r["quality_rank"])) for r in rows]


def row(quant: str | None) -> SimpleNamespace:
    return SimpleNamespace(fit=SimpleNamespace(quant=quant))


def card_table(quants: list[str | None]) -> CardTable:
    rows = [row(q) for q in quants]
    return CardTable(
        rows=rows,  # type: ignore[arg-type]
        candidates=len(rows),
        fitting=len(rows),
        smallest=None,
        fastest=None,
        top_speed=rows,  # type: ignore[arg-type]
        top_price=[],
    )


class TierLabelTests(SimpleTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def test_every_format_the_form_offers_has_a_tier(self) -> None:
        assert [q for q in (*GGUF_ORDER, *HF_ORDER) if quality.tier_of(q) is None] == []

    def test_every_option_of_the_weights_select_names_its_tier(self) -> None:
        groups = weights_choices(None, None, moe=True).groups
        labels = dict(option for _group, options in groups for option in options)
        assert len(labels) == len(GGUF_ORDER) + len(HF_ORDER)
        assert labels["Q4_K_M"] == "Q4_K_M · recommended"
        assert labels["IQ1_S"] == "IQ1_S · experimental"
        assert labels["awq-int4"] == "awq-int4 · good"
        assert all(label.split(" · ")[1] in quality.TIERS for label in labels.values())

    def test_the_labels_are_translated(self) -> None:
        with translation.override("de"):
            assert option_label("Q4_K_M").startswith("Q4_K_M · ")
            assert option_label("Q9_Z") == "Q9_Z"  # no tier, no label

    def test_the_quality_filter_groups_by_tier_and_defaults_to_good(self) -> None:
        ladder = catalog_ladder()
        # The lowest "good" rung of the catalog's ladder (quality rank 63, 4.25 bpw); the
        # old floor, IQ3_XXS (3.0625 bpw, KLD 0.184), is degraded.
        assert default_floor(ladder) == "MXFP4_MOE"
        form = ModelCardsForm(QueryDict(""), ladder=ladder, max_context=131072, vendors=[])
        assert form.is_valid(), form.errors
        assert form.cleaned_data["quality"] == "MXFP4_MOE"
        groups = form.fields["quality"].choices  # type: ignore[attr-defined]
        assert [g for g, _options in groups] == ["Recommended", "Good", "Degraded", "Experimental"]
        options = dict(o for _g, opts in groups for o in opts)
        assert options["IQ1_S"] == "IQ1_S · experimental (1.5625 bits per weight)"
        # A lower floor stays a choice: picked explicitly, it is valid.
        low = ModelCardsForm(
            QueryDict("quality=IQ1_S"), ladder=ladder, max_context=131072, vendors=[]
        )
        assert low.is_valid(), low.errors


class TierBadgeTests(SimpleTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def render(self, quant: str, lead: str = "", verdict: str = "comfortable") -> str:
        fit = SimpleNamespace(quant=quant, engine="", backend="", verdict=verdict)
        table = SimpleNamespace(lead_quant=lead)
        return render_to_string("explore/_bits.html#quant", {"fit": fit, "table": table})

    def test_iq1_s_has_an_experimental_badge_that_is_not_the_fits_green(self) -> None:
        html = self.render("IQ1_S")
        assert 'data-tier="experimental"' in html and "tier-experimental" in html
        assert "fit-ok" not in html  # the fit (memory) badge is a separate cell

    def test_a_row_at_another_format_than_the_first_says_so(self) -> None:
        html = self.render("BF16", lead="Q5_K_M")
        assert 'data-format-diff="Q5_K_M"' in html and "at BF16 vs Q5_K_M" in html
        assert "data-format-diff" not in self.render("Q5_K_M", lead="Q5_K_M")


class RankedFormatTests(SimpleTestCase):
    def test_a_ranking_with_mixed_formats_says_so(self) -> None:
        # An H100 at Q5_K_M ranked above a B300 at BF16: two formats, the first Q5_K_M.
        table = card_table(["Q5_K_M", "BF16", "Q5_K_M"])
        assert table.mixed_formats
        assert table.lead_quant == table.speed_lead_quant == "Q5_K_M"
        assert distinct_formats(table.rows) == ["Q5_K_M", "BF16"]

    def test_one_format_is_not_mixed(self) -> None:
        table = card_table(["Q4_K_M", None, "Q4_K_M"])
        assert not table.mixed_formats and table.lead_quant == "Q4_K_M"
        assert card_table([]).lead_quant == ""
