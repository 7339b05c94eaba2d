"""Dependencies by role: the runtime lock is the development lock's pins for what
pyproject.toml's runtime dependencies need, it holds no test, lint or type tool, and the
production paths (the Dockerfile, `make serve`) install it and nothing else."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("pytest", "pytest-django", "hypothesis", "schemathesis", "ruff", "mypy",
         "django-stubs", "import-linter", "playwright", "polib")  # fmt: skip


def _deriver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("runtime_lock", ROOT / ".ci/runtime_lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pins(text: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9_.\-\[\]]+)==(\S+)", text, flags=re.MULTILINE))


def test_the_committed_runtime_lock_is_what_the_development_lock_gives() -> None:
    derived = _deriver().runtime_lock(
        (ROOT / "requirements.lock").read_text(), (ROOT / "pyproject.toml").read_text()
    )
    assert (ROOT / "requirements-runtime.lock").read_text() == derived


def test_the_runtime_lock_has_no_tools_and_the_same_pins() -> None:
    runtime = _pins((ROOT / "requirements-runtime.lock").read_text())
    development = _pins((ROOT / "requirements.lock").read_text())
    assert not set(TOOLS) & {name.lower() for name in runtime}
    for name in ("django", "djangorestframework", "celery", "gunicorn", "honcho", "gguf"):
        assert name in runtime, name
    for name, version in runtime.items():
        assert development[name] == version, name


def test_a_package_pulled_in_only_by_a_tool_stays_out() -> None:
    # toy lock: "app" needs "lib"; "tool" (dev) needs "helper"; "shared" both
    lock = (
        "app==1\n    # via rightsize (pyproject.toml)\n"
        "lib==2\n    # via app\n"
        "tool==3\n    # via rightsize (pyproject.toml)\n"
        "helper==4\n    # via tool\n"
        "shared==5\n    # via\n    #   app\n    #   tool\n"
    )
    pyproject = '[project]\nname = "x"\ndependencies = ["app>=1"]\n'
    pins = _pins(_deriver().runtime_lock(lock, pyproject))
    assert pins == {"app": "1", "lib": "2", "shared": "5"}


def test_production_installs_the_runtime_set_only() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install -r requirements-runtime.lock" in dockerfile
    commands = [line for line in dockerfile.splitlines() if not line.startswith("#")]
    assert not any("requirements.lock" in line for line in commands)
    makefile = (ROOT / "Makefile").read_text()
    # make serve -> serve-release -> compilemessages -> runtime: the runtime stamp only
    assert re.search(r"^serve-release: serve-check compilemessages$", makefile, re.MULTILINE)
    assert re.search(r"^compilemessages: runtime$", makefile, re.MULTILINE)
    assert re.search(r"^runtime: \$\(RUNTIME_STAMP\) gettext$", makefile, re.MULTILINE)
    assert "-r requirements-runtime.lock" in makefile
