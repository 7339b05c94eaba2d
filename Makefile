# Two commands for a fresh machine: `make run` and `make test` (see README).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test setup serve-prep lint typecheck pytest messages compilemessages gettext clean

$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	touch $(STAMP)

setup: $(STAMP) gettext

# msgfmt/xgettext come from GNU gettext; install it when missing (root on our machines).
gettext:
	@command -v msgfmt >/dev/null || { apt-get update -qq && apt-get install -y -qq gettext >/dev/null; }

compilemessages: setup
	$(PY) manage.py compilemessages --ignore=.venv --verbosity 0

messages: setup
	$(PY) manage.py makemessages -l de -l it -l zh_Hans --no-obsolete --ignore=.venv --ignore=var --ignore=benchmarks --ignore=tests

serve-prep: compilemessages
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	$(PY) manage.py load_catalog

run: serve-prep
	@echo "Rightsize: http://$(HOST):$(PORT)/  (demo login: demo / demo; staff: admin, see above)"
	$(PY) manage.py runserver $(HOST):$(PORT)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: setup
	$(VENV)/bin/mypy .

pytest: compilemessages
	$(VENV)/bin/pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) var .mypy_cache .ruff_cache .pytest_cache .hypothesis
