"""The real renderers: Graphviz `dot`, PlantUML on a local JVM (one batched call), SVG clean-up.

Generators return diagram *sources* (`*.dot`, `*.puml`); `render_sources` turns all of them
into SVG/PNG in one pass at the end of a render: every PlantUML source of the run goes to
one JVM (`java -jar plantuml.jar -tsvg -o OUT dir/*.puml`, per output format), every DOT
source to its own `dot` process, in parallel with the JVM. Results are cached by source
hash in the render context, so the review page and the file pass share one rendering.

Output is made byte-stable and self-contained: comments, processing instructions and the
DOCTYPE are dropped (PlantUML embeds its version, Graphviz its version and user ids), and
raster images that `diagrams` references by path are inlined as data URIs.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

DIAGRAM_SUFFIXES = (".dot", ".puml")
FORMATS = ("svg", "png")
PLANTUML_VERSION = "1.2026.8"


class RendererError(RuntimeError):
    """A renderer is missing or reported an error for a diagram."""


# --------------------------------------------------------------------------- locating tools

def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def find_plantuml_jar() -> Path:
    """`ARCHKIT_PLANTUML_JAR`, else the pinned jar in the repo's `.cache/plantuml/`."""
    env = os.environ.get("ARCHKIT_PLANTUML_JAR")
    if env and Path(env).is_file():
        return Path(env)
    for base in (Path.cwd(), repo_root()):
        pinned = base / ".cache" / "plantuml" / f"plantuml-{PLANTUML_VERSION}.jar"
        if pinned.is_file():
            return pinned
        found = sorted((base / ".cache" / "plantuml").glob("plantuml-*.jar"))
        if found:
            return found[-1]
    where = f"ARCHKIT_PLANTUML_JAR={env} does not exist; " if env else ""
    raise RendererError(f"{where}no PlantUML jar found: run `make .cache/plantuml/plantuml-{PLANTUML_VERSION}.jar` "
                        "or set ARCHKIT_PLANTUML_JAR")


def find_java() -> str:
    java = shutil.which("java")
    if not java:
        raise RendererError("no Java runtime on PATH: PlantUML needs one (Debian: default-jre-headless)")
    return java


def find_dot() -> str:
    dot = shutil.which("dot")
    if not dot:
        raise RendererError("Graphviz `dot` is not on PATH (Debian: graphviz)")
    return dot


@lru_cache(maxsize=1)
def icon_root() -> Path | None:
    """The folder that holds `diagrams`' `resources/` icons (its wheel ships them top-level)."""
    try:
        import diagrams
    except ImportError:
        return None
    root = Path(diagrams.__file__).resolve().parent.parent
    return root if (root / "resources").is_dir() else None


# --------------------------------------------------------------------------- SVG clean-up

_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)
_PI = re.compile(r"<\?(?!xml )[^>]*\?>")
_DOCTYPE = re.compile(r"<!DOCTYPE[^>\[]*(\[[^\]]*\])?\s*>\s*", re.DOTALL)
_IMAGE_HREF = re.compile(r'((?:xlink:)?href)="([^"#][^"]*?\.png)"')


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def clean_svg(svg: str | bytes, base: Path | None = None) -> str:
    """Drop comments, processing instructions and DOCTYPE; inline referenced PNGs as data URIs.

    Image references are resolved under `base` only (never an arbitrary path), and one that
    cannot be resolved is removed rather than left pointing at this machine.
    """
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    text = _COMMENT.sub("", text)
    text = _PI.sub("", text)
    text = _DOCTYPE.sub("", text)

    def inline(m: re.Match) -> str:
        ref = m.group(2)
        if ref.startswith("data:"):
            return m.group(0)
        if base is not None:
            cand = (base / ref).resolve()
            if cand.is_file() and base.resolve() in cand.parents:
                return f'{m.group(1)}="{_data_uri(cand)}"'
        return f'{m.group(1)}=""'

    text = _IMAGE_HREF.sub(inline, text)
    return text if text.endswith("\n") else text + "\n"


# --------------------------------------------------------------------------- running renderers

