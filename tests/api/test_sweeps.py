"""/api/v1/sweeps/ and /api/v1/compare/: the explore pages' tables for scripts. Each row
is the page's (and its selector's) row for the same query, field by field; filters change
the rows as on the page; bad filters are 400 naming the parameter, unknown slugs 404;
conditional GETs answer 304; the query count does not grow with the page size."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog import hardware
from catalog.sizing import candidates
from catalog.sizing.cache import bump_catalog_version
from sizing_site.explore import costs, tables
from tests.explore.seeded import SeededCase

LLAMA_8B = "llama-3-1-8b-instruct"
RTX_4090 = "nvidia-geforce-rtx-4090"
RTX_3090 = "nvidia-geforce-rtx-3090"
H100 = "nvidia-h100-pcie-80gb"
MODEL_API = f"/api/v1/sweeps/models/{LLAMA_8B}/accelerators/"
CARD_API = f"/api/v1/sweeps/accelerators/{RTX_4090}/models/"
COMPARE_API = "/api/v1/compare/"


def speed(fit: Any) -> dict[str, float] | None:
    s = fit.decode_tokens_per_s
    return None if s is None else {"estimate": s.estimate, "low": s.low, "high": s.high}


def cost(row: Any) -> dict[str, Any] | None:
    c = row.cost
    if c is None:
        return None
    return {
        "usd_per_million_tokens": c.usd_per_million,
        "basis": c.basis,
        "usd_per_hour": c.usd_per_hour,
        "provider": c.provider,
    }


def fit_figures(row: Any, ctx: int) -> dict[str, Any]:
    """What the API says of a selector row's fit."""
    fit = row.fit
    return {
        "fits": row.fits,
        "verdict": fit.verdict,
        "quant": fit.quant,
        "engine": fit.engine,
        "backend": fit.backend,
        "gpus": 1,
        "context_tokens": ctx,
        "need_bytes": fit.need_bytes,
        "usable_bytes": fit.usable_bytes,
        "decode_tokens_per_s": speed(fit),
        "calibrated": fit.calibrated,
        "confidence": row.confidence,
    }


class SweepsCase(SeededCase):
    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        response = self.client.get(path, params or {})
        self.assertEqual(response.status_code, 200, response.content[:400])
        return response.json()

    def model_table(self, ctx: int = 8192, **filters: Any) -> tables.CardTable:
        """The model page's table built afresh from the catalog (not through the cached
        selector that the page and the sweep share)."""
        ladder = candidates.quant_ladder()
        return tables.model_card_table(
            model=candidates.explore_model(slug=LLAMA_8B),
            accelerators=candidates.sweep_accelerators(),
            quants=candidates.ladder_down_to(ladder, candidates.default_floor(ladder)),
            context_tokens=ctx,
            offers=costs.cheapest_offers(),
            powers=costs.unit_powers(),
            matrix=hardware.support_matrix(),
            **filters,
        )

    def page_table(self, name: str, slug: str, params: dict[str, Any]) -> Any:
        """The table the page rendered for the same query."""
        response = self.client.get(reverse(name, args=[slug]), params)
        self.assertEqual(response.status_code, 200)
        return response.context["table"]


