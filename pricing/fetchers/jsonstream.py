"""Walk a large JSON object member by member without loading it whole.

AWS region price files are gigabytes; each product or term inside is small. The standard
library's `raw_decode` parses one value from a buffer that is refilled as needed, so
memory stays at a chunk plus the largest single value.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from pricing.fetchers.base import FetchError, TransientFetchError

WHITESPACE = " \t\n\r"


class JsonStream:
    def __init__(self, raw: IO[bytes], *, url: str, timeout_s: float, chunk: int = 1 << 20):
        self._raw, self._url, self._timeout_s, self._chunk = raw, url, timeout_s, chunk
        self._decode = codecs.getincrementaldecoder("utf-8")()
        self._decoder = json.JSONDecoder()
        self._buf, self._pos, self._eof = "", 0, False

    def _more(self) -> bool:
        if self._eof:
            return False
        try:
            data = self._raw.read(self._chunk)
        except TimeoutError as exc:
            raise TransientFetchError(f"timed out reading {self._url}") from exc
        except ConnectionError as exc:
            raise TransientFetchError(f"connection lost reading {self._url}") from exc
        self._eof = not data
        try:
            text = self._decode.decode(data, final=self._eof)
        except UnicodeDecodeError as exc:
            raise FetchError(f"malformed JSON from {self._url}: {exc}") from None
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
            raise FetchError(f"truncated JSON from {self._url}")
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
                raise FetchError(f"malformed JSON from {self._url}") from None
            # A number or literal at the very end of the buffer may continue in the next chunk.
            if end >= len(self._buf) and self._more():
                continue
            self._pos = end
            return obj

    def members(self) -> Iterator[str]:
        """Yield each key of the object that starts here; the caller reads its value."""
        if self._next_char() != "{":
            raise FetchError(f"malformed JSON from {self._url}: expected an object")
        self._skip_ws()
        if self._buf[self._pos : self._pos + 1] == "}":
            self._pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str) or self._next_char() != ":":
                raise FetchError(f"malformed JSON from {self._url}: bad object key")
            yield key
            separator = self._next_char()
            if separator == "}":
                return
            if separator != ",":
                raise FetchError(f"malformed JSON from {self._url}: expected ',' or '}}'")

    def skip_members(self) -> None:
        for _ in self.members():
            self.value()
