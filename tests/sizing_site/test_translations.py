"""Every user-facing string is translated into German, Italian and Simplified Chinese."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "sizing_site" / "locale"
LANGS = ["de", "it", "zh_Hans"]


def catalogue(lang: str, root: Path = LOCALE) -> polib.POFile:
    return polib.pofile(str(root / lang / "LC_MESSAGES" / "django.po"))


@pytest.mark.parametrize("lang", LANGS)
def test_every_catalogue_is_complete_and_nothing_is_fuzzy(lang: str) -> None:
    po = catalogue(lang)
    assert len(po) > 0
    assert [e.msgid for e in po.untranslated_entries()] == []
    assert [e.msgid for e in po.fuzzy_entries()] == []
    assert not po.metadata_is_fuzzy


@pytest.mark.parametrize("lang", LANGS)
def test_placeholders_survive_translation(lang: str) -> None:
    def names(text: str) -> list[str]:
        return sorted(re.findall(r"%\(\w+\)s", text))

    for entry in catalogue(lang).translated_entries():
        if not entry.msgid_plural:
            assert names(entry.msgstr) == names(entry.msgid), entry.msgid
            continue
        # Plural forms: the last form serves the plural (the only form in Chinese) and
        # keeps msgid_plural's placeholders; no form may invent one.
        forms = [entry.msgstr_plural[i] for i in sorted(entry.msgstr_plural)]
        allowed = set(names(entry.msgid)) | set(names(entry.msgid_plural))
        assert names(forms[-1]) == names(entry.msgid_plural), entry.msgid
        assert all(set(names(form)) <= allowed for form in forms), entry.msgid


def test_catalogues_hold_every_marked_string(tmp_path: Path) -> None:
    """Re-extract the strings in a scratch copy of the tree; nothing may be new."""
    if shutil.which("xgettext") is None:
        pytest.fail("xgettext is missing: `make test` installs gettext")
    scratch = tmp_path / "tree"
    skip = shutil.ignore_patterns(".*", "var", "node_modules", "__pycache__", "*.mo", "data")
    shutil.copytree(ROOT, scratch, ignore=skip)
    subprocess.run(
        [
            sys.executable,
            "manage.py",
            "makemessages",
            "-l",
            "de",
            "-v",
            "0",
            "--ignore=benchmarks",
            "--ignore=tests",
        ],
        cwd=scratch,
        check=True,
        timeout=300,
    )
    scratch_locale = scratch / "sizing_site" / "locale"
    extracted = {e.msgid for e in catalogue("de", scratch_locale) if not e.obsolete}
    known = {e.msgid for e in catalogue("de") if not e.obsolete}
    assert sorted(extracted - known) == []
