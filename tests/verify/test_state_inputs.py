"""Snapshot and manifest readers: any file gives objects or one located StateError, in bounded time."""

from __future__ import annotations

import pytest

from archkit.verify.state import StateError, load_manifests, load_snapshot
from tests.verify.cluster_fixtures import INDUSTRIAL

DEPLOY = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\n"


@pytest.mark.parametrize(
    "text,message",
    [
        (DEPLOY + "spec: {replicas: !!int abc}\n", "s.yaml:1: bad YAML value (ValueError"),
        (DEPLOY + "spec: {replicas: !!float ''}\n", "s.yaml:1: bad YAML value (IndexError"),
        (
            DEPLOY + "metadata2: {created: 2024-13-01}\n",
            "s.yaml:1: bad YAML value (ValueError: month must be in 1..12",
        ),
        (DEPLOY + "x: !!timestamp nope\n", "s.yaml:1: bad YAML value (AttributeError"),
        (
            DEPLOY + "x: !!python/object/apply:os.system [true]\n",
            "s.yaml:4:4: YAML syntax error: could not determine a constructor",
        ),
        ("[" * 5000 + "]" * 5000, "s.yaml:1:1001: YAML syntax error: exceeded maximum nesting depth"),
        ('{"kind": "List", "items": [' + "9" * 5000 + "]}", "s.yaml: not valid JSON: Exceeds the limit"),
        ('{"kind": "List", "items": [' * 3000, "s.yaml: JSON document nests too deeply"),
        ('{"kind": "List", "items": [}', "s.yaml: not valid JSON: Expecting value"),
    ],
)
def test_bad_values_are_one_located_error(tmp_path, text, message):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    with pytest.raises(StateError) as err:
        load_snapshot(p)
    assert str(err.value).startswith(f"{p.parent}/{message}"), str(err.value)
    assert "\n" not in str(err.value)


def test_objects_of_the_wrong_kind_are_skipped(tmp_path):
    """`kind` that is not text, `items` that is not a list, documents that are not mappings."""
    p = tmp_path / "s.yaml"
    p.write_text(
        "kind: [Deployment]\n---\nkind: 5\n---\nkind: DeploymentList\nitems: 5\n---\n- a\n- b\n---\n"
        "just text\n---\nkind: List\nitems: [1, [2], {kind: {a: b}}]\n---\n" + DEPLOY
    )
    state = load_snapshot(p)
    assert [o["metadata"]["name"] for o in state.items("Deployment")] == ["d"]


def test_huge_list_of_other_kinds_is_read_and_dropped(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("kind: List\nitems:\n" + "- {kind: ConfigMap, metadata: {name: c}}\n" * 5_000)
    state = load_snapshot(p)
    assert all(not v for v in state.objects.values())


def test_dev_zero_fifo_and_folder(tmp_path, monkeypatch):
    import os

    import archkit.spec.loader as loader
    import archkit.verify.state as state_mod

    monkeypatch.setattr(state_mod, "MAX_STATE_BYTES", 1 << 20)  # the same code path as 256 MiB, less memory
    monkeypatch.setattr(loader, "READ_TIMEOUT_S", 0.3)
    with pytest.raises(
        StateError, match=r"^/dev/zero: file is over the 1048576-byte limit for a snapshot or manifest$"
    ):
        load_snapshot("/dev/zero")
    with pytest.raises(StateError, match="is a folder"):
        load_snapshot(tmp_path)
    fifo = tmp_path / "snap.fifo"
    os.mkfifo(fifo)
    state = load_snapshot(fifo)  # nobody ever writes: an empty snapshot after the timeout, no hang
    assert not any(state.objects.values())


def test_a_bad_manifest_names_its_file_and_line(tmp_path):
    (tmp_path / "a.yaml").write_text(DEPLOY)
    (tmp_path / "b.yaml").write_text("---\n" + DEPLOY + "---\n" + DEPLOY + "spec: {replicas: !!int x}\n")
    with pytest.raises(StateError, match=r"b\.yaml:5: bad YAML value \(ValueError"):
        load_manifests(tmp_path)
    assert load_manifests(INDUSTRIAL / "manifests").items("Deployment")
