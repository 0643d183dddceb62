"""A test-sized generator, installed the way a third party ships one: the `archkit.generators` entry point.

This follows docs/development.md ("Adding a generator") for a plug-in: one module with a function
that renders a plan, and a distribution's entry point naming it. The distribution is a real
`.dist-info` folder on sys.path, found by importlib.metadata like an installed wheel.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tests.conftest import EXAMPLES

from archkit import api
from archkit.generators import registry

PLUGIN = '''
"""archkit_tiny: one Markdown page listing the spec's alerts (a plan), nothing computed here."""


def generate(ctx):
    """Alert names by severity, from the run's alert plan."""
    lines = [ctx.header("<!--") + " -->", f"# Alerts of {ctx.spec.metadata.name}", ""]
    lines += [f"- {a.severity}: {a.name}" for a in ctx.plans.alerts.alerts]
    return {"tiny/alerts.md": "\\n".join(lines) + "\\n"}
'''


@pytest.fixture
def tiny_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "archkit_tiny.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "archkit_tiny-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: archkit-tiny\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [archkit.generators]
            tiny = archkit_tiny:generate
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # the built-ins loaded, then a copy of the registry for this test, so the plug-in is discovered
    # (entry points are read again) and forgotten afterwards
    registry.all_generators()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_LOADED", False)


def test_an_entry_point_generator_is_registered_and_rendered(tiny_plugin, tmp_path: Path) -> None:
    gens = registry.all_generators()
    assert "tiny" in gens and gens["tiny"].summary == "Alert names by severity, from the run's alert plan."
    spec_file = EXAMPLES[0]
    res = api.render(spec_file, tmp_path / "out", only=["tiny"], formats=())
    assert res.write.written == ["tiny/alerts.md"]
    text = (tmp_path / "out" / "tiny" / "alerts.md").read_text(encoding="utf-8")
    spec = api.load(spec_file).spec
    assert spec is not None
    from archkit.plans import alert_plan

    names = [a.name for a in alert_plan(spec).alerts]
    assert names and all(name in text for name in names)  # the plan, rendered


def test_a_plugin_cannot_take_a_builtin_name(tiny_plugin) -> None:
    registry.all_generators()
    with pytest.raises(registry.DuplicateGeneratorError):
        registry.register("prometheus")(lambda ctx: {})


def test_a_generator_that_raises_is_a_finding_and_the_others_are_written(tmp_path: Path) -> None:
    """Like a broken rule (AK199), a broken generator is reported, not a crash of the render."""
    registry.all_generators()

    @registry.register("broken-for-test")
    def broken(ctx):
        """Fails as a bug in a plug-in would."""
        raise ZeroDivisionError("a bug in a plug-in")

    try:
        res = api.render(EXAMPLES[0], tmp_path / "out", only=["broken-for-test", "prometheus"], formats=())
    finally:
        del registry._REGISTRY["broken-for-test"]
    internal = [d for d in res.diagnostics if d.code == "AK199"]
    assert [d.message for d in internal] == [
        "internal error in generator broken-for-test: ZeroDivisionError: a bug in a plug-in"
    ]
    assert (tmp_path / "out" / "prometheus" / "rules.yaml").is_file()
