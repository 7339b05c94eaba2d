"""The explore tables' typed queries: one parse of the page's form or the sweep's query
parameters (the same form, with the sweep's page fields), and a page of a table."""

from __future__ import annotations

from django.http import QueryDict
from django.test import SimpleTestCase
from django.utils import translation
from rest_framework import exceptions

from catalog.sizing.candidates import Rung
from sizing_site.explore.forms import CardModelsForm, ModelCardsForm
from sizing_site.explore.queries import (
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    CardModelsQuery,
    ModelCardsQuery,
    page_number,
)
from sizing_site.explore.sweeps_api import ModelCardsInput, sweep_query
from sizing_site.explore.tables import TablePage

LADDER = [Rung("BF16", 16.0, 99), Rung("Q8_0", 8.5, 90), Rung("Q4_K_M", 4.85, 70)]


def model_form(query: str, form_class: type[ModelCardsForm] = ModelCardsForm) -> ModelCardsForm:
    return form_class(
        QueryDict(query), ladder=LADDER, max_context=131072, vendors=["AMD", "NVIDIA"]
    )


class QueryTests(SimpleTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def test_a_bare_page_is_the_defaults(self) -> None:
        form = model_form("")
        assert form.is_valid(), form.errors
        query = ModelCardsQuery.from_form(form, page=3, page_size=PAGE_SIZE)
        assert query == ModelCardsQuery(
            ctx=8192,
            quality="Q4_K_M",
            quants=("BF16", "Q8_0", "Q4_K_M"),
            sort="-speed",
            page=3,
        )
        assert query.filters() == {
            "ctx": 8192,
            "quality": "Q4_K_M",
            "q": "",
            "show_all": False,
            "sort": "-speed",
            "vendor": "",
            "memory_min_gb": None,
        }

    def test_the_filters_and_their_quants_are_read_once(self) -> None:
        form = model_form("ctx=32768&quality=Q8_0&vendor=AMD&memory_min_gb=24&show_all=on&q=rx")
        assert form.is_valid(), form.errors
        query = ModelCardsQuery.from_form(form)
        assert (query.ctx, query.quants, query.vendor) == (32768, ("BF16", "Q8_0"), "AMD")
        assert (query.memory_min_gb, query.show_all, query.q) == (24.0, True, "rx")
        card = CardModelsForm(QueryDict("sort=name"), ladder=LADDER)
        assert card.is_valid(), card.errors
        assert CardModelsQuery.from_form(card).filters() == {
            "ctx": 8192,
            "quality": "Q4_K_M",
            "q": "",
            "show_all": False,
            "sort": "name",
        }

    def test_the_cache_key_leaves_the_page_out(self) -> None:
        form = model_form("sort=name")
        assert form.is_valid()
        first = ModelCardsQuery.from_form(form, page=1, page_size=50)
        other = ModelCardsQuery.from_form(form, page=7, page_size=10)
        assert first.table_key() == other.table_key()
        bare = model_form("")
        assert bare.is_valid()
        assert first.table_key() != ModelCardsQuery.from_form(bare).table_key()

    def test_the_sweep_reads_its_page_from_the_same_form(self) -> None:
        text = "page=2&page_size=1000&vendor=NVIDIA"
        query = sweep_query(ModelCardsQuery, model_form(text, ModelCardsInput), QueryDict(text))
        assert (query.page, query.page_size, query.vendor) == (2, MAX_PAGE_SIZE, "NVIDIA")
        for bad, names in (
            ("page=x&page_size=1001", {"page", "page_size"}),
            ("page=%C2%B2", {"page"}),  # a superscript two is a digit to str.isdigit
            ("page=1&page=2", {"page"}),
            ("ctx=", {"ctx"}),
            ("vendor=Nobody&ctx=lots", {"vendor", "ctx"}),
        ):
            params = QueryDict(bad)
            form = model_form(bad, ModelCardsInput)
            with self.assertRaises(exceptions.ValidationError) as refused:
                sweep_query(ModelCardsQuery, form, params)
            assert set(refused.exception.detail) == names, bad
        params = QueryDict("page_size=0")
        with self.assertRaises(exceptions.ValidationError) as refused:
            sweep_query(ModelCardsQuery, model_form("page_size=0", ModelCardsInput), params)
        detail = refused.exception.detail
        assert detail == {"page_size": ["Enter a whole number from 1 to 1000."]}

    def test_a_page_link_is_read_leniently(self) -> None:
        texts = (None, "", "x", "0", "-2", "²", " 4 ")
        assert [page_number(t) for t in texts] == [1, 1, 1, 1, 1, 1, 4]


class TablePageTests(SimpleTestCase):
    def test_pages_cover_the_rows_and_clamp_the_number(self) -> None:
        rows = list(range(12))
        first = TablePage.of(rows, number=1, size=5)
        assert (list(first), first.pages, first.count, first.has_previous) == (
            [0, 1, 2, 3, 4],
            3,
            12,
            False,
        )
        last = TablePage.of(rows, number=99, size=5)
        assert (last.number, list(last), last.has_next) == (3, [10, 11], False)
        assert last.previous_page_number == 2 and first.next_page_number == 2
        empty: TablePage[int] = TablePage.of([], number=4, size=5)
        assert (empty.number, empty.pages, len(empty)) == (1, 1, 0)
        assert list(TablePage.whole(rows)) == rows
