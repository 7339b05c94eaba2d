"""What an explore table is asked for, parsed once: the page's GET form and the sweeps
API's query parameters (the same forms, sizing_site.explore.forms, with the API's page
fields) both become one of these frozen queries, which the table selectors take
(sizing_site.explore.selectors)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Self

from catalog.sizing.candidates import ladder_down_to
from sizing_site.explore.forms import ExploreForm, ascii_count

PAGE_SIZE = 50  # rows a page: the model page's, and the sweeps' default
MAX_PAGE_SIZE = 1000
MAX_PAGE = 1_000_000
# Not filters: which page of the table, and the quants the quality floor stands for.
_NOT_FILTERS = frozenset({"quants", "page", "page_size"})


@dataclass(frozen=True, kw_only=True)
class TableQuery:
    """An explore table's filters: the context (tokens), the quality floor and the quants
    from the least compressed down to it, a name filter, whether the rows that do not fit
    are listed, the sort ("-speed" descending), and which page of how many rows."""

    ctx: int
    quality: str
    q: str = ""
    show_all: bool = False
    sort: str
    quants: tuple[str, ...]
    page: int = 1
    page_size: int = PAGE_SIZE

    @classmethod
    def from_form(cls, form: ExploreForm, **paging: int) -> Self:
        """The query of a valid explore form (the page's, or the sweeps API's with its
        page fields); `paging` (page, page_size) where the form has no such fields."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in form.cleaned_data.items() if k in names}
        quants = tuple(ladder_down_to(form.ladder, form.cleaned_data["quality"]))
        return cls(**{**values, **paging, "quants": quants})

    def filters(self) -> dict[str, Any]:
        """The filters by parameter name, as the sweeps API echoes them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_FILTERS}

    def table_key(self) -> tuple[object, ...]:
        """What the table is computed from (not its page): its cache key."""
        return (*self.filters().items(), self.quants)


@dataclass(frozen=True, kw_only=True)
class ModelCardsQuery(TableQuery):
    """A model on every card (explore:model-gpus): also an exact vendor and the card's
    memory at least (GiB)."""

    sort: str = "-speed"
    vendor: str = ""
    memory_min_gb: float | None = None


@dataclass(frozen=True, kw_only=True)
class CardModelsQuery(TableQuery):
    """A card across every model (explore:gpu-models)."""

    sort: str = "-comfort"


def page_number(text: str | None) -> int:
    """A page's `page` parameter, read leniently as a page link may be edited by hand:
    anything but a whole number from 1 is page 1 (a number past the last page shows the
    last; the sweeps API refuses both instead)."""
    return ascii_count((text or "").strip(), most=MAX_PAGE) or 1