def run_dot(source: str, fmt: str) -> bytes:
    """One `dot -T<fmt>` call; icons referenced as `resources/...` resolve against `diagrams`."""
    root = icon_root()
    proc = subprocess.run([find_dot(), f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True,
                          cwd=str(root) if root else None, timeout=300, check=False)
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0 or "Error" in err:
        raise RendererError(f"dot failed ({proc.returncode}): {err.strip()[:2000]}")
    return proc.stdout


_PUML_ERROR = re.compile(r"Error line (\d+) in file: (\S+)")


def run_plantuml(sources: dict[str, str], fmt: str) -> dict[str, bytes]:
    """Render every PlantUML source with ONE JVM; name -> image. Raises on any diagram error."""
    if not sources:
        return {}
    java, jar = find_java(), find_plantuml_jar()
    with tempfile.TemporaryDirectory(prefix="archkit-puml-") as tmp:
        src_dir, out_dir = Path(tmp, "src"), Path(tmp, "out")
        src_dir.mkdir()
        names = sorted(sources)
        files = []
        for i, name in enumerate(names):
            p = src_dir / f"d{i:05d}.puml"
            p.write_text(sources[name], encoding="utf-8")
            files.append(str(p))
        # PLANTUML_LIMIT_SIZE: PNGs are cropped at 4096 px by default, too small for large specs
        cmd = [java, "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8", "-DPLANTUML_LIMIT_SIZE=32768",
               "-jar", str(jar),
               f"-t{fmt}", "-nometadata", "-charset", "UTF-8", "-o", str(out_dir), *files]
        proc = subprocess.run(cmd, capture_output=True, timeout=600, cwd=tmp, check=False)
        err = proc.stderr.decode("utf-8", "replace") + proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 0:
            bad = []
            for line, fname in _PUML_ERROR.findall(err):
                idx = int(Path(fname).stem[1:]) if Path(fname).stem[1:].isdigit() else -1
                bad.append(f"{names[idx] if 0 <= idx < len(names) else fname}: line {line}")
            detail = "; ".join(bad) or err.strip()[:2000]
            raise RendererError(f"PlantUML reported errors ({proc.returncode}): {detail}")
        out: dict[str, bytes] = {}
        for i, name in enumerate(names):
            img = out_dir / f"d{i:05d}.{fmt}"
            if not img.is_file():
                raise RendererError(f"PlantUML wrote no {fmt} for {name}: {err.strip()[:500]}")
            out[name] = img.read_bytes()
    return out


def _finish(kind: str, fmt: str, data: bytes) -> bytes:
    if fmt != "svg":
        return data
    base = icon_root() if kind == ".dot" else None
    return clean_svg(data, base).encode("utf-8")


def _key(kind: str, fmt: str, source: str) -> tuple[str, str, str]:
    return (kind, fmt, hashlib.sha256(source.encode("utf-8")).hexdigest())


def render_sources(files: dict[str, str | bytes], formats: tuple[str, ...] = ("svg",),
                   cache: dict | None = None,
                   progress: Callable[[str, int, int], None] | None = None) -> dict[str, bytes]:
    """Render every `.dot`/`.puml` in `files`: returns {`name.svg`/`name.png`: bytes}.

    One JVM per PlantUML output format, `dot` calls in parallel with it. `cache` (a dict kept
    in the render context) maps source hashes to results, so repeated calls are free.
    """
    formats = tuple(f for f in FORMATS if f in formats)
    cache = cache if cache is not None else {}
    store: dict = cache.setdefault("_renderers", {})
    todo_puml: dict[str, dict[str, tuple[str, str]]] = {f: {} for f in formats}
    todo_dot: list[tuple[str, str]] = []
    for rel in sorted(files):
        suffix = Path(rel).suffix
        if suffix not in DIAGRAM_SUFFIXES:
            continue
        src = files[rel]
        src = src.decode("utf-8") if isinstance(src, bytes) else src
        for fmt in formats:
            key = _key(suffix, fmt, src)
            if key in store:
                continue
            if suffix == ".puml":
                todo_puml[fmt].setdefault(key[2], (rel, src))
            else:
                todo_dot.append((fmt, src))
    total = len(todo_dot) + sum(1 for f in formats if todo_puml[f])
    done = 0
    if total:
        with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
            jobs = {}
            for fmt in formats:
                if todo_puml[fmt]:
                    named = {rel: src for rel, src in todo_puml[fmt].values()}
                    jobs[pool.submit(run_plantuml, named, fmt)] = (".puml", fmt, None)
            seen: set = set()
            for fmt, src in todo_dot:
                key = _key(".dot", fmt, src)
                if key not in seen:
                    seen.add(key)
                    jobs[pool.submit(run_dot, src, fmt)] = (".dot", fmt, key)
            for fut, (kind, fmt, key) in jobs.items():
                result = fut.result()
                if kind == ".puml":
                    for h, (rel, _src) in todo_puml[fmt].items():
                        store[(".puml", fmt, h)] = _finish(kind, fmt, result[rel])
                else:
                    store[key] = _finish(kind, fmt, result)
                done += 1
                if progress:
                    progress("render", done, total)
    out: dict[str, bytes] = {}
    for rel in sorted(files):
        suffix = Path(rel).suffix
        if suffix not in DIAGRAM_SUFFIXES:
            continue
        src = files[rel]
        src = src.decode("utf-8") if isinstance(src, bytes) else src
        stem = rel[: -len(suffix)]
        for fmt in formats:
            out[f"{stem}.{fmt}"] = store[_key(suffix, fmt, src)]
    return out
