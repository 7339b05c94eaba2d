"""Compare: which rows a star can mark, the cost and price rows (the configurator's answer
panel's figures), the column editor that picks models and cards by name, and adding,
copying and removing columns in place (HTMX) with the address kept readable."""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from django.urls import reverse
from django.utils import timezone

from catalog.models import Accelerator
from pricing.models import CloudOffer, CloudProvider
from sizing_site.explore import compare_pick
from sizing_site.explore.compare import (
    COMPARE_ROWS,
    STARRED,
    ColumnCost,
    CompareColumn,
    compare_rows,
)
from tests.explore.seeded import SeededCase

LLAMA_8B = "llama-3-1-8b-instruct"
RTX_4090 = "nvidia-geforce-rtx-4090"
RTX_3060 = "nvidia-geforce-rtx-3060-12gb"
RTX_3090 = "nvidia-geforce-rtx-3090"
HTMX = {"HX-Request": "true"}


def _result(verdict: str, decode: float, utilisation: float, calibrated: bool = True) -> Any:
    speed = {"estimate": decode, "low": decode * 0.8, "high": decode * 1.2}
    return {
        "fit": {"verdict": verdict, "utilisation": utilisation},
        "weights_bytes": int(utilisation * 20e9),
        "decode_tokens_per_s": speed,
        "speed_calibrated": calibrated,
    }


def _column(result: Any, cost: ColumnCost | None = None) -> CompareColumn:
    from catalog.models import LLMModel

    return CompareColumn(
        model=LLMModel(slug="m", name="M"),
        accelerator=Accelerator(slug="a", name="A"),
        quant="Q4_K_M",
        gpus=1,
        result=result,
        cost=cost,
    )


def test_only_rows_where_more_or_less_is_clearly_better_can_be_starred() -> None:
    starred = set(STARRED)
    assert starred == {"decode", "prefill", "ttft", "cost", "cloud_price", "hardware_price"}
    better = {label: side for label, _path, _kind, side in COMPARE_ROWS if side}
    assert better == {
        "decode": "high",
        "prefill": "high",
        "ttft": "low",
        "cost": "low",
        "cloud_price": "low",
        "hardware_price": "low",
    }
    never = {label for label, *_ in COMPARE_ROWS} - STARRED
    assert never == {
        "fit",
        "utilisation",
        "weights",
        "kv",
        "overhead",
        "per_device",
        "usable",
        "max_context",
        "max_sequences",
    }


def test_memory_used_differs_but_only_the_speed_and_cost_get_stars() -> None:
    cheap = ColumnCost(usd_per_million=0.5, basis="rented", usd_per_hour=0.34, provider="X")
    dear = ColumnCost(usd_per_million=2.0, basis="owned", purchase_usd=3599.0)
    rows = {
        r.label: r
        for r in compare_rows(
            [
                _column(_result("comfortable", 120.0, 0.19), cheap),
                _column(_result("tight", 60.0, 0.92), dear),
            ]
        )
    }
    assert rows["utilisation"].values == [0.19, 0.92] and rows["utilisation"].best == set()
    assert rows["weights"].best == set()
    assert rows["decode"].best == {0}  # 120 tok/s against 60: more is better
    assert rows["cost"].best == {0}  # 0.50 USD against 2.00: less is better
    # Each price row has one figure: nothing to star.
    assert rows["cloud_price"].values == [0.34, None] and rows["cloud_price"].best == set()
    assert rows["hardware_price"].values == [None, 3599.0]


def test_a_column_that_does_not_fit_or_is_uncalibrated_gets_no_star() -> None:
    owned = [ColumnCost(usd_per_million=None, basis="", purchase_usd=p) for p in (900.0, 2000.0)]
    rows = {
        r.label: r
        for r in compare_rows(
            [
                _column(_result("does_not_fit", 0.0, 1.4), owned[0]),
                _column(_result("comfortable", 50.0, 0.5), owned[1]),
                _column(_result("comfortable", 80.0, 0.5, calibrated=False), owned[1]),
            ]
        )
    }
    # The cheaper hardware does not run it: no star for its price.
    assert rows["hardware_price"].values == [900.0, 2000.0, 2000.0]
    assert rows["hardware_price"].best == set()
    # The faster column's speed has no published measurement behind it: badged, unstarred.
    assert rows["decode"].uncalibrated == {2} and rows["decode"].best == set()
    assert rows["decode"].values[0] is None  # no speed where it does not fit


