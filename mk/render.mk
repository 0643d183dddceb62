# archkit render: the four diagrams (SVG and PNG) and the self-contained review page.
# Needs Graphviz `dot`, a JVM and the pinned PlantUML jar (all set up by `make setup`).
RENDER_OUT ?= out

.PHONY: render-demo bench-render
render-demo: setup
	$(BIN)/archkit render $(DEMO_SPEC) -o $(RENDER_OUT) --format svg,png

bench-render: setup
	$(BIN)/python bench/bench_render.py

DEMO_TARGETS += render-demo
