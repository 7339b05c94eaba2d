"""Walk a large JSON object member by member without loading it whole.

AWS region price files are gigabytes; each product or term inside is small. The standard
library's `raw_decode` parses one value from a buffer that is refilled as needed, so
memory stays at a chunk plus the largest single value, which is capped: a value that
never ends would otherwise grow the buffer up to the whole transfer.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any, Protocol

from django.utils.translation import gettext as _

from pricing.fetchers.base import FetchError

WHITESPACE = " \t\n\r"
MAX_VALUE_CHARS = 64 * 1024 * 1024  # one AWS product or term is a few KB


class Readable(Protocol):
    def read(self, amt: int = ..., /) -> bytes: ...


class JsonStream:
    def __init__(
        self, raw: Readable, *, chunk: int = 1 << 20, max_value_chars: int = MAX_VALUE_CHARS
    ) -> None:
        self._raw, self._chunk, self._max_value = raw, chunk, max_value_chars
        self._decode = codecs.getincrementaldecoder("utf-8")()
        self._decoder = json.JSONDecoder()
        self._buf, self._pos, self._eof = "", 0, False

    def _more(self) -> bool:
        if self._eof:
            return False
        if len(self._buf) - self._pos > self._max_value:
            raise FetchError(_("malformed JSON: a single value is larger than the limit"))
        data = self._raw.read(self._chunk)  # outbound.Response: capped, under a deadline
        self._eof = not data
        try:
            text = self._decode.decode(data, final=self._eof)
        except UnicodeDecodeError as exc:
            raise FetchError(f"malformed JSON: {exc}") from None
        self._buf, self._pos = self._buf[self._pos :] + text, 0
        return bool(data)

    def _skip_ws(self) -> None:
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buf) or not self._more():
                return

    def _next_char(self) -> str:
        self._skip_ws()
        if self._pos >= len(self._buf):
            raise FetchError("truncated JSON")
        char = self._buf[self._pos]
        self._pos += 1
        return char

    def value(self) -> Any:
        """Parse and return the next complete value."""
        self._skip_ws()
        while True:
            try:
                obj, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError:
                if self._more():
                    continue
                raise FetchError("malformed JSON") from None
            except RecursionError:
                raise FetchError(_("malformed JSON: nested too deeply")) from None
            # A number or literal at the very end of the buffer may continue in the next chunk.
            if end >= len(self._buf) and self._more():
                continue
            self._pos = end
            return obj

    def members(self) -> Iterator[str]:
        """Yield each key of the object that starts here; the caller reads its value."""
        if self._next_char() != "{":
            raise FetchError("malformed JSON: expected an object")
        self._skip_ws()
        if self._buf[self._pos : self._pos + 1] == "}":
            self._pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str) or self._next_char() != ":":
                raise FetchError("malformed JSON: bad object key")
            yield key
            separator = self._next_char()
            if separator == "}":
                return
            if separator != ",":
                raise FetchError("malformed JSON: expected ',' or '}'")

    def skip_members(self) -> None:
        for _key in self.members():
            self.value()
