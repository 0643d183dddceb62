"""The real renderers: Graphviz `dot`, PlantUML on a local JVM (one batched call), SVG clean-up.

Generators return diagram *sources* (`*.dot`, `*.puml`); `render_sources` turns all of them
into SVG/PNG in one pass at the end of a render: every PlantUML source of the run goes to
one JVM — `java -jar plantuml.jar -tsvg -o OUT dir/*.puml` for one output format, or a
`-picoweb` server on 127.0.0.1 for this render when SVG and PNG are both wanted (the CLI
takes one format per JVM) — and every DOT source to its own `dot` process, in parallel. Results are cached by source
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
import socket
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

from archkit.generators.toolchain import (
    PLANTUML_VERSION,
    RendererError,
    RendererMissing,
    Tools,
    find_dot,
    find_java,
    find_plantuml_jar,
)
from archkit.process import stop

DIAGRAM_SUFFIXES = (".dot", ".puml")
FORMATS = ("svg", "png")

__all__ = [
    "PLANTUML_VERSION",
    "RendererError",
    "RendererMissing",
    "Tools",
    "find_dot",
    "find_java",
    "find_plantuml_jar",
    "register_fallback",
    "render_sources",
]


def register_fallback(cache: dict, source: str, make_dot: Callable[[], str]) -> None:
    """Offer a Graphviz drawing of a PlantUML `source`, used when PlantUML cannot run here."""
    cache.setdefault("_puml_fallback", {})[_key(".puml", "", source)[2]] = make_dot


# --------------------------------------------------------------------------- locating tools


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


_ID_DEF = re.compile(r'\bid="([^"]+)"')
_ID_USE = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')


def renumber_ids(text: str) -> str:
    """Replace generated element ids (PlantUML derives them from the source text) by `i1`, `i2`, ..."""
    mapping: dict[str, str] = {}
    for old in _ID_DEF.findall(text):
        mapping.setdefault(old, f"i{len(mapping) + 1}")
    if not mapping:
        return text
    return _ID_USE.sub(lambda m: m.group(1) + mapping.get(m.group(2), m.group(2)), text)


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


DOT_TIMEOUT_S = 300.0  # one diagram's layout
# A raster is width x height x 4 bytes in memory before it is compressed: a 301-edge fault tree of a
# fuzzed spec laid out at 8,790 x 15,094 px and took dot 541 MB (issue 28's 512 MiB bound). Graphviz's
# `size` scales a drawing larger than it down (never up): 64 in at 96 dpi is 6,144 px a side, at most
# 38 Mpx (151 MB), beyond any diagram a reader can take in; the SVG keeps every detail.
RASTER_MAX_IN = 64
RASTER_FORMATS = frozenset({"png"})  # the raster `render --image-format` writes


def run_dot(source: str, fmt: str) -> bytes:
    """One `dot -T<fmt>` call; icons referenced as `resources/...` resolve against `diagrams`."""
    root = icon_root()
    try:
        proc = subprocess.run(
            [
                find_dot(),
                f"-T{fmt}",
                *([f"-Gsize={RASTER_MAX_IN},{RASTER_MAX_IN}"] if fmt in RASTER_FORMATS else []),
            ],
            input=source.encode("utf-8"),
            capture_output=True,
            cwd=str(root) if root else None,
            timeout=DOT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        # a layout that never ends is one diagram not rendered, not a failed render
        raise RendererError(
            f"dot -T{fmt} did not finish within {DOT_TIMEOUT_S:g} s "
            f"({source.count(chr(10)):,} lines of DOT): the diagram is too large to lay out"
        ) from None
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0 or "Error" in err:
        raise RendererError(f"dot failed ({proc.returncode}): {err.strip()[:2000]}")
    return proc.stdout


_PUML_ERROR = re.compile(r"Error line (\d+) in file: (\S+)")


class DiagramErrors(RendererError):
    """Some diagrams of a batch failed: `images` holds the others, `failed` why each failed one did.

    Keys are those of the batch's result (a source name, or (name, format) for the server).
    A render that degrades lists the failed ones as not rendered and writes everything else.
    """

    def __init__(self, message: str, images: dict[Any, bytes], failed: dict[Any, str]):
        super().__init__(message)
        self.images, self.failed = images, failed


def run_plantuml(sources: dict[str, str], fmt: str, jar: Path | None = None) -> dict[str, bytes]:
    """Render every PlantUML source with ONE JVM; name -> image. Raises on any diagram error."""
    if not sources:
        return {}
    java, jar = find_java(), find_plantuml_jar(jar)
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
        cmd = [
            java,
            "-Djava.awt.headless=true",
            "-Dfile.encoding=UTF-8",
            "-DPLANTUML_LIMIT_SIZE=32768",
            "-jar",
            str(jar),
            f"-t{fmt}",
            "-nometadata",
            "-charset",
            "UTF-8",
            "-o",
            str(out_dir),
            *files,
        ]
        proc = subprocess.run(cmd, capture_output=True, timeout=600, cwd=tmp, check=False)
        err = proc.stderr.decode("utf-8", "replace") + proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 0:
            bad = []
            for line, fname in _PUML_ERROR.findall(err):
                idx = int(Path(fname).stem[1:]) if Path(fname).stem[1:].isdigit() else -1
                bad.append(f"{names[idx] if 0 <= idx < len(names) else fname}: line {line}")
            detail = "; ".join(bad) or err.strip()[:2000]
            message = f"PlantUML reported errors ({proc.returncode}): {detail}"
            failed = {
                names[int(Path(f).stem[1:])]: f"PlantUML: line {line}: syntax error"
                for line, f in _PUML_ERROR.findall(err)
                if Path(f).stem[1:].isdigit() and int(Path(f).stem[1:]) < len(names)
            }
            if not failed:  # nothing names the culprit: the whole batch failed
                raise RendererError(message)
            images = {
                name: (out_dir / f"d{i:05d}.{fmt}").read_bytes()
                for i, name in enumerate(names)
                if name not in failed and (out_dir / f"d{i:05d}.{fmt}").is_file()
            }
            raise DiagramErrors(message, images, failed)
        out: dict[str, bytes] = {}
        for i, name in enumerate(names):
            img = out_dir / f"d{i:05d}.{fmt}"
            if not img.is_file():
                raise RendererError(f"PlantUML wrote no {fmt} for {name}: {err.strip()[:500]}")
            out[name] = img.read_bytes()
    return out


# PlantUML's text encoding for diagram URLs: raw deflate, then base64 over its own alphabet
_PUML_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"


def plantuml_url_encode(text: str) -> str:
    data = zlib.compress(text.encode("utf-8"), 9)[2:-4]
    out = []
    for i in range(0, len(data), 3):
        b1, b2, b3 = (data[i : i + 3] + b"\0\0")[:3]
        out += [
            _PUML_ALPHABET[b1 >> 2],
            _PUML_ALPHABET[((b1 & 3) << 4) | (b2 >> 4)],
            _PUML_ALPHABET[((b2 & 15) << 2) | (b3 >> 6)],
            _PUML_ALPHABET[b3 & 63],
        ]
    return "".join(out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_plantuml_server(
    sources: dict[str, str], formats: tuple[str, ...], jar: Path | None = None
) -> dict[tuple[str, str], bytes]:
    """Render every source in every format with ONE JVM: a PlantUML server on 127.0.0.1 for this call.

    The CLI takes one output format per JVM; for SVG and PNG together a local `-picoweb`
    server answers both. Errors come back as HTTP 400 with `X-PlantUML-Diagram-Error`.
    """
    if not sources:
        return {}
    java, jar = find_java(), find_plantuml_jar(jar)
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finally; output to a file: a full pipe would stall the JVM
    proc, port = None, 0
    try:
        for attempt in range(3):  # the free port may be taken before the JVM binds it: try another
            port = _free_port()
            proc = subprocess.Popen(
                [
                    java,
                    "-Djava.awt.headless=true",
                    "-Dfile.encoding=UTF-8",
                    "-DPLANTUML_LIMIT_SIZE=32768",
                    "-jar",
                    str(jar),
                    f"-picoweb:{port}:127.0.0.1",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
            if _wait_listening(proc, port, log, last=attempt == 2):
                break

        def fetch(job: tuple[str, str]) -> bytes | str:
            """The image, or why PlantUML refused the diagram."""
            name, fmt = job
            url = f"http://127.0.0.1:{port}/plantuml/{fmt}/{plantuml_url_encode(sources[name])}"
            try:
                with urllib.request.urlopen(url, timeout=300) as resp:
                    error = resp.headers.get("X-PlantUML-Diagram-Error")
                    line = resp.headers.get("X-PlantUML-Diagram-Error-Line")
                    data = resp.read()
            except urllib.error.HTTPError as exc:
                error = exc.headers.get("X-PlantUML-Diagram-Error") or f"HTTP {exc.code}"
                line = exc.headers.get("X-PlantUML-Diagram-Error-Line")
                data = b""
            if error:  # errors still draw an image; the header is the only reliable signal
                return f"PlantUML: line {line or '?'}: {error}"
            return data

        jobs = [(name, fmt) for name in sorted(sources) for fmt in formats]
        with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
            results = dict(zip(jobs, pool.map(fetch, jobs), strict=True))
        images = {job: r for job, r in results.items() if isinstance(r, bytes)}
        failed = {job: r for job, r in results.items() if isinstance(r, str)}
        if failed:
            detail = "; ".join(
                f"{name}: {why.removeprefix('PlantUML: ')}" for (name, _f), why in sorted(failed.items())
            )
            raise DiagramErrors(f"PlantUML reported errors: {detail}", images, failed)
        return images
    finally:
        if proc is not None:
            stop(proc, timeout=10)
        log.close()


def _wait_listening(proc: subprocess.Popen, port: int, log, last: bool) -> bool:
    """True once the server accepts connections; False (or, on the last try, an error) if it exited."""
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            if not last:
                return False
            log.seek(0)
            err = log.read().decode("utf-8", "replace")
            raise RendererError(f"the PlantUML server exited ({proc.returncode}): {err.strip()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            if time.monotonic() > deadline:
                raise RendererError("the PlantUML server did not start within 60 s") from None
            time.sleep(0.05)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def strip_png_text(data: bytes) -> bytes:
    """Drop tEXt/zTXt/iTXt/tIME chunks: PlantUML's server embeds the diagram source and a banner there."""
    if not data.startswith(_PNG_SIGNATURE):
        return data
    out, i = [_PNG_SIGNATURE], len(_PNG_SIGNATURE)
    while i + 8 <= len(data):
        (length,) = struct.unpack(">I", data[i : i + 4])
        kind = data[i + 4 : i + 8]
        end = i + 12 + length
        if kind not in (b"tEXt", b"zTXt", b"iTXt", b"tIME"):
            out.append(data[i:end])
        i = end
    return b"".join(out)


