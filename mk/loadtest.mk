# archkit loadtest: a short baseline against the OCR reference service, report in out/loadtest/.
# The service is started here on 127.0.0.1 and always stopped (trap), whatever the test found.
# A missed budget (exit 1) is reported, not fatal for the demo; a usage error (exit 2) is.
LOADTEST_OUT ?= out/loadtest
LOADTEST_DURATION ?= 20
LOADTEST_LEVEL ?= baseline
LOADTEST_LOG := .cache/loadtest/reference-service.log
ifneq ($(wildcard $(DEMO_SPEC)),)
LOADTEST_SPEC ?= $(DEMO_SPEC)
LOADTEST_ENV ?= cpu   # the spec's budgets for this 2-core machine
LT_HTTP_PORT ?= 8080
LT_TRITON_HTTP_PORT ?= 8000
LT_TRITON_GRPC_PORT ?= 8001
LT_METRICS_PORT ?= 8002
else
# Until specs/ocr-reference.yaml exists: archkit's own spec of the service on other ports.
LOADTEST_SPEC ?= tests/loadtest/specs/ocr-local.yaml
LOADTEST_ENV ?=
LT_HTTP_PORT ?= 18080
LT_TRITON_HTTP_PORT ?= 18000
LT_TRITON_GRPC_PORT ?= 18001
LT_METRICS_PORT ?= 18002
endif

# NVIDIA perf_analyzer, the real binary: it ships inside the tritonclient 2.40.0 wheel
# (tritonclient-2.40.0.data/data/bin/perf_analyzer). The main venv pins tritonclient 2.73.0, so
# the 2.40.0 wheel is downloaded without dependencies and only the binary is taken. It needs
# Debian's libb64 and libcudart.so.12 (PyPI nvidia-cuda-runtime-cu12, in a tools folder on
# LD_LIBRARY_PATH; it runs without a GPU). strace and ip (iproute2) run the loopback test in an
# isolated network namespace.
EXTRA_APT_PACKAGES += libb64-0d strace unzip iproute2
PERF_ANALYZER_DIR := .cache/perf_analyzer
PERF_ANALYZER := $(PERF_ANALYZER_DIR)/bin/perf_analyzer
PERF_ANALYZER_CUDA := $(PERF_ANALYZER_DIR)/cuda/nvidia/cuda_runtime/lib
export ARCHKIT_PERF_ANALYZER := $(abspath $(PERF_ANALYZER))
export ARCHKIT_PERF_ANALYZER_LIBS := $(abspath $(PERF_ANALYZER_CUDA))
SETUP_TARGETS += $(PERF_ANALYZER)

$(PERF_ANALYZER): mk/loadtest.mk | $(STAMPS)/venv
	@mkdir -p $(PERF_ANALYZER_DIR)/wheel $(PERF_ANALYZER_DIR)/bin
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
	  --python-version 3.11 -d $(PERF_ANALYZER_DIR)/wheel tritonclient==2.40.0
	cd $(PERF_ANALYZER_DIR) && unzip -o -q -j wheel/tritonclient-2.40.0-*.whl \
	  tritonclient-2.40.0.data/data/bin/perf_analyzer -d bin
	$(BIN)/python -m pip install -q --no-deps --upgrade --target $(PERF_ANALYZER_DIR)/cuda nvidia-cuda-runtime-cu12==12.9.79
	chmod +x $@ && LD_LIBRARY_PATH=$(abspath $(PERF_ANALYZER_CUDA)) $@ --version 2>&1 | grep -q 'Version 2.40.0'
	@touch $@

.PHONY: demo-loadtest loadtest-test bench-loadtest
demo-loadtest: setup reference-venv
	@mkdir -p $(dir $(LOADTEST_LOG))
	@set -u; \
	reference_service/.venv/bin/python -m reference_service serve --http-port $(LT_HTTP_PORT) \
	  --triton-http-port $(LT_TRITON_HTTP_PORT) --triton-grpc-port $(LT_TRITON_GRPC_PORT) \
	  --triton-metrics-port $(LT_METRICS_PORT) > $(LOADTEST_LOG) 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null' EXIT; \
	for i in $$(seq 1 240); do grep -q '^ready:' $(LOADTEST_LOG) && break; \
	  kill -0 $$pid 2>/dev/null || break; sleep 0.5; done; \
	if ! grep -q '^ready:' $(LOADTEST_LOG); then echo "reference service did not start:"; tail -30 $(LOADTEST_LOG); exit 1; fi; \
	rc=0; $(BIN)/archkit loadtest $(LOADTEST_SPEC) --level $(LOADTEST_LEVEL) --duration $(LOADTEST_DURATION) \
	  $(if $(strip $(LOADTEST_ENV)),--env $(strip $(LOADTEST_ENV))) \
	  --host http://127.0.0.1:$(LT_HTTP_PORT) --report $(LOADTEST_OUT) || rc=$$?; \
	echo "load-test report: $(LOADTEST_OUT)/report.html (exit $$rc)"; [ $$rc -le 1 ]

loadtest-test: setup
	$(BIN)/python -m pytest tests/loadtest tests/generators/test_locust.py -q

bench-loadtest: setup
	$(BIN)/python bench/bench_loadtest.py --runs 5 --seconds 5 --users 20

# `make demo` measures the baseline in demo-fidelity (mk/fidelity.mk): calibrated here, long enough
# to decide its P99s. `make demo-loadtest` still runs the short baseline alone.