class ModelSweepTests(SweepsCase):
    def test_rows_are_the_pages_rows_field_by_field(self) -> None:
        params = {"ctx": "8192", "show_all": "true", "page_size": "1000"}
        data = self.get_json(MODEL_API, params)
        page = self.page_table("explore:model-gpus", LLAMA_8B, params)
        self.assertEqual(data["count"], len(page.rows))
        self.assertEqual(len(data["results"]), len(page.rows))
        self.assertGreater(len(page.rows), 20)
        for got, row in zip(data["results"], page.rows, strict=True):
            self.assertEqual(got["accelerator"]["slug"], row.accelerator.slug)
            self.assertEqual(got["fit"], fit_figures(row, 8192))
            self.assertEqual(got["cost"], cost(row))
            self.assertEqual(got["usd_per_token_per_s"], row.usd_per_token_per_s)
            self.assertEqual(got["shortfall_bytes"], row.shortfall_bytes)
        summary = data["summary"]
        self.assertEqual(summary["fitting"], page.fitting)
        self.assertEqual(summary["candidates"], page.candidates)
        self.assertEqual(summary["median_tokens_per_s"], page.median_speed)
        self.assertEqual(summary["median_of"], page.median_of)
        self.assertEqual(summary["confidence_counts"], page.confidence_counts)
        miss = page.nearest_miss
        self.assertEqual(
            summary["nearest_miss"] and summary["nearest_miss"]["accelerator"]["slug"],
            miss and miss.accelerator.slug,
        )
        self.assertEqual(summary["fastest"]["accelerator"]["slug"], page.fastest.accelerator.slug)

    def test_several_cards_match_the_selector(self) -> None:
        data = self.get_json(MODEL_API, {"page_size": "1000"})
        by_slug = {r["accelerator"]["slug"]: r for r in data["results"]}
        table = self.model_table()
        rows = {r.accelerator.slug: r for r in table.rows}
        for slug in (RTX_4090, RTX_3090, H100):
            got, row = by_slug[slug], rows[slug]
            self.assertEqual(got["fit"]["quant"], row.fit.quant)
            self.assertEqual(got["fit"]["verdict"], row.fit.verdict)
            self.assertEqual(got["fit"]["decode_tokens_per_s"], speed(row.fit))
            self.assertEqual(got["cost"], cost(row))
        # Llama 3.1 8B at 8K fits a 4090 in BF16 (tests/explore/test_pages.py).
        self.assertEqual(by_slug[RTX_4090]["fit"]["quant"], "BF16")
        # Fastest first, as the page sorts by default.
        speeds = [
            r["fit"]["decode_tokens_per_s"]["estimate"]
            for r in data["results"]
            if r["fit"]["calibrated"]
        ]
        self.assertEqual(speeds, sorted(speeds, reverse=True))

    def test_filters_change_the_rows_as_on_the_page(self) -> None:
        everything = self.get_json(MODEL_API, {"page_size": "1000"})
        nvidia = self.get_json(MODEL_API, {"vendor": "NVIDIA", "page_size": "1000"})
        self.assertLess(nvidia["count"], everything["count"])
        self.assertEqual({r["accelerator"]["vendor"] for r in nvidia["results"]}, {"NVIDIA"})
        table = self.model_table(vendor="NVIDIA")
        self.assertEqual(
            [r["accelerator"]["slug"] for r in nvidia["results"]],
            [r.accelerator.slug for r in table.rows],
        )
        big = self.get_json(MODEL_API, {"memory_min_gb": "48", "page_size": "1000"})
        self.assertTrue(all(r["accelerator"]["memory_gib"] >= 48 for r in big["results"]))
        self.assertEqual(big["count"], len(self.model_table(memory_min_gb=48.0).rows))
        # At 128K the KV cache alone is 16 GiB: the 4090 drops below BF16.
        long = self.get_json(MODEL_API, {"ctx": "131072", "q": "RTX 4090"})
        row = next(r for r in long["results"] if r["accelerator"]["slug"] == RTX_4090)
        expected = next(
            r for r in self.model_table(ctx=131072).rows if r.accelerator.slug == RTX_4090
        )
        self.assertNotIn(row["fit"]["quant"], (None, "BF16"))
        self.assertEqual(row["fit"]["quant"], expected.fit.quant)
        self.assertEqual(row["fit"]["context_tokens"], 131072)
        # Sorted by name, as the page's sort.
        named = self.get_json(MODEL_API, {"sort": "name", "page_size": "1000"})
        self.assertEqual(
            [r["accelerator"]["slug"] for r in named["results"]],
            [r.accelerator.slug for r in self.model_table(sort="name").rows],
        )
        # show_all adds the cards that cannot run it.
        shown = self.get_json(MODEL_API, {"show_all": "true", "page_size": "1000"})
        self.assertGreater(shown["count"], everything["count"])
        self.assertEqual(everything["count"], everything["summary"]["fitting"])

    def test_pages_cover_the_table(self) -> None:
        whole = self.get_json(MODEL_API, {"page_size": "1000"})["results"]
        first = self.get_json(MODEL_API, {"page_size": "7"})
        second = self.get_json(MODEL_API, {"page_size": "7", "page": "2"})
        self.assertEqual(first["pages"], -(-first["count"] // 7))
        self.assertEqual(first["results"] + second["results"], whole[:14])
        default = self.get_json(MODEL_API)
        self.assertEqual(default["page_size"], 50)
        self.assertEqual(len(default["results"]), min(50, default["count"]))


class CardSweepTests(SweepsCase):
    def test_rows_are_the_pages_rows_field_by_field(self) -> None:
        params = {"show_all": "true", "page_size": "1000"}
        data = self.get_json(CARD_API, params)
        page = self.page_table("explore:gpu-models", RTX_4090, params)
        self.assertEqual(data["count"], len(page.rows))
        for got, row in zip(data["results"], page.rows, strict=True):
            self.assertEqual(got["model"]["slug"], row.model.slug)
            self.assertEqual(got["fit"], fit_figures(row, 8192))
            self.assertEqual(got["cost"], cost(row))
        self.assertEqual(data["summary"]["fitting"], page.fitting)
        self.assertEqual(data["summary"]["comfortable"], page.comfortable)
        self.assertEqual(len(data["summary"]["skipped"]), len(page.skipped))
        self.assertEqual(data["summary"]["median_tokens_per_s"], page.median_speed)
        llama = next(r for r in data["results"] if r["model"]["slug"] == LLAMA_8B)
        self.assertEqual(llama["fit"]["quant"], "BF16")
        # The model sweep says the same of the same pair.
        model_rows = self.get_json(MODEL_API, {"q": "RTX 4090"})["results"]
        pair = next(r for r in model_rows if r["accelerator"]["slug"] == RTX_4090)
        self.assertEqual(pair["fit"], llama["fit"])

    def test_a_longer_context_skips_models_and_shrinks_quants(self) -> None:
        short = self.get_json(CARD_API, {"page_size": "1000"})
        long = self.get_json(CARD_API, {"ctx": "131072", "page_size": "1000"})
        self.assertLess(long["count"], short["count"])
        self.assertGreaterEqual(len(long["summary"]["skipped"]), len(short["summary"]["skipped"]))
        page = self.page_table("explore:gpu-models", RTX_4090, {"ctx": "131072"})
        self.assertEqual(long["count"], len(page.rows))


class SameRowsTests(SweepsCase):
    """The page and the sweep call one selector with one typed query: for the same
    filters they list the same cards or models in the same order, each with the same
    quant, fit, speeds and cost."""

    def assert_same_rows(self, api: str, name: str, slug: str, params: dict[str, str]) -> None:
        data = self.get_json(api, {**params, "page_size": "1000"})
        bump_catalog_version()  # the page computes its table afresh, not from the sweep's
        page = self.page_table(name, slug, params)
        self.assertEqual(data["count"], len(page.rows), params)
        self.assertEqual(data["summary"]["fitting"], page.fitting, params)
        self.assertEqual(data["summary"]["median_tokens_per_s"], page.median_speed, params)
        ctx = int(params.get("ctx", "8192"))
        for got, row in zip(data["results"], page.rows, strict=True):
            lead = got.get("accelerator") or got["model"]
            expected = row.accelerator if hasattr(row, "accelerator") else row.model
            self.assertEqual(lead["slug"], expected.slug, params)
            self.assertEqual(got["fit"], fit_figures(row, ctx), params)
            self.assertEqual(got["cost"], cost(row), params)

    def test_the_model_page_and_its_sweep(self) -> None:
        for params in (
            {},
            {"vendor": "NVIDIA", "sort": "cost"},
            {"memory_min_gb": "24", "quality": "Q8_0", "show_all": "true"},
            {"q": "RTX", "ctx": "32768", "sort": "-memory"},
        ):
            self.assert_same_rows(MODEL_API, "explore:model-gpus", LLAMA_8B, params)

    def test_the_card_page_and_its_sweep(self) -> None:
        for params in (
            {},
            {"show_all": "true", "sort": "name"},
            {"q": "llama", "quality": "Q8_0", "sort": "-speed"},
            {"ctx": "32768", "sort": "need"},
        ):
            self.assert_same_rows(CARD_API, "explore:gpu-models", RTX_4090, params)


class CompareTests(SweepsCase):
    def test_columns_and_rows_are_the_pages(self) -> None:
        c1, c2 = f"{LLAMA_8B}:{RTX_4090}:Q4_K_M:1", f"{LLAMA_8B}:nvidia-geforce-rtx-3060-12gb"
        params = {"c1": c1, "c3": c2, "ctx": "8192"}
        data = self.get_json(COMPARE_API, params)
        page = self.client.get(reverse("explore:compare"), params)
        self.assertEqual(page.status_code, 200)
        columns = page.context["columns"]
        self.assertEqual([c["param"] for c in data["columns"]], ["c1", "c3"])
        # No quant: the best that fits, as the configurator sizes it (Q8_0 on 12 GB); the
        # spec names the quant sized.
        self.assertEqual(columns[1].quant, "Q8_0")
        self.assertEqual(data["columns"][1]["spec"], f"{c2}:Q8_0:1")
        for got, column in zip(data["columns"], columns, strict=True):
            self.assertEqual(got["result"], column.result)
            self.assertEqual(got["engine"], column.choice.engine)
        rows = page.context["rows"]
        self.assertEqual(
            data["rows"],
            [
                {"figure": r.label, "kind": r.kind, "values": r.values, "best": sorted(r.best)}
                for r in rows
            ],
        )
        decode = next(r for r in data["rows"] if r["figure"] == "decode")
        self.assertEqual(decode["best"], [0])  # the 4090 decodes faster


class RefusalTests(SweepsCase):
    def assert_errors(
        self, path: str, params: dict[str, str], status: int, names: set[str]
    ) -> None:
        response = self.client.get(path, params)
        self.assertEqual(response.status_code, status, response.content[:300])
        self.assertEqual(set(response.json()["errors"]), names, response.json())

    def test_bad_filters_are_400_naming_the_parameter(self) -> None:
        for params, names in (
            ({"ctx": "lots"}, {"ctx"}),
            ({"ctx": "100"}, {"ctx"}),
            ({"ctx": "99999999"}, {"ctx"}),  # past the model's own limit
            ({"sort": "fastest"}, {"sort"}),
            ({"vendor": "Nobody"}, {"vendor"}),
            ({"quality": "Q9"}, {"quality"}),
            ({"memory_min_gb": "-1"}, {"memory_min_gb"}),
            ({"page_size": "0"}, {"page_size"}),
            ({"page_size": "1001", "page": "x"}, {"page_size", "page"}),
        ):
            self.assert_errors(MODEL_API, params, 400, names)
        self.assert_errors(CARD_API, {"ctx": "lots", "sort": "speedy"}, 400, {"ctx", "sort"})
        self.assert_errors(COMPARE_API, {"c2": f"{LLAMA_8B}:{RTX_4090}:Q9"}, 400, {"c2"})
        self.assert_errors(COMPARE_API, {"c1": "only-one-part", "ctx": "1"}, 400, {"c1", "ctx"})

    def test_unknown_slugs_are_404_in_the_error_shape(self) -> None:
        self.assert_errors("/api/v1/sweeps/models/no-such/accelerators/", {}, 404, {"model"})
        self.assert_errors("/api/v1/sweeps/accelerators/no-such/models/", {}, 404, {"accelerator"})
        self.assert_errors(COMPARE_API, {"c1": f"{LLAMA_8B}:{RTX_4090}", "c2": "x:y"}, 404, {"c2"})
        self.assert_errors(MODEL_API, {"page": "999"}, 404, {"page"})

    def test_anonymous_is_refused(self) -> None:
        self.client.logout()
        for path in (MODEL_API, CARD_API, COMPARE_API):
            self.assertEqual(self.client.get(path).status_code, 403)


class ConditionalTests(SweepsCase):
    def test_if_none_match_answers_304_per_query_and_staff_flag(self) -> None:
        for path in (MODEL_API, CARD_API, f"{COMPARE_API}?c1={LLAMA_8B}:{RTX_4090}"):
            first = self.client.get(path)
            self.assertEqual(first.status_code, 200)
            etag = first["ETag"]
            self.assertTrue(first.has_header("Last-Modified"))
            again = self.client.get(path, headers={"If-None-Match": etag})
            self.assertEqual(again.status_code, 304, path)
            self.assertEqual(again.content, b"")
        other = self.client.get(MODEL_API, {"ctx": "16384"})
        self.assertNotEqual(other["ETag"], self.client.get(MODEL_API)["ETag"])
        etag = self.client.get(MODEL_API)["ETag"]
        staff = User.objects.create_user("staffer", "s@a.example", "pw-staff-123", is_staff=True)
        self.client.force_login(staff)
        self.assertEqual(
            self.client.get(MODEL_API, headers={"If-None-Match": etag}).status_code, 200
        )


class QueryCountTests(SweepsCase):
    def queries(self, path: str, params: dict[str, str]) -> int:
        with CaptureQueriesContext(connection) as ctx:
            self.assertEqual(self.client.get(path, params).status_code, 200)
        return len(ctx.captured_queries)

    def test_a_bigger_page_reads_no_more(self) -> None:
        for path in (MODEL_API, CARD_API):
            self.client.get(path, {"show_all": "true"})  # the sweep itself, cached
            small = self.queries(path, {"show_all": "true", "page_size": "5"})
            big = self.queries(path, {"show_all": "true", "page_size": "1000"})
            self.assertEqual(small, big, path)
            self.assertLessEqual(big, 12, path)


class SweepBoundsTests(SweepsCase):
    """Found in review: the card sweep took any context, and its cache keyed the raw query."""

    def test_a_context_past_every_models_is_a_400_on_both_sweeps(self) -> None:
        huge = {"ctx": "99999999999999999999"}
        for url in (
            "/api/v1/sweeps/accelerators/nvidia-geforce-rtx-4090/models/",
            "/api/v1/sweeps/models/llama-3-1-8b-instruct/accelerators/",
        ):
            response = self.client.get(url, huge)
            assert response.status_code == 400, url
            assert list(response.json()["errors"]) == ["ctx"], url

    def test_a_parameter_the_form_ignores_is_answered_from_the_cache(self) -> None:
        url = "/api/v1/sweeps/accelerators/nvidia-geforce-rtx-4090/models/"
        first = self.client.get(url, {"ctx": "8192"}).json()
        with CaptureQueriesContext(connection) as cached:
            self.client.get(url, {"ctx": "8192"})
        # Keyed on the raw query, "x=2" would be a new entry: a sweep over every model.
        with CaptureQueriesContext(connection) as other:
            again = self.client.get(url, {"ctx": "8192", "x": "2"}).json()
        assert len(other) == len(cached)
        assert again == first
