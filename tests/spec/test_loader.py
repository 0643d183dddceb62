"""The loader: safe, bounded, located; any input gives a model or located errors, never an exception."""

from __future__ import annotations

import time

import pytest
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


# ---------------------------------------------------------------------------- bounded reads


def test_dev_zero_is_refused_at_the_cap():
    """/dev/zero reports st_size 0: the cap must hold on what is read, not on what stat says."""
    start = time.perf_counter()
    res = load_file("/dev/zero")
    assert time.perf_counter() - start < 1
    assert not res.ok and res.diagnostics[0].message == (
        f"file is over the {loader_mod.MAX_FILE_BYTES}-byte limit for a spec"
    )


def test_directory_is_a_clear_error(tmp_path):
    res = load_file(tmp_path)
    assert res.diagnostics[0].message == "is a directory, not a file"
    assert res.diagnostics[0].file == str(tmp_path)


def test_unreadable_file_is_a_clear_error(tmp_path):
    import os

    import pytest

    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    p = tmp_path / "secret.yaml"
    p.write_text(MINIMAL)
    p.chmod(0)
    assert load_file(p).diagnostics[0].message == "cannot read file: Permission denied"


def test_fifo_is_read_when_its_writer_comes_late(tmp_path):
    import os
    import threading

    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)

    def writer():
        time.sleep(0.3)
        with open(fifo, "w") as fh:
            fh.write(MINIMAL)

    t = threading.Thread(target=writer)
    t.start()
    res = load_file(fifo)
    t.join()
    assert res.ok, res.diagnostics


def test_stalled_fifo_times_out(tmp_path, monkeypatch):
    """A writer that sends part of a spec and then stalls: a timeout, not a hang."""
    import os

    monkeypatch.setattr(loader_mod, "READ_TIMEOUT_S", 0.5)
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    wfd = None
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer open without blocking
    try:
        wfd = os.open(fifo, os.O_WRONLY)
        os.write(wfd, b"apiVersion: archkit/v1\n")
        start = time.perf_counter()
        res = load_file(fifo)
        assert time.perf_counter() - start < 3
        assert "no complete input within 0.5 s" in res.diagnostics[0].message
    finally:
        if wfd is not None:
            os.close(wfd)
        os.close(rfd)


def test_endless_pipe_on_stdin_is_refused_at_the_cap():
    import subprocess
    import sys

    yes = subprocess.Popen(["yes", "# padding"], stdout=subprocess.PIPE)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "archkit", "check", "-"],
            stdin=yes.stdout,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        yes.kill()
        yes.wait()
    assert out.returncode == 1
    assert out.stdout.startswith("<stdin>:1:1: AK100 error file is over the"), out.stdout + out.stderr


def test_spec_on_stdin_is_checked():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "archkit", "check", "-", "--select", "AK1"],
        input=MINIMAL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.endswith("1 file(s) checked: 0 error(s), 0 warning(s), 0 info\n")


# ---------------------------------------------------------------------------- scalars and tags


def test_yaml_1_1_scalars_stay_text():
    """Dates, sexagesimals and underscored numbers are text; 0777 is decimal (YAML 1.2 core)."""
    text = MINIMAL.replace("{name: t}", "{name: t, labels: {a: 2024-13-01, b: 1:30, c: 1_000, d: =}}")
    res = load_text(text)
    assert res.ok, res.diagnostics
    assert res.spec.metadata.labels == {"a": "2024-13-01", "b": "1:30", "c": "1_000", "d": "="}
    data, _ = loader_mod.parse_yaml("[0777, 2024-01-01 25:00:00]")
    assert data == [777, "2024-01-01 25:00:00"]


def test_core_schema_numbers():
    data, _ = loader_mod.parse_yaml(
        "[0o17, 0x1F, -5, +3, 1e3, .5, -.inf, true, ~, null, '', !!float 2, !!str 3]"
    )
    assert data[:11] == [15, 31, -5, 3, 1000.0, 0.5, float("-inf"), True, None, None, ""]
    assert data[11] == 2.0 and isinstance(data[11], float) and data[12] == "3"


def test_timeout_inf_is_a_check_error_not_a_broken_locustfile(monkeypatch):
    """`timeout_ms: .inf` once passed check and reached the locustfile as the name `inf`."""
    from archkit import api

    monkeypatch.chdir(ROOT)
    report = api.check(["tests/spec/broken/locust-timeout-inf.yaml"])
    assert report.failed
    assert [d.path for d in report.diagnostics if d.code == "AK101"] == [
        "dataflow.stages[0].timeout_ms",
        "loadtest.scenarios[0].weight",
    ]


# ---------------------------------------------------------------------------- huge numbers


@pytest.mark.parametrize(
    "old,new,path",
    [
        ("instances: 1\n", "instances: 1000000000\n", "model.instances"),
        ("max_batch_size: 8\n", "max_batch_size: 1000000000\n", "model.batching.max_batch_size"),
        ("replicas: 2", "replicas: 1000000000", "replicas"),
    ],
)
def test_huge_counts_are_schema_errors_answered_in_time(old, new, path):
    """Counts that once sent the analysis into loops linear in their value (10^9 servers or
    batch slots) are refused by the schema's bounds; the whole check answers within the fuzz
    harness's per-input limit."""
    from tests.fuzz.harness import run_one

    text = (ROOT / "examples" / "industrial-inspection.yaml").read_text()
    assert old in text
    text = text.replace(old, new, 1)
    res = load_text(text, "huge.yaml")
    assert [d.message.split(";")[0] for d in res.diagnostics] == [
        f"Input should be less than or equal to {_bound(path)}"
    ]
    assert res.diagnostics[0].path.endswith(path)
    out = run_one(text)
    assert out.problem is None, out.problem


def _bound(path: str) -> int:
    from archkit.spec import model

    return {"model.instances": model.MAX_INSTANCES, "model.batching.max_batch_size": model.MAX_BATCH}.get(
        path, model.MAX_REPLICAS
    )


def test_huge_concurrency_is_a_schema_error():
    text = (
        MINIMAL
        + "dataflow:\n  stages:\n    - {id: a, kind: preprocess, concurrency: 1000000000, p50_ms: 5}\n"
    )
    res = load_text(text)
    assert res.diagnostics[0].message.startswith("Input should be less than or equal to 1024")
