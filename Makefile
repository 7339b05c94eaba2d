# Two commands for a fresh machine: `make run` and `make test` (see README).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Two dependency sets (docs/operations.md, "Dependencies"): the runtime set for the portal
# (make run, make serve, the Dockerfile) and the development set on top for make test.
RUNTIME_STAMP := $(VENV)/.runtime-installed
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test setup runtime locks serve-prep serve serve-release serve-check lint typecheck pytest checks catalog-check messages compilemessages gettext chromium clean

$(RUNTIME_STAMP): requirements-runtime.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-runtime.lock
	touch $(RUNTIME_STAMP)

$(STAMP): requirements.lock $(RUNTIME_STAMP)
	$(PY) -m pip install --quiet -r requirements.lock
	touch $(STAMP)

# The portal's own packages only: no test, lint or type tool.
runtime: $(RUNTIME_STAMP) gettext

setup: $(STAMP) gettext chromium

# After recompiling requirements.lock (uv pip compile pyproject.toml --extra dev
# --python-version 3.11 -o requirements.lock): the runtime lock at the same pins.
locks:
	$(PYTHON) .ci/runtime_lock.py

# msgfmt/xgettext come from GNU gettext; install it when missing (root on our machines).
gettext:
	@command -v msgfmt >/dev/null || { apt-get update -qq && apt-get install -y -qq gettext >/dev/null; }

# The browser tests (tests/browser/) drive the distribution's Chromium headless shell (the
# "old headless" build Playwright itself uses headless: half the CPU of the full browser)
# through Playwright; Playwright's own browser download is never used (it does not work on
# our machines).
chromium:
	@command -v chromium-headless-shell >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium-headless-shell >/dev/null; }

compilemessages: runtime
	$(PY) manage.py compilemessages --ignore=.venv --verbosity 0

messages: setup
	$(PY) manage.py makemessages -l de -l it -l zh_Hans --no-obsolete --ignore=.venv --ignore=var --ignore=benchmarks --ignore=tests

# seed_demo last: with SEED_URL (set by `make run`) it ends with the set-up block (address,
# demo login, staff login and password), after everything the loader prints.
STAFF_PASSWORD_FILE ?= var/staff-password.txt
serve-prep: compilemessages
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_catalog
	$(PY) manage.py seed_demo --password-file $(STAFF_PASSWORD_FILE)$(if $(SEED_URL), --url $(SEED_URL))

run: SEED_URL = http://$(HOST):$(PORT)/
run: serve-prep
	@$(PY) manage.py runserver $(HOST):$(PORT)

# Production start (docs/operations.md): gunicorn, a Celery worker and beat under honcho,
# against PostgreSQL and Redis. Ctrl-C (SIGINT/SIGTERM to honcho) stops all three.
serve: serve-release
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/honcho start -f Procfile

# The release step, once per deploy and before the processes start: schema, static files
# (hashed names for WhiteNoise), catalog seed data. No demo account in production.
serve-release: serve-check compilemessages
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py load_catalog

# Refuse to start half-configured: each missing variable is named, then make stops.
serve-check:
	@fail=0; \
	case "$$DATABASE_URL" in postgres://*|postgresql://*) ;; \
	  *) echo "make serve: set DATABASE_URL=postgres://user:password@host:5432/name" >&2; fail=1;; esac; \
	case "$$REDIS_URL" in redis://*|rediss://*) ;; \
	  *) echo "make serve: set REDIS_URL=redis://host:6379/0" >&2; fail=1;; esac; \
	[ "$$DEBUG" = False ] || { echo "make serve: set DEBUG=False" >&2; fail=1; }; \
	[ -n "$$SECRET_KEY" ] || { echo "make serve: set SECRET_KEY (a long random string)" >&2; fail=1; }; \
	[ -n "$$ALLOWED_HOSTS" ] || { echo "make serve: set ALLOWED_HOSTS (the site's host names)" >&2; fail=1; }; \
	[ $$fail = 0 ] || echo "make serve: see docs/operations.md and .env.example" >&2; \
	exit $$fail

# lint-imports checks the contracts in pyproject.toml ([tool.importlinter]): the layers
# estimator < catalog < pricing < sizing_site import downward only.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: setup
	$(VENV)/bin/mypy .

# --durations=30: the slowest 30 tests, printed at the end of every run (docs/testing.md).
# In parallel (pytest-xdist): one worker per core, at most 8 (each takes a Redis database of
# its own, tests/conftest.py); --dist loadfile hands out whole test modules, and the browser
# tests as one unit. PYTEST_WORKERS=0 runs it in one process.
# Bytecode is written (and then read) even where the environment sets PYTHONDONTWRITEBYTECODE:
# each worker, server and manage.py process the tests start would otherwise compile the
# project from source again (collecting the suite: 15.7 s without cached bytecode, 7.9 s with).
PYTEST_WORKERS ?= auto
pytest: setup compilemessages
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -n $(PYTEST_WORKERS) --maxprocesses 8 --dist loadfile --durations=30

# The catalog's own rules (manage.py validate_catalog, docs/catalog.md) on a freshly loaded
# catalog in a throwaway SQLite file, whatever DATABASE_URL the caller set: a few seconds.
CATALOG_CHECK_DB := var/catalog-check.sqlite3
catalog-check: setup
	mkdir -p var && rm -f $(CATALOG_CHECK_DB)
	DATABASE_URL=sqlite:///$(CURDIR)/$(CATALOG_CHECK_DB) $(PY) manage.py migrate --noinput -v0
	DATABASE_URL=sqlite:///$(CURDIR)/$(CATALOG_CHECK_DB) $(PY) manage.py load_catalog >/dev/null
	DATABASE_URL=sqlite:///$(CURDIR)/$(CATALOG_CHECK_DB) $(PY) manage.py validate_catalog
	rm -f $(CATALOG_CHECK_DB)

checks: lint typecheck catalog-check

# The checks run beside pytest, in the fifth of the two cores its workers leave idle
# (docs/testing.md, "Parallel runs"); their output waits in var/checks.log and follows
# pytest's, so neither is cut into the other. Either failing fails `make test`.
test: setup compilemessages
	@mkdir -p var
	@$(MAKE) --no-print-directory -j3 --output-sync=target checks >var/checks.log 2>&1 & checks=$$!; \
	$(MAKE) --no-print-directory pytest; tests=$$?; \
	wait $$checks; checked=$$?; \
	echo "--- lint, typecheck, catalog-check (var/checks.log):"; cat var/checks.log; \
	[ $$checked = 0 ] || echo "make test: lint, typecheck or catalog-check failed (above)" >&2; \
	[ $$tests = 0 ] && [ $$checked = 0 ]

clean:
	rm -rf $(VENV) var .mypy_cache .ruff_cache .pytest_cache .hypothesis
