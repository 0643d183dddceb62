"""The safe tree writer: atomic files, a manifest that survives failures, no symlinks, no foreign manifest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from archkit.errors import OutputError
from archkit.render import tree
from archkit.render.tree import MANIFEST, write_tree


def _manifest(out: Path) -> dict:
    return json.loads((out / MANIFEST).read_text(encoding="utf-8"))


def test_writes_then_refuses_a_users_edit_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert write_tree(out, {"a.txt": "1", "d/b.txt": "2"}).written == ["a.txt", "d/b.txt"]
    assert write_tree(out, {"a.txt": "1", "d/b.txt": "2"}).unchanged == ["a.txt", "d/b.txt"]
    (out / "a.txt").write_text("mine", encoding="utf-8")
    res = write_tree(out, {"a.txt": "3"})
    assert res.refused == ["a.txt"] and (out / "a.txt").read_text(encoding="utf-8") == "mine"
    assert write_tree(out, {"a.txt": "3"}, force=True).written == ["a.txt"]


def test_a_symlink_inside_the_output_folder_is_refused_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "runbooks")
    with pytest.raises(OutputError, match="symbolic link"):
        write_tree(out, {"index.md": "x", "runbooks/tree.md": "y"})
    assert list(outside.iterdir()) == []
    assert not (out / "index.md").exists()  # every path is checked before the first write


def test_a_symlinked_file_is_refused_even_with_force(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(target, out / "a.txt")
    with pytest.raises(OutputError, match="symbolic link"):
        write_tree(out, {"a.txt": "x"}, force=True)
    assert target.read_text(encoding="utf-8") == "keep"


@pytest.mark.parametrize(
    "foreign", ['{"name": "my-app", "version": 2}', "not json at all", '["a", "b"]', '{"a.txt": "nothex"}']
)
def test_a_foreign_manifest_is_never_overwritten(tmp_path: Path, foreign: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).write_text(foreign, encoding="utf-8")
    with pytest.raises(OutputError, match="manifest"):
        write_tree(out, {"a.txt": "x"})
    assert (out / MANIFEST).read_text(encoding="utf-8") == foreign
    assert not (out / "a.txt").exists()


def test_the_flat_manifest_of_earlier_versions_is_read(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("old", encoding="utf-8")
    (out / MANIFEST).write_text(json.dumps({"a.txt": tree._sha(b"old")}), encoding="utf-8")
    assert write_tree(out, {"a.txt": "new"}).written == ["a.txt"]
    assert _manifest(out)["format"] == tree.MANIFEST_FORMAT


def test_a_write_error_part_way_keeps_the_written_files_in_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "b").write_text("a user's file where a folder is needed", encoding="utf-8")
    with pytest.raises(OSError):
        write_tree(out, {"a.txt": "x", "b/c.txt": "y"})
    assert _manifest(out)["files"].keys() == {"a.txt"}
    (out / "b").unlink()
    res = write_tree(out, {"a.txt": "x2", "b/c.txt": "y"})  # a.txt is archkit's: not refused
    assert res.written == ["a.txt", "b/c.txt"] and not res.refused


def test_a_run_killed_before_its_last_manifest_write_is_recovered(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a.txt": "1", "b.txt": "1"})
    real = tree.write_atomic

    def dies_on_the_final_manifest(path, data) -> None:
        if Path(path).name == MANIFEST and b'"pending"' not in (
            data if isinstance(data, bytes) else data.encode()
        ):
            raise KeyboardInterrupt  # stands in for kill -9: nothing after it runs
        real(path, data)

    monkeypatch.setattr(tree, "write_atomic", dies_on_the_final_manifest)
    with pytest.raises(KeyboardInterrupt):
        write_tree(out, {"a.txt": "2", "b.txt": "2"})
    monkeypatch.setattr(tree, "write_atomic", real)
    assert (out / "a.txt").read_text(encoding="utf-8") == "2"
    assert set(_manifest(out)["pending"]) == {"a.txt", "b.txt"}
    res = write_tree(out, {"a.txt": "3", "b.txt": "3"})
    assert res.written == ["a.txt", "b.txt"] and not res.refused
    assert "pending" not in _manifest(out)


def test_paths_that_leave_the_folder_are_refused(tmp_path: Path) -> None:
    for rel in ("../x.txt", "/etc/x", "a/../../x"):
        with pytest.raises(OutputError, match="escapes"):
            write_tree(tmp_path / "out", {rel: "x"})


def test_check_mode_writes_nothing_and_lists_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(out, {"a.txt": "1", "old.txt": "1"})
    res = write_tree(out, {"a.txt": "2"}, check=True)
    assert res.stale == ["a.txt", "old.txt"] and (out / "a.txt").read_text(encoding="utf-8") == "1"
