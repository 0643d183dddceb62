"""The real renderers (dot, PlantUML on the local JVM) on every example's diagram sources."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT
from tests.generators.diagram_helpers import diagram_sources, load

from archkit.generators import renderers
from archkit.generators.renderers import RendererError, clean_svg, render_sources

SPECS = EXAMPLES + REFERENCE_SPECS


@pytest.fixture(scope="module")
def rendered() -> dict[str, bytes]:
    """Every example's diagrams rendered to SVG in ONE pass (one JVM for all PlantUML sources)."""
    files: dict[str, str] = {}
    for spec_file in SPECS:
        for rel, src in diagram_sources(load(spec_file), spec_file.name).items():
            files[f"{spec_file.stem}/{rel}"] = src
    return render_sources(files, ("svg",))


def test_every_source_renders_without_error(rendered):
    stems = {p.stem for p in SPECS}
    for stem in stems:
        for name in ("dataflow.svg", "controlflow.svg", "topology.svg"):
            assert f"{stem}/{name}" in rendered
    assert any("/faulttree/" in rel for rel in rendered)


def test_svgs_are_wellformed_self_contained_and_clean(rendered):
    for rel, data in rendered.items():
        text = data.decode("utf-8")
        ET.fromstring(text)  # well-formed XML
        assert "<!--" not in text and "<?plantuml" not in text and "<!DOCTYPE" not in text, rel
        assert str(ROOT) not in text and "site-packages" not in text and "/usr/" not in text, rel
        assert "<script" not in text.lower(), rel
        if rel.endswith("topology.svg"):
            assert 'href="data:image/png;base64,' in text, rel  # the icons are inlined
            assert 'href="resources/' not in text, rel


def test_plantuml_error_names_the_diagram():
    bad = {"broken/controlflow.puml": "@startuml\nstart\n:oops\nif (x) then\n@enduml\n"}
    with pytest.raises(RendererError, match=r"broken/controlflow.puml: line \d+"):
        render_sources(bad, ("svg",))


def test_dot_error_is_reported():
    with pytest.raises(RendererError, match="dot failed"):
        render_sources({"x.dot": "digraph { a -> }"}, ("svg",))


def test_missing_jar_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ARCHKIT_PLANTUML_JAR", str(tmp_path / "nope.jar"))
    with pytest.raises(
        RendererError,
        match="ARCHKIT_PLANTUML_JAR: .*nope.jar does not exist: run `archkit renderers install`",
    ):
        renderers.find_plantuml_jar()


def test_cache_renders_each_source_once(monkeypatch):
    calls = []
    real = renderers.run_dot
    monkeypatch.setattr(renderers, "run_dot", lambda src, fmt: calls.append(fmt) or real(src, fmt))
    cache: dict = {}
    files = {"a.dot": "digraph { a -> b }", "b.dot": "digraph { a -> b }"}
    first = render_sources(files, ("svg",), cache)
    again = render_sources(files, ("svg",), cache)
    assert calls == ["svg"] and first == again and set(first) == {"a.svg", "b.svg"}


def test_clean_svg_inlines_only_files_under_base(tmp_path):
    (tmp_path / "icon.png").write_bytes(b"\x89PNG fake")
    svg = (
        '<?xml version="1.0"?><!DOCTYPE svg PUBLIC "x" "y"><!-- secret /home/u -->'
        '<svg><image xlink:href="icon.png"/><image xlink:href="/etc/passwd.png"/></svg>'
    )
    out = clean_svg(svg, tmp_path)
    assert "data:image/png;base64," in out and "/etc/passwd" not in out and "secret" not in out


def test_output_is_byte_stable_across_diagram_sets():
    """The same diagram renders to the same bytes whatever else the JVM rendered before it."""
    src = diagram_sources(load(EXAMPLES[0]), EXAMPLES[0].name)["controlflow.puml"]
    other = diagram_sources(load(EXAMPLES[-1]), EXAMPLES[-1].name)["controlflow.puml"]
    files = {"a.puml": src, "b.puml": other, "c.puml": src + "' a comment changes nothing drawn\n"}
    out = render_sources(files, ("svg", "png"))
    assert out["a.svg"] == out["c.svg"] and out["a.png"] == out["c.png"]
    dot_src = diagram_sources(load(EXAMPLES[0]), EXAMPLES[0].name)["dataflow.dot"]
    once = render_sources({"x.dot": dot_src}, ("svg", "png"))
    again = render_sources({"y.dot": dot_src + "// again\n"}, ("svg", "png"))
    assert once["x.svg"] == again["y.svg"] and once["x.png"] == again["y.png"]


def test_svg_and_png_share_one_jvm_and_carry_no_source(monkeypatch):
    """With two formats all PlantUML goes to one local server; its PNGs lose the embedded source."""
    calls = {"cli": 0, "server": 0}
    real_server = renderers.run_plantuml_server
    monkeypatch.setattr(renderers, "run_plantuml", lambda *a: calls.__setitem__("cli", calls["cli"] + 1))

    def server(*a):
        calls["server"] += 1
        return real_server(*a)

    monkeypatch.setattr(renderers, "run_plantuml_server", server)
    srcs = {f"{p.stem}.puml": diagram_sources(load(p), p.name)["controlflow.puml"] for p in EXAMPLES[:2]}
    out = render_sources(srcs, ("svg", "png"))
    assert calls == {"cli": 0, "server": 1}
    assert len(out) == 4
    for rel, data in out.items():
        if rel.endswith(".png"):
            assert data.startswith(b"\x89PNG") and b"iTXt" not in data and b"plantuml" not in data.lower()
        else:
            ET.fromstring(data.decode())


def test_server_reports_the_failing_diagram_and_line():
    bad = {
        "ok.puml": "@startuml\nstart\n:a;\nstop\n@enduml\n",
        "bad.puml": "@startuml\nstart\n:oops\nif (x) then\n@enduml\n",
    }
    with pytest.raises(RendererError, match=r"bad.puml: line \d+"):
        render_sources(bad, ("svg", "png"))
