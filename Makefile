# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and installs
# what it needs first (re-run only when pyproject.toml changes).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup browser demo test lint typecheck unit stress bench interop clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

setup: $(STAMP)

# The HTML report is tested in a real headless Chromium: Debian's package (run as root, as CI does).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

demo: setup
	$(PY) examples/demo.py

lint: setup
	$(VENV)/bin/ruff check src tests examples bench interop
	$(VENV)/bin/ruff format --check src tests examples bench interop

typecheck: setup
	$(VENV)/bin/mypy

# Then no writer process of the run may be left behind (tests/writers_left.py).
unit: setup browser
	BLACKBOX_TEST_RUN=$$$$ $(PY) -m pytest -q && $(PY) tests/writers_left.py $$$$

test: lint typecheck unit

# The long versions of the reliability tests (docs/reliability.md): more processes and spans, many
# SIGKILL rounds, a large burst, twenty times the fuzzing examples. Prints the figures at the end.
stress: setup browser
	BLACKBOX_STRESS=1 $(PY) -m pytest -q -m reliability

bench: setup
	$(PY) bench/bench_recorder.py

# Against a real Phoenix server on 127.0.0.1 (arize-phoenix from PyPI, in its own environment):
# not part of `make test`, it installs a large package.
INTEROP_VENV ?= .venv-interop
interop:
	$(PYTHON) -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(INTEROP_VENV)/bin/python -m pip install --quiet arize-phoenix arize-phoenix-client pandas -e '.[dev]'
	$(INTEROP_VENV)/bin/python interop/phoenix_check.py

clean:
	rm -rf $(VENV) $(INTEROP_VENV) .mypy_cache .ruff_cache .pytest_cache test-artifacts