def _finish(kind: str, fmt: str, data: bytes) -> bytes:
    if fmt == "png":
        return strip_png_text(data)
    if fmt != "svg":
        return data
    if kind == ".dot":
        return clean_svg(data, icon_root()).encode("utf-8")
    return renumber_ids(clean_svg(data)).encode("utf-8")


def _key(kind: str, fmt: str, source: str) -> tuple[str, str, str]:
    return (kind, fmt, hashlib.sha256(source.encode("utf-8")).hexdigest())


def _out_name(rel: str, fmt: str) -> str:
    return f"{rel[: -len(Path(rel).suffix)]}.{fmt}"


def _missing(find: Callable[[], object]) -> str | None:
    try:
        find()
    except RendererMissing as exc:
        return str(exc)
    return None


def render_sources(
    files: dict[str, str | bytes],
    formats: tuple[str, ...] = ("svg",),
    cache: dict | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, bytes]:
    """Render every `.dot`/`.puml` in `files`: returns {`name.svg`/`name.png`: bytes}.

    One JVM per PlantUML output format, `dot` calls in parallel with it. `cache` (a dict kept
    in the render context) maps source hashes to results, so repeated calls are free.

    `cache["_tools"]` (a `Tools`) names the jar and, with `degrade`, turns a missing renderer
    into entries of `Tools.unrendered` instead of an error; a PlantUML source with a
    registered Graphviz fallback (`register_fallback`) is then drawn by `dot` instead.
    """
    formats = tuple(f for f in FORMATS if f in formats)
    cache = cache if cache is not None else {}
    store: dict = cache.setdefault("_renderers", {})
    tools: Tools = cache.get("_tools") or Tools()
    todo_puml: dict[str, dict[str, tuple[str, str]]] = {f: {} for f in formats}
    todo_dot: list[tuple[str, str, str]] = []  # (format, source, file name)
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
                todo_dot.append((fmt, src, rel))
    puml_missing = dot_missing = None
    if tools.degrade and any(todo_puml.values()):
        puml_missing = _missing(find_java) or _missing(lambda: find_plantuml_jar(tools.jar))
    # PlantUML sources drawn by Graphviz instead: (format, puml hash) -> (file name, DOT source)
    fallback_dot: dict[tuple[str, str], tuple[str, str]] = {}
    if puml_missing:
        offers = cache.get("_puml_fallback", {})
        for fmt in formats:
            for h, (rel, _src) in sorted(todo_puml[fmt].items()):
                if h in offers:
                    fallback_dot[(fmt, h)] = (rel, offers[h]())
                    tools.notes[rel] = f"drawn by Graphviz instead of PlantUML: {puml_missing}"
                else:
                    tools.unrendered[_out_name(rel, fmt)] = puml_missing
            todo_puml[fmt] = {}
    if tools.degrade and (todo_dot or fallback_dot):
        dot_missing = _missing(find_dot)
    if dot_missing:
        for fmt, _src, rel in todo_dot:
            tools.unrendered[_out_name(rel, fmt)] = dot_missing
        for (fmt, _h), (rel, _dot) in fallback_dot.items():
            tools.unrendered[_out_name(rel, fmt)] = f"{puml_missing}; and {dot_missing}"
            tools.notes.pop(rel, None)
        todo_dot, fallback_dot = [], {}
    total = len(todo_dot) + len(fallback_dot) + min(1, sum(1 for f in formats if todo_puml[f]))
    done = 0
    if total:
        if progress:
            progress("render", 0, total)
        with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
            jobs = {}
            puml_formats = [f for f in formats if todo_puml[f]]
            if len(puml_formats) > 1:  # one JVM for all formats: a local server for this render
                named = {rel: src for f in puml_formats for rel, src in todo_puml[f].values()}
                jobs[pool.submit(run_plantuml_server, named, tuple(puml_formats), tools.jar)] = (
                    ".puml",
                    "*",
                    None,
                )
            for fmt in puml_formats if len(puml_formats) == 1 else ():
                named = {rel: src for rel, src in todo_puml[fmt].values()}
                jobs[pool.submit(run_plantuml, named, fmt, tools.jar)] = (".puml", fmt, None)
            seen: set = set()
            for fmt, src, _rel in todo_dot:
                key = _key(".dot", fmt, src)
                if key not in seen:
                    seen.add(key)
                    jobs[pool.submit(run_dot, src, fmt)] = (".dot", fmt, key)
            for (fmt, h), (_rel, dot_src) in sorted(fallback_dot.items()):
                jobs[pool.submit(run_dot, dot_src, fmt)] = ("fallback", fmt, (".puml", fmt, h))
            for fut, (kind, fmt, key) in jobs.items():
                try:
                    result = fut.result()
                except DiagramErrors as exc:  # one bad diagram does not cost the others
                    if not tools.degrade:
                        raise
                    result = exc.images
                    for k, why in exc.failed.items():
                        rel, f = k if isinstance(k, tuple) else (k, fmt)
                        tools.unrendered[_out_name(rel, f)] = why
                except RendererError as exc:
                    if not tools.degrade or kind == ".puml":
                        raise
                    for f, s, rel in todo_dot if kind == ".dot" else ():
                        if _key(".dot", f, s) == key:
                            tools.unrendered[_out_name(rel, f)] = str(exc)
                    if kind == "fallback":
                        for (f, h), (rel, _d) in fallback_dot.items():
                            if (".puml", f, h) == key:
                                tools.unrendered[_out_name(rel, f)] = str(exc)
                    continue
                if kind == ".puml" and fmt == "*":
                    for f in puml_formats:
                        for h, (rel, _src) in todo_puml[f].items():
                            if (rel, f) in result:
                                store[(".puml", f, h)] = _finish(kind, f, result[(rel, f)])
                elif kind == ".puml":
                    for h, (rel, _src) in todo_puml[fmt].items():
                        if rel in result:
                            store[(".puml", fmt, h)] = _finish(kind, fmt, result[rel])
                else:
                    store[key] = _finish(".dot", fmt, result)
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
            key = _key(suffix, fmt, src)
            if key in store:
                out[f"{stem}.{fmt}"] = store[key]
    return out


