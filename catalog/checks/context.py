"""context: each model's published context agrees with its config.json and its card.

The pages offer model_context_limit (catalog.sizing.specs): config.json's longest context
(RoPE scaling in the config included, ModelSpec.extended_context_tokens), or the card's
longer RoPE-scaled length (rope_scaling_max_context_tokens), capped by the published
context (published_context_tokens: the larger of max_context_tokens and the RoPE length).
This check asks the same functions, so a row it passes is a row the pages show as stated:

- max_context_tokens differs from the config's limit only with a source for it (the
  card that explains the difference: DeepSeek-V3's card says 128K = 131,072 tokens,
  its config 163,840);
- rope_scaling_max_context_tokens is longer than the config's limit and cites its source
  in sources["rope_scaling_max_context_tokens"];
- the pages can offer the published context (a max_context_tokens past what config.json
  and the card's RoPE length allow is a context no page offers);
- neither figure exceeds what its source states, where the source quotes a length
  ("128K", "131,072 tokens", "1M"): "128K" reads as 128 x 1,024 or 128 x 1,000, the
  larger bound.
"""

from __future__ import annotations

import re

from django.utils.translation import gettext as _

from catalog.checks import Violation
from catalog.models import LLMModel
from catalog.sizing.specs import model_context_limit, published_context_tokens
from estimator.api import RequestError, model_input
from estimator.api import cache as estimator_cache

NAME = "context"
# "128K", "128k context", "1M", "131,072", "131072 tokens", outside addresses (arXiv ids,
# repository names with dates); a K/M figure reads in both conventions (x 1,024 or x 1,000).
_URL = re.compile(r"\S*(?:https?://|/)\S*")
_SCALED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([kKmM])(?![a-zA-Z])")
_PLAIN = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d{5,}|\d{4}(?=\s*tokens))(?![\w,])")
_UNITS = {"k": (1024, 1000), "m": (1024 * 1024, 1000 * 1000)}


def stated_tokens(text: str) -> int | None:
    """The largest context length a source's text quotes, in tokens; None when it quotes
    none. "128K" -> 131,072; "1M" -> 1,048,576; "131,072" -> 131,072."""
    text = _URL.sub(" ", text)
    found = [
        max(int(float(number) * u) for u in _UNITS[unit.lower()])
        for number, unit in _SCALED.findall(text)
    ]
    found.extend(int(n.replace(",", "")) for n in _PLAIN.findall(_SCALED.sub(" ", text)))
    lengths = [n for n in found if n >= 1024]
    return max(lengths) if lengths else None


def _config_limit(model: LLMModel) -> int | None:
    """The longest context config.json allows (its RoPE scaling included)."""
    if not model.config:
        return None
    try:
        spec = estimator_cache.model_spec(model_input(model.config).hf_config_json)
    except (RequestError, ValueError):
        return None
    return spec.extended_context_tokens


def _source(model: LLMModel, field: str) -> str:
    sources = model.sources if isinstance(model.sources, dict) else {}
    value = sources.get(field, "")
    return value.strip() if isinstance(value, str) else ""


def _card_problems(model: LLMModel, field: str, value: int | None) -> list[str]:
    source = _source(model, field)
    stated = stated_tokens(source) if source else None
    if value is None or stated is None or value <= stated:
        return []
    return [
        _("%(field)s %(value)s exceeds the %(stated)s its source states (%(source)s)")
        % {"field": field, "value": f"{value:,}", "stated": f"{stated:,}", "source": source}
    ]


def model_problems(model: LLMModel) -> list[str]:
    """What is wrong with one model's context figures (the module docstring's rules)."""
    out: list[str] = []
    config = _config_limit(model)
    mct, rope = model.max_context_tokens, model.rope_scaling_max_context_tokens
    if mct and config and mct != config and not _source(model, "max_context_tokens"):
        out.append(
            _(
                "max_context_tokens %(mct)s differs from config.json's %(config)s and cites "
                "no source in sources['max_context_tokens']"
            )
            % {"mct": f"{mct:,}", "config": f"{config:,}"}
        )
    if rope and config and rope <= config:
        out.append(
            _(
                "rope_scaling_max_context_tokens %(rope)s is not longer than config.json's "
                "%(config)s: leave it blank"
            )
            % {"rope": f"{rope:,}", "config": f"{config:,}"}
        )
    if rope and not _source(model, "rope_scaling_max_context_tokens"):
        out.append(
            _(
                "rope_scaling_max_context_tokens %(rope)s cites no source in "
                "sources['rope_scaling_max_context_tokens']"
            )
            % {"rope": f"{rope:,}"}
        )
    published = published_context_tokens(model)
    offered = model_context_limit(model) if model.config else None
    if published and offered and offered < published:
        out.append(
            _(
                "the pages offer at most %(offered)s tokens, not the published %(published)s: "
                "config.json allows less; set rope_scaling_max_context_tokens with the card's "
                "source, or lower max_context_tokens"
            )
            % {"offered": f"{offered:,}", "published": f"{published:,}"}
        )
    out.extend(_card_problems(model, "max_context_tokens", mct))
    out.extend(_card_problems(model, "rope_scaling_max_context_tokens", rope))
    return out


def check() -> list[Violation]:
    """Every public model's context figures (module docstring)."""
    models = LLMModel.objects.order_by("slug")  # the public catalog (CatalogManager)
    fields = ("slug", "config", "sources", "max_context_tokens", "rope_scaling_max_context_tokens")
    return [
        Violation(NAME, f"model {model.slug}", problem)
        for model in models.only(*fields)
        for problem in model_problems(model)
    ]
