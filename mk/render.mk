# archkit render: the four diagrams (SVG and PNG) and the self-contained review page.
# Needs Graphviz `dot`, a JVM and the pinned PlantUML jar (all set up by `make setup`).
# After `demo-loadtest` (it runs earlier in `make demo`) the review page shows the measured
# values of its report beside the budgets.
RENDER_OUT ?= out
RENDER_MEASURED ?= $(firstword $(wildcard $(LOADTEST_OUT)/measured.json))

.PHONY: render-demo render-test bench-render
render-demo: setup
	$(BIN)/archkit render $(DEMO_SPEC) -o $(RENDER_OUT) --image-format svg,png $(if $(RENDER_MEASURED),--measured $(RENDER_MEASURED))
	@echo "review page: $(RENDER_OUT)/review.html"

render-test: setup
	$(BIN)/python -m pytest tests/generators -q --ignore=tests/generators/test_locust.py

bench-render: setup
	$(BIN)/python bench/bench_render.py --repeat 5

DEMO_TARGETS += render-demo
