"""OpenAPI shapes the explore endpoints share with others (the fleet's sweep takes the same
context)."""

from __future__ import annotations

from typing import Any

from sizing_site.explore.forms import MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS

# A context as the explore pages' forms take it (a model's own limit besides, which no
# schema can state: a 400 naming ctx).
CONTEXT: dict[str, Any] = {
    "type": "integer",
    "minimum": MIN_CONTEXT_TOKENS,
    "maximum": MAX_CONTEXT_TOKENS,
}
