"""Shared fixtures: repository paths, golden-file comparison with --update-golden."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

ROOT = Path(__file__).resolve().parents[1]

# `--hypothesis-profile=fuzz` (make fuzz): the long fuzzing run of tests/fuzz, 100,000 inputs
# without shrinking; other tests keep their own example counts.
settings.register_profile(
    "fuzz",
    max_examples=100_000,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
REFERENCE_SPECS = sorted((ROOT / "specs").glob("*.yaml"))
OCR_SPEC = ROOT / "specs" / "ocr-reference.yaml"  # the Triton reference; OCR_SPEC sorts after llm-reference
ARTIFACTS = ROOT / "tests" / "artifacts"


# What the live and renderer tests need. On a developer machine a missing piece makes its tests
# skip with a reason; in CI (CI set) it is an error, so a green run never hides a skipped suite.
REQUIRED_IN_CI = {
    "reference_service/.venv/bin/python": "make reference-venv",
    ".cache/plantuml/plantuml-1.2026.8.jar": "make setup (PlantUML jar)",
}
REQUIRED_TOOLS_IN_CI = ["dot", "java", "promtool", "prometheus", "chromium", "redis-server", "tesseract"]


def pytest_sessionstart(session):
    if not os.environ.get("CI"):
        return
    import shutil

    missing = [f"{path} ({how})" for path, how in REQUIRED_IN_CI.items() if not (ROOT / path).exists()]
    missing += [tool for tool in REQUIRED_TOOLS_IN_CI if shutil.which(tool) is None]
    if missing:
        raise pytest.UsageError("CI is missing what the tests need: " + ", ".join(missing))


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing",
    )


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden"))


class Golden:
    """Compare text with a golden file; print a diff and the command that updates it."""

    def __init__(self, update: bool):
        self.update = update

    def check(self, path: Path, actual: str | bytes) -> None:
        path = Path(path)
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(actual.encode("utf-8") if isinstance(actual, str) else actual)
            return
        assert path.exists(), (
            f"golden file {path.relative_to(ROOT)} is missing; "
            "create it with: .venv/bin/pytest --update-golden "
            + os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        )
        expected = path.read_bytes()
        got = actual.encode("utf-8") if isinstance(actual, str) else actual
        if expected != got:
            try:
                diff = "".join(
                    difflib.unified_diff(
                        expected.decode().splitlines(True),
                        got.decode().splitlines(True),
                        str(path.relative_to(ROOT)),
                        "actual",
                        n=2,
                    )
                )
            except UnicodeDecodeError:
                diff = f"binary files differ ({len(expected)} vs {len(got)} bytes)"
            pytest.fail(
                f"{path.relative_to(ROOT)} differs from the output:\n{diff[:6000]}\n"
                "If the change is intended, update with: .venv/bin/pytest --update-golden "
                + os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
            )

    def check_tree(self, folder: Path, files: dict[str, str | bytes]) -> None:
        """Golden comparison of a whole tree: fails on missing or extra files too."""
        folder = Path(folder)
        if self.update:
            if folder.exists():
                for p in sorted(folder.rglob("*"), reverse=True):
                    if p.is_file():
                        p.unlink()
            for rel, content in files.items():
                self.check(folder / rel, content)
            return
        have = (
            {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
            if folder.exists()
            else set()
        )
        missing, extra = sorted(set(files) - have), sorted(have - set(files))
        assert not missing and not extra, (
            f"golden tree {folder.relative_to(ROOT)}: missing {missing}, extra {extra}; "
            "update with: .venv/bin/pytest --update-golden"
        )
        for rel in sorted(files):
            self.check(folder / rel, files[rel])


@pytest.fixture
def golden(update_golden) -> Golden:
    return Golden(update_golden)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(autouse=True)
def _servers_only_in_live_tests(request, monkeypatch):
    """Under pytest-xdist (`make test` runs the tests not marked `live` on every core) a test that
    binds a fixed port must be marked `live`: live tests run one at a time, after the others, so
    their ports and measured times never compete with a parallel test. Port 0 (the kernel picks
    a free one, as archkit's PlantUML server does for every render) is allowed."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or request.node.get_closest_marker("live"):
        yield
        return
    import socket

    bind = socket.socket.bind

    def guarded(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[1] != 0:
            raise AssertionError(f"{request.node.nodeid} binds port {address[1]}: mark it pytest.mark.live")
        return bind(sock, address)

    monkeypatch.setattr(socket.socket, "bind", guarded)
    yield


@pytest.fixture(autouse=True)
def _fresh_fault_tree_memo():
    """Each test starts with `faulttree.analyse` remembering nothing: a test that patches the
    engine must see it run, and no test may pass on an answer an earlier test left behind."""
    from archkit import faulttree

    faulttree.clear_memo()
    yield
