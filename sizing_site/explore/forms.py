"""Filter forms of the explore pages: GET parameters in, validated values out.

Every field may be left out (its default applies), so a bare URL is a valid page; a bad
value is a form error shown on the page with status 400, never a 500.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.validators import MaxValueValidator
from django.http import QueryDict
from django.utils import formats
from django.utils.translation import gettext_lazy as _

from catalog.sizing.candidates import DEFAULT_CONTEXT_TOKENS, Rung, default_floor
from estimator import quality
from sizing_site.configurator.fields import TIER_LABELS, option_label
from sizing_site.configurator.forms import ALL_FORMATS, ENGINE_CHOICES

# The configurator's default prompt (512) and output (256) tokens must fit in the context.
MIN_CONTEXT_TOKENS = 1024
# The longest context any catalog model reads (Llama 4 Scout, 10M tokens; a model's own
# limit applies on its page): the card page's bound, which reads every model.
MAX_CONTEXT_TOKENS = 10_000_000

CARD_SORT_CHOICES = [
    ("-speed", _("Fastest first")),
    ("speed", _("Slowest first")),
    ("memory", _("Least memory first")),
    ("-memory", _("Most memory first")),
    ("-bandwidth", _("Most bandwidth first")),
    ("bandwidth", _("Least bandwidth first")),
    ("-release", _("Newest first")),
    ("release", _("Oldest first")),
    ("need", _("Least memory needed first")),
    ("-need", _("Most memory needed first")),
    ("price", _("Lowest price per tok/s first")),
    ("-price", _("Highest price per tok/s first")),
    ("cost", _("Lowest cost per 1M tokens first")),
    ("-cost", _("Highest cost per 1M tokens first")),
    ("name", _("Name A-Z")),
    ("-name", _("Name Z-A")),
    ("vendor", _("Vendor A-Z")),
    ("-vendor", _("Vendor Z-A")),
    ("-quant", _("Quant Z-A")),
    ("quant", _("Quant A-Z")),
]
MODEL_SORT_CHOICES = [
    ("-comfort", _("Largest that runs comfortably first")),
    ("-speed", _("Fastest first")),
    ("speed", _("Slowest first")),
    ("need", _("Least memory needed first")),
    ("-need", _("Most memory needed first")),
    ("-params", _("Largest first")),
    ("params", _("Smallest first")),
    ("name", _("Name A-Z")),
    ("-name", _("Name Z-A")),
    ("quant", _("Quant A-Z")),
    ("-quant", _("Quant Z-A")),
]


class ExploreForm(forms.Form):
    ctx = forms.IntegerField(
        label=_("Context (tokens)"), min_value=MIN_CONTEXT_TOKENS, max_value=MAX_CONTEXT_TOKENS
    )
    quality = forms.ChoiceField(
        label=_("Minimum quality"),
        help_text=_("The most compressed quantization you accept."),
    )
    q = forms.CharField(label=_("Search"), required=False, max_length=100)
    show_all = forms.BooleanField(required=False)
    sort = forms.ChoiceField(label=_("Sort"))

    sort_choices: Sequence[tuple[str, Any]] = ()

    def __init__(
        self, data: QueryDict, *, ladder: Sequence[Rung], max_context: int, **kw: Any
    ) -> None:
        # Missing parameters take their defaults in the data itself, so the page's form
        # shows the values the table was computed with.
        data = data.copy()
        for name, value in self.defaults(ladder, max_context).items():
            if not data.get(name):
                data[name] = value
        kw.setdefault("label_suffix", "")
        super().__init__(data, **kw)
        self.ladder = ladder
        self.max_context = max_context
        self.fields["quality"].choices = quality_choices(ladder)  # type: ignore[attr-defined]
        self.fields["sort"].choices = self.sort_choices  # type: ignore[attr-defined]
        if max_context:
            self.fields["ctx"].validators.append(
                MaxValueValidator(
                    max_context,
                    message=_("This model reads at most %(limit_value)s tokens of context."),
                )
            )

    default_sort = "-speed"

    @classmethod
    def defaults(cls, ladder: Sequence[Rung], max_context: int) -> dict[str, str]:
        ctx = min(DEFAULT_CONTEXT_TOKENS, max_context) if max_context else DEFAULT_CONTEXT_TOKENS
        return {"ctx": str(ctx), "quality": default_floor(ladder), "sort": cls.default_sort}


def quality_choices(ladder: Sequence[Rung]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The quality filter's options, grouped under their tier's name (estimator.quality),
    each with its tier and bits: "Q4_K_M · recommended (4.5 bits per weight)". A rung the
    tier table does not know (an organisation's own format) is listed under "other"."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for r in ladder:
        label = _("%(quant)s (%(bits)s bits per weight)") % {
            "quant": option_label(r.name),
            "bits": formats.number_format(r.bits_per_weight, use_l10n=True),
        }
        groups.setdefault(quality.tier_of(r.name) or "", []).append((r.name, label))
    return [
        (str(TIER_LABELS.get(tier, _("other"))).capitalize(), options)
        for tier, options in groups.items()
    ]


class ModelCardsForm(ExploreForm):
    """§2: one model on every card."""

    vendor = forms.ChoiceField(label=_("Vendor"), required=False)
    memory_min_gb = forms.FloatField(label=_("Memory at least (GiB)"), required=False, min_value=0)
    sort_choices = CARD_SORT_CHOICES

    def __init__(self, *args: Any, vendors: Sequence[str], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fields["show_all"].label = _("Show cards that cannot run it")
        self.fields["vendor"].choices = [  # type: ignore[attr-defined]
            ("", _("All")),
            *((v, v) for v in vendors),
        ]


class CardModelsForm(ExploreForm):
    """§3: one card across every model; a model with a shorter maximum context is skipped.
    Sorted by default by the largest model that runs comfortably (toy models last)."""

    sort_choices = MODEL_SORT_CHOICES
    default_sort = "-comfort"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, max_context=0, **kw)
        self.fields["show_all"].label = _("Show models it cannot run")


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Model or GPU"), required=False, max_length=100, strip=True)


MAX_COLUMNS = 4
MAX_GPUS = 8
# The engines a column may name: the configurator's (ConfigureForm's engine choices).
COMPARE_ENGINES = frozenset(name for name, _label in ENGINE_CHOICES)


def column_param(model: str, card: str, quant: str, gpus: int | str, engine: str) -> str:
    """A compare column's parameter; the engine part only when it names one, so that a
    column on the card's default engine keeps its four-part address."""
    param = f"{model}:{card}:{quant}:{gpus}"
    return f"{param}:{engine}" if engine else param


