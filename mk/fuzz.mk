# Long fuzzing run (issue: every input gets a clear answer in bounded time): 100,000 mutated specs
# (20,000 per mutation family) through load + every check rule, in-process, 2 s per input.
# Failures are written as reproducers under .cache/fuzz/ (FUZZ_OUT); `make test` runs a few
# dozen per family. FUZZ_EXAMPLES overrides the count per family (e.g. for a timing run).
FUZZ_OUT ?= .cache/fuzz
FUZZ_EXAMPLES ?=

.PHONY: fuzz
fuzz: setup
	@mkdir -p $(FUZZ_OUT)
	@uptime
	ARCHKIT_FUZZ_OUT=$(abspath $(FUZZ_OUT)) $(if $(FUZZ_EXAMPLES),ARCHKIT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES)) \
	  $(BIN)/python -m pytest tests/fuzz -q -s -p no:cacheprovider --hypothesis-profile=fuzz
