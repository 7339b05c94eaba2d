"""remembered_many: many sizing-cache entries in one read and one write, the same values
remembered() gives, each missing entry computed once."""

from __future__ import annotations

from django.core.cache import cache
from django.test import TestCase

from catalog.sizing.cache import remembered, remembered_many


class RememberedMany(TestCase):
    def setUp(self) -> None:
        cache.clear()

    def test_it_reads_what_remembered_wrote_and_computes_only_the_misses_once(self) -> None:
        remembered("t", (1,), lambda: "one")  # already cached
        calls: list[tuple[object, ...]] = []

        def compute(parts: tuple[object, ...]) -> str:
            calls.append(parts)
            return f"v{parts[0]}"

        # (1,) is cached ("one", not "v1"); (2,) repeats: computed once, answered twice.
        values = remembered_many("t", [(1,), (2,), (3,), (2,)], compute)
        assert values == ["one", "v2", "v3", "v2"]
        assert calls == [(2,), (3,)]
        # Now all are cached: nothing computed, and remembered() sees what was written.
        assert remembered_many("t", [(3,), (2,)], compute) == ["v3", "v2"]
        assert calls == [(2,), (3,)]
        assert remembered("t", (2,), lambda: "other") == "v2"

    def test_a_cache_that_cannot_be_read_computes_everything(self) -> None:
        def broken(*args: object, **kwargs: object) -> dict[str, object]:
            raise ConnectionError("redis is down")

        original = cache.get_many
        cache.get_many = broken  # type: ignore[method-assign]
        try:
            assert remembered_many("t", [(1,), (2,)], lambda p: p[0]) == [1, 2]
        finally:
            cache.get_many = original  # type: ignore[method-assign]
