from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from sizing_site.env import env_bool, env_int, env_list, env_timezone, env_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("raw", ["yes", "true", "1", "FALSE", "on", " True"])
def test_env_bool_rejects_anything_but_true_or_false(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("X_FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match="X_FLAG must be 'True' or 'False'"):
        env_bool("X_FLAG", False)


def test_env_bool_reads_true_false_and_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_FLAG", "True")
    assert env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "False")
    assert env_bool("X_FLAG", True) is False
    monkeypatch.delenv("X_FLAG")
    assert env_bool("X_FLAG", True) is True


def test_env_int_rejects_text_and_negative_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_NUM", "ten")
    with pytest.raises(ImproperlyConfigured, match="integer"):
        env_int("X_NUM", 1)
    monkeypatch.setenv("X_NUM", "-5")
    with pytest.raises(ImproperlyConfigured, match="at least 0"):
        env_int("X_NUM", 1)
    monkeypatch.setenv("X_NUM", "31536000")
    assert env_int("X_NUM", 1) == 31_536_000


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_LIST", "a.example, b.example,,")
    assert env_list("X_LIST") == ["a.example", "b.example"]


def test_env_url_and_timezone_reject_garbage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_DB", "mysql://localhost/db")
    with pytest.raises(ImproperlyConfigured, match="X_DB must be a URL"):
        env_url("X_DB", "sqlite:///x", schemes=("sqlite", "postgres"))
    monkeypatch.setenv("X_TZ", "Mars/Olympus_Mons")
    with pytest.raises(ImproperlyConfigured, match="not a known time zone"):
        env_timezone("X_TZ", "UTC")
    monkeypatch.setenv("X_TZ", "Europe/Berlin")
    assert env_timezone("X_TZ", "UTC") == "Europe/Berlin"


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_yes_stops_start_up_with_a_clear_error() -> None:
    result = run_manage("check", DEBUG="yes")
    assert result.returncode != 0
    assert "DEBUG must be 'True' or 'False', got 'yes'" in result.stderr


def test_production_without_secret_key_is_refused() -> None:
    result = run_manage("check", DEBUG="False", ALLOWED_HOSTS="rightsize.example")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_check_deploy_is_clean_with_production_variables() -> None:
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="False",
        SECRET_KEY="x7!Qm2#pL9vR4$wT8zK1&nB6cY3^hJ5uE0sD-aF_gXoIiVeZrNtUyWqPlMkOjHb",
        ALLOWED_HOSTS="rightsize.example",
        CSRF_TRUSTED_ORIGINS="https://rightsize.example",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
