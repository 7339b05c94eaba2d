"""Command line: `python -m estimator estimate FILE` (FILE may be `-` for stdin).

FILE holds one JSON request, or JSON Lines with one request per line. One JSON result is
printed per request, one per line, in order; a bad request prints
`{"error": {"field": ..., "message": ...}}` in its place and the exit status is 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from estimator.api import estimate_or_error


def _documents(text: str) -> Iterator[tuple[int, str]]:
    """One whole-file JSON document, else one per non-blank line (JSON Lines)."""
    stripped = text.strip()
    if not stripped:
        return
    try:
        json.loads(stripped)
    except ValueError:
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                yield number, line
        return
    yield 1, stripped


def _load(document: str, line: int) -> tuple[Any, dict[str, Any] | None]:
    try:
        # NaN/Infinity parse here on purpose: parse_request then names the field they are in.
        return json.loads(document), None
    except ValueError as exc:
        return None, {"error": {"field": "request", "message": f"line {line}: invalid JSON: {exc}"}}


def run_estimate_command(stream: TextIO, out: TextIO) -> int:
    """Estimate every request in `stream`, write one result line each; 2 if any failed."""
    failed = False
    for line, document in _documents(stream.read()):
        data, error = _load(document, line)
        result = error if error is not None else estimate_or_error(data)
        failed = failed or "error" in result
        out.write(json.dumps(result, allow_nan=False) + "\n")
    return 2 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m estimator", description="Memory, speed and cost of an LLM on hardware."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    est = sub.add_parser("estimate", help="estimate one JSON request or JSON Lines of requests")
    est.add_argument("file", help="request file, or - for stdin")
    args = parser.parse_args(argv)
    if args.file == "-":
        return run_estimate_command(sys.stdin, sys.stdout)
    with open(args.file, encoding="utf-8") as stream:
        return run_estimate_command(stream, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
