"""Search over the catalog's names: whole words, prefixes, words run together and close
spellings (difflib), and "MODEL on GPU" questions.

The index (every model, every card the estimator can size, their aliases) is read in
three queries and kept per catalog version (catalog.sizing.cache), so a warm search reads
nothing. Matching is token by token:

- a query word equal to a word of the name scores 1.0, to a part of one split at a
  letter/digit boundary ("qwen" in "qwen3", "70" in "70b") 0.95, a prefix of one 0.9;
- words run together ("llama3.1", "glm4.5air") are found in the name without separators
  (0.75);
- a close spelling of a word ("codstral", "lama") scores 0.7 x difflib's ratio when the
  ratio is at least 0.8 (numbers must match exactly: 4080 is not 4090).

Every query word must match; the entry's score is the mean, less 0.03 for each word of
the name nothing matched (so "glm air" prefers GLM-4.5-Air to a longer name), plus 0.05
when the first words agree. A card is also matched by its aliases and by vendor + name.

A query is read as a pair when it splits into a model part and a card part that both
match, and no single model or card matches the whole query as well ("llama 70b 4090",
"qwen3 32b on 5090", "gpt-oss-120b on 2x h100"): "on" or "@" marks the split, else every
split is tried and the best kept. A GPU count may lead the
card part ("2x", "2 x") or end it ("x2").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache

from django.db.models import BooleanField, Case, Value, When

from catalog.models import Accelerator, LLMModel
from catalog.scoping import Owner
from catalog.sizing.cache import remembered

MIN_SCORE = 0.5  # an entry below this is not shown
PAIR_MIN_SCORE = 0.7  # both halves of a pair must match at least this well
CLOSE_SPELLING = 0.8  # difflib ratio for a misspelt word
EXTRA_WORD_PENALTY = 0.03
FIRST_WORD_BONUS = 0.05
MAX_GPUS = 8
# "on" and its words in the portal's other languages (no catalog name has any of them as a word)
SPLIT_WORDS = ("on", "@", "auf", "su", "在")

_TOKEN = re.compile(r"[^\W_]+(?:\.\d+)*")
_PARTS = re.compile(r"\d+|[^\W\d_]+")
_COUNT_BEFORE = re.compile(r"^(\d+)[x×]$")
_COUNT_AFTER = re.compile(r"^[x×](\d+)$")


def tokens(text: str) -> tuple[str, ...]:
    """Lower-case words; dotted numbers stay whole ("3.1", "4.5")."""
    return tuple(_TOKEN.findall(text.casefold()))


def _compact(words: Sequence[str]) -> str:
    return "".join(words).replace(".", "")


@dataclass(frozen=True)
class Entry:
    """One model or card of the index, with the word lists it is matched by."""

    kind: str  # "model" | "card"
    slug: str
    name: str
    variants: tuple[tuple[str, ...], ...]  # the name's words, then aliases' and vendor + name
    sizeable: bool = True  # a model with a config.json (cards in the index always are)
    curated: bool = False
    memory_gib: float | None = None
    vendor: str = ""
    own: bool = False  # an organisation's own row, found for its members only

    @property
    def label(self) -> str:
        return f"{self.vendor} {self.name}".strip() if self.kind == "card" else self.name


@dataclass(frozen=True)
class Pair:
    model: Entry
    card: Entry
    gpus: int = 1
    score: float = 0.0


@dataclass(frozen=True)
class SearchResults:
    models: list[Entry] = field(default_factory=list)
    cards: list[Entry] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    # The pair to open at once: the best model and the best card both clearly ahead.
    best_pair: Pair | None = None

    def __bool__(self) -> bool:
        return bool(self.models or self.cards or self.pairs)


def build_index(organizations: Sequence[Owner] = ()) -> tuple[list[Entry], list[Entry]]:
    """Every public model (flagged when it has no config.json) and every public card the
    estimator can size, in two queries; with `organizations`, only those organisations'
    own rows instead (marked `own`), which no shared cache entry holds."""
    model_rows = LLMModel.objects.all()
    card_rows = Accelerator.objects.all()
    if organizations:
        model_rows = LLMModel.objects.visible_to(organizations).filter(organization__isnull=False)
        card_rows = Accelerator.objects.visible_to(organizations).filter(organization__isnull=False)
    own = bool(organizations)
    models = (
        model_rows.annotate(
            blank=Case(
                When(config={}, then=Value(True)), default=False, output_field=BooleanField()
            )
        )
        .values_list("slug", "name", "blank")
        .order_by("name")
    )
    model_entries = [
        Entry("model", slug, name, (tokens(name),), sizeable=not blank, own=own)
        for slug, name, blank in models
    ]
    cards = (
        card_rows.filter(memory_gb__gt=0, bandwidth_gbps__gt=0)
        .values_list("slug", "name", "vendor", "aliases", "curated", "memory_gib", "memory_gb")
        .order_by("-curated", "vendor", "name")
    )
    card_entries = []
    for slug, name, vendor, aliases, curated, gib, gb in cards:
        variants = [
            tokens(name),
            *(tokens(str(a)) for a in aliases or []),
            tokens(f"{vendor} {name}"),
        ]
        unique = tuple(dict.fromkeys(v for v in variants if v))
        card_entries.append(
            Entry(
                "card",
                slug,
                name,
                unique,
                curated=curated,
                memory_gib=gib or gb,
                vendor=vendor,
                own=own,
            )
        )
    return model_entries, card_entries


def index(organizations: Sequence[Owner] = ()) -> tuple[list[Entry], list[Entry]]:
    """build_index of the public catalog, kept per catalog version; with `organizations`
    (the viewer's), their own rows added after it, kept in an entry of their own keyed by
    those organisations (only their members compute its key)."""
    models, cards = remembered("search-index", (), build_index)
    if not organizations:
        return models, cards
    keys = tuple(sorted(o.pk for o in organizations))
    own_models, own_cards = remembered("search-index-own", keys, lambda: build_index(organizations))
    return [*models, *own_models], [*cards, *own_cards]


@lru_cache(maxsize=65536)
def word_score(word: str, variant: tuple[str, ...]) -> float:
    """How well one query word matches one of the variant's words (module docstring)."""
    if word in variant:
        return 1.0
    if any(word in _PARTS.findall(w) for w in variant):
        return 0.95
    if len(word) >= 2 and any(w.startswith(word) for w in variant):
        return 0.9
    joined = word.replace(".", "")
    if len(joined) >= 3 and joined in _compact(variant):
        return 0.75
    if len(word) >= 4 and not word.replace(".", "").isdigit():
        close = [
            SequenceMatcher(None, word, w).ratio()
            for w in variant
            if w[:1] == word[:1] and abs(len(w) - len(word)) <= 3 and not w.isdigit()
        ]
        best = max(close, default=0.0)
        if best >= CLOSE_SPELLING:
            return 0.7 * best
    return 0.0


def _used(word: str, variant_word: str) -> bool:
    """Whether `word` accounts for `variant_word` (so it is not an extra word)."""
    return (
        word == variant_word
        or variant_word.startswith(word)
        or word in _PARTS.findall(variant_word)
        or (len(word) >= 4 and SequenceMatcher(None, word, variant_word).ratio() >= CLOSE_SPELLING)
    )


def entry_score(words: Sequence[str], entry: Entry) -> float:
    """The entry's best score over its variants; 0 unless every word matches."""
    best = 0.0
    for variant in entry.variants:
        scores = [word_score(w, variant) for w in words]
        if not scores or min(scores) == 0:
            continue
        joined = _compact(words)
        extras = sum(1 for v in variant if not any(_used(w, v) for w in words))
        if extras and joined == _compact(variant):
            extras = 0
        score = sum(scores) / len(scores) - EXTRA_WORD_PENALTY * extras
        if word_score(words[0], variant[:1]) > 0:
            score += FIRST_WORD_BONUS
        best = max(best, score)
    return best


def ranked(words: Sequence[str], entries: Sequence[Entry]) -> list[tuple[float, Entry]]:
    """Entries scoring at least MIN_SCORE, best first (curated cards, then shorter names,
    first on a tie)."""
    if not words:
        return []
    scored = [(entry_score(words, e), e) for e in entries]
    hits = [(s, e) for s, e in scored if s >= MIN_SCORE]
    hits.sort(key=lambda h: (-round(h[0], 6), not h[1].curated, len(h[1].name), h[1].name))
    return hits


def _gpu_count(words: list[str]) -> tuple[list[str], int]:
    """The card part without its GPU count ("2x", "2 x", "x2"), and the count (1 if none)."""
    count = 1
    if words and (m := _COUNT_BEFORE.match(words[0])):
        count, words = int(m.group(1)), words[1:]
    elif len(words) > 1 and words[0].isdigit() and words[1] in ("x", "×"):
        count, words = int(words[0]), words[2:]
    elif words and (m := _COUNT_AFTER.match(words[-1])):
        count, words = int(m.group(1)), words[:-1]
    return words, count if 1 <= count <= MAX_GPUS else 1


def _splits(words: list[str]) -> list[tuple[list[str], list[str]]]:
    for marker in SPLIT_WORDS:
        if marker in words:
            i = words.index(marker)
            return [(words[:i], words[i + 1 :])]
    return [(words[:k], words[k:]) for k in range(1, len(words))]


def _clear_top(hits: list[tuple[float, Entry]]) -> bool:
    return bool(hits) and (len(hits) == 1 or hits[0][0] - hits[1][0] > 1e-6)


def find_pairs(
    words: list[str], models: Sequence[Entry], cards: Sequence[Entry]
) -> tuple[list[Pair], Pair | None]:
    """The query read as "MODEL on GPU": a few pairs, best first, and the pair to open
    at once when both halves have a clear best."""
    best: tuple[float, list[tuple[float, Entry]], list[tuple[float, Entry]], int] | None = None
    sizeable = [m for m in models if m.sizeable]
    for model_words, card_words in _splits(words):
        card_words, gpus = _gpu_count(card_words)
        if not model_words or not card_words:
            continue
        card_hits = ranked(card_words, cards)
        if not card_hits or card_hits[0][0] < PAIR_MIN_SCORE:
            continue
        model_hits = ranked(model_words, sizeable)
        if not model_hits or model_hits[0][0] < PAIR_MIN_SCORE:
            continue
        score = model_hits[0][0] + card_hits[0][0]
        if best is None or score > best[0]:
            best = (score, model_hits, card_hits, gpus)
    if best is None:
        return [], None
    _, model_hits, card_hits, gpus = best
    top_card = card_hits[0]
    pairs = [Pair(m, top_card[1], gpus, s + top_card[0]) for s, m in model_hits[:3]]
    if len(card_hits) > 1:
        pairs.append(
            Pair(model_hits[0][1], card_hits[1][1], gpus, model_hits[0][0] + card_hits[1][0])
        )
    clear = _clear_top(model_hits) and _clear_top(card_hits)
    return pairs, pairs[0] if clear else None


def search_catalog(q: str, *, limit: int = 8, organizations: Sequence[Owner] = ()) -> SearchResults:
    """Models and cards matching `q`, and the pairs it names (module docstring): the
    public catalog and the given organisations' own rows."""
    words = list(tokens(q))
    if not words:
        return SearchResults()
    models, cards = index(organizations)
    content = [w for w in words if w not in SPLIT_WORDS] or words
    ranked_models, ranked_cards = ranked(content, models), ranked(content, cards)
    pairs, best_pair = find_pairs(words, models, cards) if len(words) > 1 else ([], None)
    whole = max([s for s, _ in ranked_models[:1] + ranked_cards[:1]], default=0.0)
    if pairs and whole >= PAIR_MIN_SCORE and whole >= pairs[0].score / 2:
        # The whole query names one model or card ("nvidia 4090") at least as well as
        # its halves name a pair: not a pair.
        pairs, best_pair = [], None
    model_hits = [e for _, e in ranked_models[:limit]]
    card_hits = [e for _, e in ranked_cards[:limit]]
    if pairs:  # the halves of the pair, when the whole query names neither alone
        model_hits = model_hits or list(dict.fromkeys(p.model for p in pairs))
        card_hits = card_hits or list(dict.fromkeys(p.card for p in pairs))
    elif not (model_hits or card_hits) and any(m in words for m in SPLIT_WORDS):
        # "X on Y" with no pair (a model without a config): each half on its own.
        (model_words, card_words), *_ = _splits(words)
        model_hits = [e for _, e in ranked(model_words, models)[:limit]]
        card_hits = [e for _, e in ranked(_gpu_count(card_words)[0], cards)[:limit]]
    return SearchResults(model_hits, card_hits, pairs, best_pair)
