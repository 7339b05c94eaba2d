"""The repository's own text: no tracker issue numbers in code, docs or test names (the
history lives in CHANGELOG.md), and a README a newcomer reads to the end."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Our tracker's numbers: the word "issue" and a number after a space. Other projects'
# issues are cited with their repository and a "#" ("vLLM issue #5711") and stay.
TRACKER_NUMBER = re.compile(r"\b[Ii]ssues? \d|\bissue_\d")
TEXT_SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".cfg", ".yaml", ".yml", ".json"}


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [
        ROOT / name
        for name in listed
        if Path(name).suffix in TEXT_SUFFIXES and name != "CHANGELOG.md" and "/vendor/" not in name
    ]


def test_no_tracker_issue_numbers_in_code_docs_or_tests() -> None:
    found = []
    for path in _tracked_text_files():
        if not path.exists():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if TRACKER_NUMBER.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert found == [], found[:10]


def test_the_readme_is_at_most_250_lines() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250
    assert lines[0].startswith("# ") and "make run" in "\n".join(lines[:12])
