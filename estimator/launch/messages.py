"""Texts the launch commands show a reader, kept untranslated until a page renders them.

The estimator has no Django, so it cannot translate; it marks each text with `_` (one of
the keywords Django's makemessages extracts, so the catalogue keeps the msgid) and returns
a Message: the English template and its parameters. A page renders it in the reader's
language with Message.render(gettext), which is what `_(template) % params` did there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Param = str | int | float


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class Message:
    """A reader-facing text: `text` is the msgid (an English %-template), `params` its
    named values, in the order given."""

    text: str
    params: tuple[tuple[str, Param], ...] = ()

    def render(self, translate: Callable[[str], str] = _same) -> str:
        """The text through `translate` (gettext on a page), then its parameters; a text
        without parameters is not %-formatted, as a plain `_("...")` was not."""
        template = translate(self.text)
        return template % dict(self.params) if self.params else template

    def __str__(self) -> str:
        return self.render()


def _(text: str, **params: Param) -> Message:
    """Mark `text` for translation and defer it: a Message a page renders later."""
    return Message(text, tuple(params.items()))
