# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and installs
# what it needs first (re-run only when pyproject.toml changes).
PYTHON ?= python3
# One environment per interpreter (.venv for python3, .venv-python3.13 for PYTHON=python3.13), so a
# run on another Python never reuses the default one.
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(notdir $(PYTHON)))
PY := $(VENV)/bin/python
# The interpreter PYTHON names. A pyenv shim (python3.13) runs only the versions pyenv was told to
# use (`pyenv global`, PYENV_VERSION); when it does not run, the newest pyenv version that has it does.
RESOLVE = if $(1) -c '' 2>/dev/null; then echo $(1); \
	elif v=$$(pyenv whence $(1) 2>/dev/null | tail -n 1) && [ -n "$$v" ]; then echo "$$(pyenv root)/versions/$$v/bin/$(1)"; fi
PYTHON_EXE := $(shell $(call RESOLVE,$(PYTHON)))
# Which interpreter PYTHON is today (its version and installation). The stamp is named after it, so a
# venv made by another one (python3 upgraded, VENV= pointing at another version's) is remade, not reused.
PY_ID_CODE := import hashlib, sys; print(sys.version.split()[0] + "-" + hashlib.sha1(sys.base_prefix.encode()).hexdigest()[:8])
PY_ID := $(shell $(PYTHON_EXE) -c '$(PY_ID_CODE)' 2>/dev/null)
STAMP := $(VENV)/.installed-$(PY_ID)
# pydantic-ai from before its capabilities (1.80), which --stub-tools cannot answer: one warning,
# the tools run (tests/unit/playback/test_stub_tools_old_seam.py). Put first on PYTHONPATH, never imported otherwise.
OLD_PYDANTIC_AI := $(VENV)/old-pydantic-ai
# What `make test-pythons` runs `make test` on, those found on PATH or in pyenv.
PYTHONS ?= python3.10 python3.11 python3.12 python3.13

.PHONY: setup browser node demo workbench test test-pythons lint typecheck unit wheel-check stress bench interop clean \
	conformance-venvs

# _version.py too: the installed metadata (pip show, importlib.metadata) carries the version.
$(STAMP): pyproject.toml src/otel_blackbox/_version.py
	@test -n "$(PY_ID)" || { echo "make: PYTHON=$(PYTHON) does not run:" >&2; $(PYTHON) -c '' >&2; exit 1; }
	@if [ -x $(PY) ] && [ "$$($(PY) -c '$(PY_ID_CODE)' 2>/dev/null)" = "$(PY_ID)" ]; then :; else \
		if [ -e $(VENV) ]; then echo "$(VENV) was not made by $(PYTHON) (Python $(PY_ID)): recreating it"; fi; \
		rm -rf $(VENV) && echo "$(PYTHON_EXE) -m venv $(VENV)" && $(PYTHON_EXE) -m venv $(VENV); fi
	@test "$$($(PY) -c '$(PY_ID_CODE)')" = "$(PY_ID)" || { echo "make: $(PY) is not $(PYTHON)" >&2; exit 1; }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	@rm -rf $(OLD_PYDANTIC_AI) && $(PY) -m pip install --quiet --no-deps --target $(OLD_PYDANTIC_AI) \
		pydantic-ai-slim==1.70.0 pydantic-graph==1.70.0
	touch $(STAMP)

setup: $(STAMP)

# Instrumentation families whose pins conflict with the main venv (tests/conformance/harness.py): a
# venv each, from tests/conformance/requirements/NAME.txt, kept in a cache folder by a key of its pins
# (scripts/conformance_venvs.py) and linked as .venv-conformance/NAME; built two at a time.
conformance-venvs: setup
	$(PY) scripts/conformance_venvs.py --python $(PYTHON_EXE) --jobs 2

# The HTML report is tested in a real headless Chromium: Debian's package (run as root, as CI does).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# The JavaScript agent (examples/node/) is tested on Node and npm: Debian's packages when missing, then
# `npm ci` of its lock file, again only when package-lock.json is newer than what was installed.
NODE_DIR := examples/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
node: $(NODE_STAMP)

$(NODE_STAMP): $(NODE_DIR)/package-lock.json $(NODE_DIR)/package.json
	@{ command -v node && command -v npm; } >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null; }
	npm ci --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

demo: setup
	$(PY) examples/demo.py

# The workbench over demo.db with the fake provider running: the incident path clicked, no API key.
workbench: setup
	$(PY) examples/workbench.py

lint: setup
	$(VENV)/bin/ruff check src tests examples bench interop scripts
	$(VENV)/bin/ruff format --check src tests examples bench interop scripts

typecheck: setup
	$(VENV)/bin/mypy

# Then no writer process of the run may be left behind (tests/programs/writers_left.py). The tests run in
# TEST_WORKERS processes (pytest-xdist): most of their time is subprocesses and loopback I/O.
TEST_WORKERS ?= 2
unit: setup browser node conformance-venvs
	BLACKBOX_CONFORMANCE_REQUIRED=1 BLACKBOX_TEST_RUN=$$$$ $(PY) -m pytest -q -n $(TEST_WORKERS) && $(PY) tests/programs/writers_left.py $$$$

# The release as a user gets it (scripts/check_wheel.py): the wheel built, installed into an empty
# venv with no checkout on sys.path, and used there. Its dependencies are downloaded once into
# WHEELHOUSE (in the venv: `make clean` empties it) and installed from there, offline, afterwards.
WHEELHOUSE ?= $(VENV)/wheelhouse
WHEEL_CHECK = $(PY) scripts/check_wheel.py --wheelhouse $(WHEELHOUSE)
wheel-check: setup
	$(WHEEL_CHECK)

# The wheel check after the tests, also under `make -j`.
test: lint typecheck unit
	$(WHEEL_CHECK)

# `make test` on each Python of PYTHONS that runs here, one after the other, each in its own venv;
# stops at the first that fails and names it. None found is a failure: it would have tested nothing.
test-pythons:
	@ran=; for p in $(PYTHONS); do \
		exe=$$($(call RESOLVE,$$p)); \
		if [ -z "$$exe" ]; then echo "test-pythons: $$p skipped, not found on PATH or in pyenv"; continue; fi; \
		echo "test-pythons: make test PYTHON=$$exe"; \
		$(MAKE) --no-print-directory test PYTHON=$$exe VENV=.venv-$$p \
			|| { echo "test-pythons: make test failed on $$p" >&2; exit 1; }; \
		echo "test-pythons: $$p passed"; ran="$$ran $$p"; \
	done; \
	if [ -z "$$ran" ]; then echo "test-pythons: none of $(PYTHONS) found" >&2; exit 1; fi; \
	echo "test-pythons: passed on$$ran"

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
	rm -rf .venv .venv-python* .venv-conformance $(VENV) $(INTEROP_VENV) $(NODE_DIR)/node_modules .mypy_cache .ruff_cache .pytest_cache test-artifacts
