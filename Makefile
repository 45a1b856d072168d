# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and installs
# what it needs first (re-run only when pyproject.toml changes).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(PY) examples/demo.py

lint: setup
	$(VENV)/bin/ruff check src tests examples bench
	$(VENV)/bin/ruff format --check src tests examples bench

typecheck: setup
	$(VENV)/bin/mypy

unit: setup
	$(PY) -m pytest -q

test: lint typecheck unit

bench: setup
	$(PY) bench/bench_recorder.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache test-artifacts
