"""The configurator's {% cache %} fragments in one read and one write per timeout
(sizing_site.core.fragment_cache.batched): every part of the page names every fragment it
renders, so none is read or written on its own; a batch keeps what it is given apart from
other keys and writes nothing when the render fails."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.urls import reverse
from django.utils import translation

from sizing_site.core import fragment_cache
from tests.configurator.test_views import GlmOnA100

HTMX = {"HX-Request": "true"}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """The fragments cache's own reads and writes (beneath the batch), by method: a
    get_many's gets and a set_many's sets (local memory's way of doing them) not counted."""
    counted: Counter[str] = Counter()
    inside: list[str] = []

    # The backend beneath the batch: local memory, or Redis where the suite runs with it.
    mro = type(caches[fragment_cache.ALIAS]).__mro__
    backend = mro[mro.index(fragment_cache.BatchingMixin) + 1]

    def spy(name: str) -> Any:
        real = getattr(backend, name)

        def call(self: BaseCache, *args: Any, **kwargs: Any) -> Any:
            if self is caches[fragment_cache.ALIAS] and not inside:
                counted[name] += 1
            inside.append(name)
            try:
                return real(self, *args, **kwargs)
            finally:
                inside.pop()

        return call

    for name in ("get", "set", "get_many", "set_many"):
        monkeypatch.setattr(backend, name, spy(name))
    yield counted


class PagesReadTheirFragmentsOnce(GlmOnA100):
    @pytest.fixture(autouse=True)
    def _calls(self, calls: Counter[str]) -> None:
        self.calls = calls

    def setUp(self) -> None:
        self.client.force_login(self.bob)
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def get(self, query: dict[str, str], headers: dict[str, str] | None = None) -> Counter[str]:
        url = reverse("configurator:configure", args=[self.model.slug, self.card.slug])
        self.calls.clear()
        assert self.client.get(url, query, headers=headers or {}).status_code == 200
        return Counter(self.calls)

    def test_each_part_reads_in_one_round_trip_and_writes_in_one_per_timeout(self) -> None:
        parts = {
            # full page: the form, the answer and results, the analysis inline
            "full": ({}, {"get_many": 1, "set_many": 2}),
            # HTMX results part: the form's out-of-band part, the answer and results
            "results": (HTMX, {"get_many": 1, "set_many": 2}),
            # the analysis part: plan, offers, analysis, FAQ (two timeouts)
            "analysis": ({**HTMX}, {"get_many": 1, "set_many": 2}),
            # a "make it fit" link: the form and the results
            "layout": ({**HTMX, "HX-Target": "cfg-layout"}, {"get_many": 1, "set_many": 2}),
        }
        for name, (headers, new) in parts.items():
            query = {"ctx": "8192", "quant": "Q4_K_M", "seqs": str(len(name))}
            if name == "analysis":
                query["part"] = "analysis"
            # a setup nobody asked before: one read, the writes batched by timeout
            assert self.get(query, headers) == Counter(new), name
            # the same again: one read, every fragment found, nothing written
            assert self.get(query, headers) == Counter({"get_many": 1}), name


class BatchOnItsOwn(GlmOnA100):
    def test_named_fragments_go_to_the_batch_others_to_the_cache(self) -> None:
        cache = caches[fragment_cache.ALIAS]
        named = fragment_cache.fragment_key('"a"', ("k", "en"))
        cache.set(named, "old", 60)
        with fragment_cache.batched([('"a"', ("k", "en")), ('"b"', ("k", "en"))]):
            assert cache.get(named) == "old"  # read on entry
            cache.set(named, "new", 60)
            assert cache.get(named) == "new"  # the batch's own write, read back
            cache.set("other", "x", 60)  # not named: written at once
            assert caches[fragment_cache.ALIAS].get("other") == "x"
            cache.delete(named)  # written again only on a clean exit
            assert cache.get(named) == "new"
        assert cache.get(named) == "new"

    def test_a_failed_render_writes_nothing(self) -> None:
        cache = caches[fragment_cache.ALIAS]
        named = fragment_cache.fragment_key('"c"', ("k", "en"))
        with pytest.raises(RuntimeError), fragment_cache.batched([('"c"', ("k", "en"))]):
            cache.set(named, "half", 60)
            raise RuntimeError
        assert cache.get(named) is None
