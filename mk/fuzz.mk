# Long fuzzing run: 100,000 mutated specs (all mutation families mixed) through load + every
# check rule, in-process, 2 s per input; then FUZZ_VALID (default 5,000) schema-valid specs at
# the edges (tests/fuzz/schema_valid.py) through check (2 s), capacity (5 s), the fault-tree
# analysis (5 s; CPU seconds) and every 16th through the generators, each spec in a forked
# child whose peak RSS must stay <= 512 MiB (summary-valid.json: counts, CPU s, load). Failures are written as reproducers under .cache/fuzz/
# (FUZZ_OUT) with a summary.json (count, time, rate); `make test` runs a few dozen per family.
# FUZZ_EXAMPLES overrides the count (e.g. for a timing run); FUZZ_MINUTES stops it after that
# many minutes of wall-clock time with what it ran so far. The schema-valid run is one batch of a
# sharded campaign: FUZZ_BATCH seeds it (default: the next after the ledger's last) and its counts
# are appended to $(FUZZ_OUT)/valid-ledger.jsonl, whose totals summary-valid.json carries
# (tests/fuzz/ledger.py): e.g. `make fuzz FUZZ_VALID=200 FUZZ_MINUTES=50` in each session.
FUZZ_OUT ?= .cache/fuzz
FUZZ_EXAMPLES ?=
FUZZ_MINUTES ?=
FUZZ_VALID ?=
FUZZ_BATCH ?=

.PHONY: fuzz
fuzz: setup
	@mkdir -p $(FUZZ_OUT)
	@uptime
	ARCHKIT_FUZZ_OUT=$(abspath $(FUZZ_OUT)) $(if $(FUZZ_EXAMPLES),ARCHKIT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES)) \
	  $(if $(FUZZ_VALID),ARCHKIT_FUZZ_VALID=$(FUZZ_VALID)) $(if $(FUZZ_BATCH),ARCHKIT_FUZZ_BATCH=$(FUZZ_BATCH)) \
	  $(if $(FUZZ_MINUTES),ARCHKIT_FUZZ_DEADLINE=$$(( $$(date +%s) + $(FUZZ_MINUTES) * 60 ))) \
	  $(BIN)/python -m pytest tests/fuzz -q -s -p no:cacheprovider --hypothesis-profile=fuzz