def placeholder_svg(title: str, why: str) -> bytes:
    """A small SVG that says a diagram was not rendered, and why (shown on the review page)."""
    from html import escape

    lines = [title, *(why[i : i + 90] for i in range(0, min(len(why), 450), 90))]
    texts = "".join(
        f'<text x="12" y="{24 + 18 * i}" font-family="sans-serif" font-size="{13 if i == 0 else 11}"'
        f"{' font-weight=' + chr(34) + 'bold' + chr(34) if i == 0 else ''}>{escape(line)}</text>"
        for i, line in enumerate(lines)
    )
    height = 24 + 18 * len(lines)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="680" height="{height}" viewBox="0 0 680 {height}">'
        f'<rect x="1" y="1" width="678" height="{height - 2}" fill="#fef2f2" stroke="#b91c1c" '
        f'stroke-dasharray="6 3"/>{texts}</svg>\n'
    ).encode()


def with_placeholders(
    rendered: dict[str, bytes], sources: dict[str, str | bytes], cache: dict
) -> dict[str, bytes]:
    """`rendered` plus a placeholder SVG for every source whose SVG could not be rendered here."""
    tools: Tools = cache.get("_tools") or Tools()
    out = dict(rendered)
    for rel in sorted(sources):
        if Path(rel).suffix in DIAGRAM_SUFFIXES and _out_name(rel, "svg") not in out:
            why = tools.unrendered.get(_out_name(rel, "svg"), "its renderer is not available here")
            out[_out_name(rel, "svg")] = placeholder_svg(f"{rel}: not rendered", why)
    return out


def stand_in_dot(cache: dict, name: str, why: str, exc: BaseException) -> str:
    """A DOT source that says diagram `name` could not be made here (when degrading; else re-raise `exc`).

    Used when the diagram's *source* needs something missing (the `diagrams` package for the
    topology): the review page and the file pass still get a diagram that names the fix, and
    the render lists `NAME.svg` as not rendered, so it exits 1.
    """
    tools: Tools | None = cache.get("_tools")
    if tools is None or not tools.degrade:
        raise exc
    tools.unrendered[f"{name}.svg"] = why
    label = why.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"digraph {name} {{\n"
        f'  missing [shape=box, style=dashed, color="#b91c1c", fontname="DejaVu Sans", '
        f'label="{name}: not drawn\\n{label}"];\n}}\n'
    )
