# Runbooks and Prometheus rules (issue 5): promtool accepts and passes what `archkit render` wrote,
# then `archkit runbook --run` walks the reference service's fault trees against the live service.
PROMTOOL ?= promtool
RUNBOOK_SERVICE_URL ?= http://127.0.0.1:8080

.PHONY: prometheus-demo runbook-demo
prometheus-demo: setup
	$(BIN)/archkit render $(DEMO_SPEC) -o $(RENDER_OUT) --only runbooks,prometheus
	$(PROMTOOL) check rules $(RENDER_OUT)/prometheus/rules.yaml
	cd $(RENDER_OUT)/prometheus && $(PROMTOOL) test rules rules.test.yaml

# Walks every fault tree of the demo spec against the reference service on its default ports:
# uses a service that already answers there, else starts one and always stops it again.
# Skipped (with a note) until the service's venv exists.
RUNBOOK_TREES = $(BIN)/python -c 'import sys,yaml; print(" ".join(t["id"] for t in yaml.safe_load(open(sys.argv[1]))["faulttrees"]))' $(DEMO_SPEC)
runbook-demo: setup
	@if [ ! -x reference_service/.venv/bin/python ] || [ ! -f $(DEMO_SPEC) ]; then \
	  echo "runbook-demo: needs reference_service/.venv (make reference-venv) and $(DEMO_SPEC); skipped"; exit 0; fi; \
	for t in $$($(RUNBOOK_TREES)); do $(BIN)/archkit runbook $(DEMO_SPEC) --tree $$t; done; \
	if ! curl -sf -o /dev/null $(RUNBOOK_SERVICE_URL)/readyz; then \
	  log=$$(mktemp); echo "runbook-demo: starting the reference service (log: $$log)"; \
	  reference_service/.venv/bin/python -m reference_service serve >$$log 2>&1 & pid=$$!; \
	  trap 'kill -TERM $$pid 2>/dev/null; wait $$pid 2>/dev/null' EXIT; \
	  for i in $$(seq 1 240); do curl -sf -o /dev/null $(RUNBOOK_SERVICE_URL)/readyz && break; sleep 0.5; done; \
	fi; \
	rc=0; for t in $$($(RUNBOOK_TREES)); do \
	  echo "== archkit runbook $(DEMO_SPEC) --tree $$t --run"; \
	  $(BIN)/archkit runbook $(DEMO_SPEC) --tree $$t --run || rc=$$?; done; \
	echo "runbook-demo: walked the trees (exit $$rc: 0 = no cause found, 1 = a cause confirmed)"

DEMO_TARGETS += prometheus-demo runbook-demo
