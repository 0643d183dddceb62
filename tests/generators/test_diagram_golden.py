"""The generated DOT and PlantUML sources of every example and reference spec: present, stable, path-free."""

from __future__ import annotations

import pytest
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT
from tests.generators.diagram_helpers import diagram_sources, load

SPECS = EXAMPLES + REFERENCE_SPECS


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_every_spec_has_the_three_diagrams(spec_file):
    """Their sources' text is in the golden tree (test_golden_tree.py)."""
    files = diagram_sources(load(spec_file), spec_file.name)
    assert {"dataflow.dot", "controlflow.puml", "topology.dot"} <= set(files)


@pytest.mark.parametrize("spec_file", EXAMPLES[:1], ids=[p.stem for p in EXAMPLES[:1]])
def test_sources_are_byte_stable_and_path_free(spec_file):
    a = diagram_sources(load(spec_file), spec_file.name)
    b = diagram_sources(load(spec_file), spec_file.name)
    assert a == b
    for rel, text in a.items():
        assert str(ROOT) not in text and "site-packages" not in text, rel


def test_topology_writes_nothing_to_the_working_folder(tmp_path, monkeypatch):
    """`diagrams` renders into the CWD on exit; archkit only takes its DOT source."""
    monkeypatch.chdir(tmp_path)
    files = diagram_sources(load(EXAMPLES[0]), EXAMPLES[0].name)
    assert 'image="resources/' in files["topology.dot"]
    assert list(tmp_path.iterdir()) == []
