# The peer simulator for issue 30's cross-check (tests/perf/test_llm_vidur_live.py): Vidur
# (microsoft/vidur, MIT; PyPI vidur 0.0.26) in its own venv, since it pulls in its own pandas,
# scikit-learn and wandb. Every package is pinned (tests/data/vidur/requirements.txt, installed
# with --no-deps so nothing resolves against today's PyPI) and `pip check` proves the set complete.
# The venv is cached outside the clone, keyed by the pins' hash, so every clone and CI run that
# keeps $(VIDUR_CACHE) installs it once (~1.3 GB, ~2 min). Vidur's profiles never come from its
# Hugging Face download: tests/data/vidur/run_vidur.py points it at the subset in that folder.
VIDUR_REQUIREMENTS := tests/data/vidur/requirements.txt
VIDUR_CACHE ?= $(HOME)/.cache/archkit/vidur
VIDUR_VENV := $(VIDUR_CACHE)/0.0.26-$(shell sha256sum $(VIDUR_REQUIREMENTS) | cut -c1-12)
export ARCHKIT_VIDUR_PYTHON := $(VIDUR_VENV)/bin/python
SETUP_TARGETS += $(VIDUR_VENV)/.installed

# The marker is written last: an interrupted install is redone from scratch, never half-used.
$(VIDUR_VENV)/.installed: $(VIDUR_REQUIREMENTS) | $(STAMPS)/apt
	rm -rf $(VIDUR_VENV)
	$(PYTHON) -m venv $(VIDUR_VENV)
	$(VIDUR_VENV)/bin/python -m pip install -q --no-deps -r $(VIDUR_REQUIREMENTS)
	$(VIDUR_VENV)/bin/python -m pip check
	$(VIDUR_VENV)/bin/python -c 'import vidur.main, vidur.execution_time_predictor.sklearn_execution_time_predictor'
	@touch $@

.PHONY: vidur-test
# The live cross-check alone: Vidur's simulator on the committed profiles against archkit's.
vidur-test: setup
	$(BIN)/python -m pytest tests/perf/test_llm_vidur_live.py tests/perf/test_llm_vidur.py -q