@dataclass(frozen=True)
class ColumnSpec:
    """One compare column as written in the URL:
    c1=<model>:<accelerator>:<quant>:<gpus>[:<engine>]. As on the configurator, quant ""
    asks for the best that fits and engine "" for the card's default engine."""

    model_slug: str
    accelerator_slug: str
    quant: str = ""
    gpus: int = 1
    engine: str = ""

    @property
    def param(self) -> str:
        return column_param(
            self.model_slug, self.accelerator_slug, self.quant, self.gpus, self.engine
        )

    def configurator_query(self, context_tokens: int) -> dict[str, str]:
        """The configurator's query parameters this column sets (the rest at the
        configurator's defaults)."""
        query = {"ctx": str(context_tokens), "gpus": str(self.gpus), "quant": self.quant}
        if self.engine:
            query["engine"] = self.engine
        return query


class CompareForm(forms.Form):
    """Columns c1..c4 in the readable form model:accelerator:quant:gpus:engine (all but
    model and accelerator may be left out: the best that fits, one GPU, the card's default
    engine, as on the configurator), plus one shared context. The formats and engines are
    the configurator's. The edit form sends the parts as m1/a1/q1/g1/e1 ..., which the view
    folds into c1 ... and redirects to."""

    ctx = forms.IntegerField(
        label=_("Context (tokens)"), min_value=MIN_CONTEXT_TOKENS, max_value=MAX_CONTEXT_TOKENS
    )

    def __init__(self, data: QueryDict, **kw: Any) -> None:
        data = data.copy()
        if not data.get("ctx"):
            data["ctx"] = str(DEFAULT_CONTEXT_TOKENS)
        super().__init__(data, **kw)
        # Each bad column's messages by its parameter (c1..c4): the page shows them as form
        # errors, the compare API (sizing_site.explore.compare_api) names the parameter.
        self.column_errors: dict[str, list[str]] = {}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        columns = []
        for i in range(1, MAX_COLUMNS + 1):
            raw = (self.data.get(f"c{i}") or "").strip()
            if raw:
                column = self._column(raw, i)
                if column:
                    columns.append(column)
        cleaned["columns"] = columns
        return cleaned

    def _column(self, raw: str, i: int) -> ColumnSpec | None:
        parts = raw.split(":")
        if len(parts) < 2 or len(parts) > 5 or not all(parts[:2]):
            self._column_error(i, _("Column %(n)s: write model:accelerator:quant:gpus.") % {"n": i})
            return None
        quant, gpus_text, engine = (*parts[2:], "", "", "")[:3]
        if quant and quant not in ALL_FORMATS:
            self._column_error(
                i, _("Column %(n)s: unknown quantization %(q)s.") % {"n": i, "q": quant}
            )
            return None
        gpus = ascii_count(gpus_text or "1", most=MAX_GPUS)
        if gpus is None:
            self._column_error(
                i,
                _("Column %(n)s: the GPU count must be a whole number from 1 to %(max)s.")
                % {"n": i, "max": MAX_GPUS},
            )
            return None
        if engine and engine not in COMPARE_ENGINES:
            self._column_error(
                i, _("Column %(n)s: unknown engine %(engine)s.") % {"n": i, "engine": engine}
            )
            return None
        return ColumnSpec(parts[0], parts[1], quant, gpus, engine)

    def _column_error(self, i: int, message: str) -> None:
        self.column_errors.setdefault(f"c{i}", []).append(message)
        self.add_error(None, message)


def ascii_count(text: str, *, most: int) -> int | None:
    """A whole number from 1 to `most` written in ASCII digits, else None.

    str.isdigit() is true for "²", which int() then refuses (a 500); int() also takes
    Arabic-Indic digits and raises past 4,300 digits. ASCII decimals no longer than `most`
    avoid all three."""
    if not (text.isascii() and text.isdecimal()) or len(text) > len(str(most)):
        return None
    value = int(text)
    return value if 1 <= value <= most else None


def compare_params_from_parts(data: QueryDict) -> dict[str, str] | None:
    """The canonical c1..cN parameters from the edit form's m1/a1/q1/g1/e1 fields; None
    when the request carries no such fields (it is already canonical)."""
    if not any(f"m{i}" in data for i in range(1, MAX_COLUMNS + 1)):
        return None
    params: dict[str, str] = {}
    for i in range(1, MAX_COLUMNS + 1):
        model, card = data.get(f"m{i}", "").strip(), data.get(f"a{i}", "").strip()
        if model and card:
            quant, engine = data.get(f"q{i}", "").strip(), data.get(f"e{i}", "").strip()
            gpus = data.get(f"g{i}", "").strip() or "1"  # as sent: CompareForm checks it
            params[f"c{len(params) + 1}"] = column_param(model, card, quant, gpus, engine)
    if data.get("ctx"):
        params["ctx"] = data.get("ctx", "")
    return params
