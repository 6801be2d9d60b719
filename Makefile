# tvmfork: the two commands a user needs are `make wheel` and `make test`.
# Settings: MODE=auto|overlay|source  VARIANT=cpu|cuda  PYTHON=python3
# Machine-local paths (a TVM mirror, caches) go in tvmfork.local.toml (ignored by git).

PYTHON ?= python3
MODE ?= auto
VARIANT ?= cpu
VENV := .venv
PY := $(VENV)/bin/python
TVMFORK := $(VENV)/bin/tvmfork

.PHONY: all wheel test test-unit test-overlay check lint clean

all: wheel

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

wheel: $(VENV)/.installed
	$(TVMFORK) wheel --mode $(MODE) --variant $(VARIANT)

# Unit lane (the tool, real git repos in tmp dirs) and overlay lane (each Python patch's
# regression test: fails on the stock wheel, passes on the overlay fork wheel).
test: $(VENV)/.installed
	$(PY) -m pytest tests/unit tests/overlay

test-unit: $(VENV)/.installed
	$(PY) -m pytest -m unit tests/unit

test-overlay: $(VENV)/.installed
	$(PY) -m pytest tests/overlay

check: $(VENV)/.installed lint
	$(TVMFORK) check

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check python tests scripts
	$(VENV)/bin/ruff format --check python tests scripts
	$(VENV)/bin/mypy

clean:
	rm -rf out $(VENV)