class CompareCost(SeededCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        provider = CloudProvider.objects.create(name="Acme GPU", slug="acme-gpu")
        CloudOffer.all_orgs.create(
            provider=provider,
            sku="acme-4090",
            accelerator=Accelerator.objects.get(slug=RTX_4090),
            gpu_count=1,
            on_demand_per_hour=Decimal("0.34"),
            checked_at=timezone.now(),
        )

    def compared(self, path: str = "explore:compare") -> Any:
        params = {
            "c1": f"{LLAMA_8B}:{RTX_4090}:Q4_K_M:1",
            "c2": f"{LLAMA_8B}:{RTX_3060}:Q4_K_M:1",
            "ctx": "8192",
        }
        return self.client.get(reverse(path) if ":" in path else path, params)

    def test_rented_and_owned_costs_are_the_answer_panels(self) -> None:
        response = self.compared()
        assert response.status_code == 200
        rows = {r.label: r for r in response.context["rows"]}
        rented, owned = rows["cost"].values
        decode = rows["decode"].values
        # Rented: Acme's 4090 at 0.34 USD/h over the decode speed of one sequence:
        # 0.34 / (tok/s x 3,600) x 1e6.
        assert rented["basis"] == "rented" and rented["provider"] == "Acme GPU"
        assert rented["usd_per_hour"] == 0.34
        per_million = 0.34 / (decode[0]["estimate"] * 3600) * 1e6
        assert abs(rented["usd_per_million"] - per_million) < 1e-9
        # Owned (no offer for the 3060): 329 USD card + 2,000 USD host = 2,329 USD; 170 W +
        # 150 W = 320 W. Busy 24 h x 50 % x 365/12 days = 365 h a month; 2,329 / 36 months
        # = 64.694 USD plus 0.32 kW x 365 h x 0.15 USD/kWh = 17.52 USD: 82.214 USD / 365 h
        # = 0.22525 USD per busy hour.
        assert owned["basis"] == "owned" and owned["purchase_usd"] == 2329
        per_hour = (2329 / 36 + 0.32 * 365 * 0.15) / 365
        assert abs(per_hour - 0.22525) < 1e-5
        expected = per_hour / (decode[1]["estimate"] * 3600) * 1e6
        assert abs(owned["usd_per_million"] - expected) < 1e-6
        # The price rows: the rented offer's hour, and the hardware as owned (the 4090's
        # 1,599 USD + the 2,000 USD host = 3,599 USD).
        assert rows["cloud_price"].values == [0.34, None]
        assert rows["hardware_price"].values == [3599, 2329]
        assert rows["hardware_price"].best == {1}
        body = response.content.decode()
        assert "Cost per 1M output tokens" in body and "rented: Acme GPU at 0.34 USD/h" in body
        assert "owned: 2,329 USD of hardware" in body

    def test_the_cost_is_localised_in_german(self) -> None:
        response = self.compared("/de/compare/")
        assert response.status_code == 200
        assert "2.329 USD" in response.content.decode()

    def test_the_api_gains_the_cost_rows_and_each_columns_cost(self) -> None:
        response = self.compared("/api/v1/compare/")
        assert response.status_code == 200, response.content[:300]
        data = response.json()
        page = self.compared()
        page_rows = {r.label: r for r in page.context["rows"]}
        rows = {r["figure"]: r for r in data["rows"]}
        for label in ("cost", "cloud_price", "hardware_price"):
            assert rows[label]["values"] == page_rows[label].values
            assert rows[label]["best"] == sorted(page_rows[label].best)
        assert rows["cost"]["kind"] == "cost" and rows["cloud_price"]["kind"] == "usd_per_hour"
        first, second = data["columns"]
        assert first["cost"]["basis"] == "rented" and first["cost"]["usd_per_hour"] == 0.34
        assert second["cost"]["basis"] == "owned" and second["cost"]["purchase_usd"] == 2329
        # The rows the page never starred are still there, unstarred.
        assert rows["utilisation"]["best"] == []


class ColumnEditor(SeededCase):
    def test_names_are_read_as_the_rows_they_name(self) -> None:
        def slug(kind: str, text: str) -> str | None:
            entry = compare_pick.resolve(kind=kind, text=text)
            return None if entry is None else entry.slug

        assert slug("model", "Llama 3.1 8B Instruct") == LLAMA_8B
        assert slug("card", "NVIDIA GeForce RTX 4090") == RTX_4090
        assert slug("card", RTX_4090) == RTX_4090
        assert slug("card", "rtx 4090") == RTX_4090
        assert slug("card", "no such card zz") is None
        # Several models match "llama" alike: no guess.
        assert slug("model", "llama") is None

    def test_the_combobox_offers_what_the_search_finds(self) -> None:
        url = reverse("explore:compare-pick")
        response = self.client.get(url, {"field": "a2", "a2": "4090"}, headers=HTMX)
        assert response.status_code == 200
        body = response.content.decode()
        assert 'id="a2-options"' in body and 'role="listbox"' in body
        assert 'id="a2-option-0" role="option"' in body
        assert 'data-value="NVIDIA GeForce RTX 4090"' in body
        models = self.client.get(url, {"field": "m1", "m1": "llama 3.1 8b"}).content.decode()
        assert 'data-value="Llama 3.1 8B Instruct"' in models
        # An empty card field offers the curated cards; an empty model field nothing.
        assert 'role="option"' in self.client.get(url, {"field": "a1"}).content.decode()
        assert 'role="option"' not in self.client.get(url, {"field": "m1"}).content.decode()
        assert self.client.get(url, {"field": "x9"}).status_code == 400

    def editor(self, **fields: str) -> dict[str, str]:
        return {"ctx": "8192", **fields}

    def test_the_form_sent_without_javascript_redirects_to_the_readable_address(self) -> None:
        data = self.editor(m1="Llama 3.1 8B Instruct", a1="rtx 4090", q1="Q4_K_M", g1="1")
        response = self.client.get(reverse("explore:compare"), data)
        assert response.status_code == 302
        assert unquote(response["Location"]).endswith(
            f"?c1={LLAMA_8B}:{RTX_4090}:Q4_K_M:1&ctx=8192"
        )

    def test_adding_a_column_in_place_pushes_the_readable_address(self) -> None:
        data = self.editor(
            m1=LLAMA_8B, a1=RTX_4090, q1="Q4_K_M", g1="1", m2="Llama 3.1 8B Instruct", a2="3090"
        )
        response = self.client.get(reverse("explore:compare"), data, headers=HTMX)
        assert response.status_code == 200
        body = response.content.decode()
        assert "<html" not in body and body.lstrip().startswith('<div id="compare"')
        expected = f"?c1={LLAMA_8B}:{RTX_4090}:Q4_K_M:1&c2={LLAMA_8B}:{RTX_3090}::1&ctx=8192"
        assert unquote(response["HX-Push-Url"]).endswith(expected)
        assert len(response.context["columns"]) == 2
        # The editor names the rows, not their slugs, and offers a third, empty column.
        slots = response.context["slots"]
        assert [s["card"] for s in slots] == [
            "NVIDIA GeForce RTX 4090",
            "NVIDIA GeForce RTX 3090",
            "",
        ]

    def test_removing_and_copying_a_column_are_links_to_the_readable_address(self) -> None:
        c = [f"{LLAMA_8B}:{card}:Q4_K_M:1" for card in (RTX_4090, RTX_3090, RTX_3060)]
        params = {"c1": c[0], "c2": c[1], "c3": c[2], "ctx": "8192"}
        page = self.client.get(reverse("explore:compare"), params)
        slots = page.context["slots"]
        assert len(slots) == 4 and slots[3]["model"] == ""
        remove = slots[1]["remove"]
        assert unquote(remove).endswith(f"?c1={c[0]}&c2={c[2]}&ctx=8192")
        assert unquote(slots[1]["copy"]).endswith(
            f"?c1={c[0]}&c2={c[1]}&c3={c[2]}&c4={c[1]}&ctx=8192"
        )
        assert f'hx-get="{remove}"' in page.content.decode().replace("&amp;", "&")
        removed = self.client.get(remove, headers=HTMX)
        assert removed.status_code == 200
        assert [col.accelerator.slug for col in removed.context["columns"]] == [RTX_4090, RTX_3060]
        # Four columns: no copy link and no empty slot.
        full = self.client.get(reverse("explore:compare"), {**params, "c4": c[0]})
        assert len(full.context["slots"]) == 4
        assert all(not s["copy"] for s in full.context["slots"])

    def test_a_name_that_matches_no_single_row_keeps_the_text_and_says_so(self) -> None:
        data = self.editor(m1=LLAMA_8B, a1="zz no such card", m2=LLAMA_8B)
        response = self.client.get(reverse("explore:compare"), data, headers=HTMX)
        assert response.status_code == 400
        body = response.content.decode()
        assert "Column 1: no single accelerator matches “zz no such card”" in body
        assert "Column 2: pick both a model and an accelerator." in body
        assert 'value="zz no such card"' in body
