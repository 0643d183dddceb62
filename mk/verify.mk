# archkit verify: the offline demo (fixtures), then the reference manifests (reported; the tests gate them).
.PHONY: verify-demo bench-verify
verify-demo: setup
	$(BIN)/archkit verify examples/industrial-inspection.yaml --snapshot tests/verify/fixtures/industrial-inspection/snapshot.yaml --problems
	@if [ -d reference_service/deploy ] && [ -f $(DEMO_SPEC) ]; then \
	  $(BIN)/archkit verify $(DEMO_SPEC) --manifests reference_service/deploy --problems --fail-on never; fi

bench-verify: setup
	$(BIN)/python bench/bench_verify.py

DEMO_TARGETS += verify-demo
