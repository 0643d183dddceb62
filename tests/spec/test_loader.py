"""The loader: safe, bounded, located; any input gives a model or located errors, never an exception."""

from __future__ import annotations

import time

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archkit.spec import load_file, load_text
from archkit.spec import loader as loader_mod
from archkit.spec.model import Spec
from tests.conftest import EXAMPLES, ROOT

MINIMAL = "apiVersion: archkit/v1\nmetadata: {name: t}\n"


def test_minimal_spec_loads():
    res = load_text(MINIMAL)
    assert res.ok and isinstance(res.spec, Spec) and res.diagnostics == []


def test_source_map_points_at_keys_and_values():
    text = MINIMAL + "dataflow:\n  stages:\n    - id: detect\n      kind: model\n      p99_ms: 40\n"
    res = load_text(text, "x.yaml")
    stage = res.spec.dataflow.stages[0]
    assert stage.spec_path == ("dataflow", "stages", 0)
    loc = res.source.at(stage.spec_path + ("p99_ms",))
    assert (loc.line, loc.col) == (7, 15)
    kloc = res.source.at(stage.spec_path + ("p99_ms",), key=True)
    assert (kloc.line, kloc.col) == (7, 7)


def test_yaml_1_1_booleans_stay_text():
    """`when: yes` is the text 'yes' (YAML 1.2), not True as PyYAML's 1.1 resolver would make it."""
    text = MINIMAL + (
        "controlflow:\n  start: d\n  decisions:\n    - id: d\n      branches:\n"
        "        - {when: yes, next: a}\n        - {when: no, next: a}\n      on_failure: a\n"
        "  terminals: [{id: a}]\n"
    )
    res = load_text(text)
    assert res.ok, res.diagnostics
    assert [b.when for b in res.spec.controlflow.decisions[0].branches] == ["yes", "no"]


def test_billion_laughs_is_refused_quickly():
    start = time.perf_counter()
    res = load_file(ROOT / "tests/spec/broken/billion-laughs.yaml")
    elapsed = time.perf_counter() - start
    assert not res.ok and res.diagnostics[0].code == "AK100"
    assert "alias expansion bomb" in res.diagnostics[0].message
    assert elapsed < 5  # generous: the point is that it does not expand 10^9 nodes


def test_object_construction_tags_are_refused():
    res = load_text("apiVersion: archkit/v1\nmetadata: !!python/object/apply:os.system ['true']\n")
    assert not res.ok and "not allowed" in res.diagnostics[0].message


def test_file_size_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(loader_mod, "MAX_FILE_BYTES", 100)
    p = tmp_path / "big.yaml"
    p.write_text(MINIMAL + "# " + "x" * 200 + "\n")
    res = load_file(p)
    assert not res.ok and "limit" in res.diagnostics[0].message and res.diagnostics[0].file == str(p)


def test_missing_file_and_directory(tmp_path):
    assert load_file(tmp_path / "nope.yaml").diagnostics[0].message == "file not found"
    assert not load_file(tmp_path).ok


def test_several_documents_are_refused():
    res = load_text(MINIMAL + "---\n" + MINIMAL)
    assert not res.ok and res.diagnostics[0].line == 4  # where the second document starts


def test_merge_keys_are_refused():
    res = load_text(MINIMAL + "x: &x {a: 1}\ny:\n  <<: *x\n")
    assert not res.ok and "merge keys" in res.diagnostics[0].message


def test_examples_load():
    for path in EXAMPLES:
        res = load_file(path)
        assert res.ok, [d.text() for d in res.diagnostics]


# ---------------------------------------------------------------------------- properties


def _assert_clean(res):
    assert (res.spec is None) == bool(res.diagnostics) or res.spec is not None
    for d in res.diagnostics:
        assert d.line >= 1 and d.col >= 1 and d.code.startswith("AK") and d.message


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_any_text_gives_a_model_or_located_errors(text):
    _assert_clean(load_text(text, "fuzz.yaml"))


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
_keys = st.sampled_from(
    [
        "apiVersion",
        "metadata",
        "name",
        "budgets",
        "p99_ms",
        "dataflow",
        "stages",
        "edges",
        "id",
        "kind",
        "from",
        "to",
        "model",
        "batching",
        "topology",
        "services",
        "pool",
        "controlflow",
        "calls",
        "target",
        "faulttrees",
        "gates",
        "inputs",
        "xyz",
    ]
) | st.text(max_size=8)
_docs = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _docs, max_size=8))
def test_any_yaml_document_gives_a_model_or_located_errors(doc):
    doc = {"apiVersion": "archkit/v1", "metadata": {"name": "t"}, **doc}
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    _assert_clean(load_text(text, "fuzz.yaml"))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_mutated_examples_never_crash(data):
    """Replace one value of a real example with an arbitrary one: model or located errors."""
    import random

    base = yaml.safe_load(EXAMPLES[data.draw(st.integers(0, len(EXAMPLES) - 1))].read_text())
    paths = []

    def collect(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                collect(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                collect(v, path + (i,))

    collect(base, ())
    rnd = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    path = paths[rnd.randrange(1, len(paths))]
    parent = base
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = data.draw(_docs)
    res = load_text(yaml.safe_dump(base, sort_keys=False), "mutated.yaml")
    _assert_clean(res)
