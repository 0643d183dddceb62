# The prediction loop on this machine (issue 29, docs/benchmarks.md "Fidelity"): bench/fidelity.sh
# starts the reference service on the spec's ports, calibrates it here into out/calibration/
# (the committed specs/calibration/ file stays the documented reference), runs `archkit capacity`
# and the reference spec's open-model baseline (2 req/s for 250 s: 500 requests, enough to decide
# a P99), writes the report to $(LOADTEST_OUT) (the review page overlays it) and prints the
# predicted-vs-measured table, end to end and per stage; then the stress level's knee search
# (3 -> 26 req/s, 124 s) and the predicted vs measured knee and shed share past it
# (bench/fidelity_knee.py: ~2.5 min more; FIDELITY_KNEE=0 skips it). ~9 min on 2 cores.
FIDELITY_DURATION ?=
FIDELITY_KNEE ?= 1

.PHONY: demo-fidelity
demo-fidelity: setup reference-venv
	BIN=$(BIN) REF_PY=reference_service/.venv/bin/python FIDELITY_OUT=$(dir $(LOADTEST_OUT)). \
	  FIDELITY_PORTS="$(LT_HTTP_PORT) $(LT_TRITON_HTTP_PORT) $(LT_TRITON_GRPC_PORT) $(LT_METRICS_PORT)" \
	  FIDELITY_DURATION=$(FIDELITY_DURATION) FIDELITY_KNEE=$(FIDELITY_KNEE) bench/fidelity.sh

DEMO_TARGETS += demo-fidelity
