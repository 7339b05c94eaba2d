"""Derive requirements-runtime.lock from requirements.lock.

requirements.lock is compiled by uv from pyproject.toml with the dev extra (its header
says how). The runtime lock keeps, at the same pins, the packages that pyproject.toml's
[project.dependencies] need: each locked package whose "# via" names a runtime package
(or that is one). `make locks` runs this after recompiling requirements.lock; a test
(tests/sizing_site/test_dependency_roles.py) checks the committed file is what it gives.

    python .ci/runtime_lock.py            # writes requirements-runtime.lock
    python .ci/runtime_lock.py --check    # exits 1 when the committed file differs
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = (
    "# The runtime set: what `make serve`, `make run` and the Dockerfile install (no test,\n"
    "# lint or type tools). Derived from requirements.lock (the development set, compiled\n"
    "# by uv from pyproject.toml) by .ci/runtime_lock.py: the packages pyproject.toml's\n"
    "# [project.dependencies] need, at the same pins. Regenerate with `make locks`.\n"
)


def _name(text: str) -> str:
    """A distribution name, normalised (PEP 503), without extras or a version."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\[<>=!~ ;]", text.strip(), maxsplit=1)[0].lower())


def runtime_lock(lock_text: str, pyproject_text: str) -> str:
    """The runtime lock's text for a development lock and a pyproject.toml."""
    pins: dict[str, str] = {}
    parents: dict[str, set[str]] = {}
    current = ""
    for line in lock_text.splitlines():
        pin = re.match(r"^([A-Za-z0-9_.\-]+(?:\[[^\]]+\])?)==\S+", line)
        if pin:
            current = _name(pin.group(1))
            pins[current], parents[current] = line, set()
        elif current and line.startswith("    #"):
            via = line.strip().lstrip("#").strip().removeprefix("via").strip()
            if via and not via.startswith("rightsize"):
                parents[current].add(_name(via))
    roots = {_name(dep) for dep in tomllib.loads(pyproject_text)["project"]["dependencies"]}
    kept = {name for name in pins if name in roots}
    grown = True
    while grown:
        new = {name for name in pins if name not in kept and parents[name] & kept}
        kept |= new
        grown = bool(new)
    return HEADER + "".join(f"{pins[name]}\n" for name in pins if name in kept)


def main() -> int:
    text = runtime_lock(
        (ROOT / "requirements.lock").read_text(), (ROOT / "pyproject.toml").read_text()
    )
    target = ROOT / "requirements-runtime.lock"
    if "--check" in sys.argv:
        same = target.exists() and target.read_text() == text
        print("requirements-runtime.lock is " + ("current" if same else "out of date"))
        return 0 if same else 1
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
