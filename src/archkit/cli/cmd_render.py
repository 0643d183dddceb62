"""`archkit render`: diagrams, review page and every other registered artifact of a spec."""

from __future__ import annotations

import json
import sys
import threading
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archkit.cli import app
from archkit.cli.output import diag_line, fail, fail_for

if TYPE_CHECKING:
    from archkit.api import RenderResult
    from archkit.diagnostics import Diagnostic

FORMATS = ("svg", "png")


class ReportFormat(str, Enum):
    text = "text"
    json = "json"


class RenderPhase(str, Enum):
    """The phases a stage may be marked with (`Stage.phase`)."""

    mva = "mva"
    later = "later"


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


class _Progress:
    """One self-overwriting stderr line with elapsed time, only on a terminal, once a render takes > 1 s."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.shown = False
        self.what = "loading the spec"
        self.lock = threading.Lock()
        self.stop = threading.Event()
        if self.tty:  # the renderers run for seconds without reporting: tick the clock meanwhile
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self) -> None:
        while not self.stop.wait(0.25):
            self._draw()

    def _draw(self) -> None:
        elapsed = time.monotonic() - self.start
        if elapsed < 1.0:
            return
        with self.lock:
            if self.stop.is_set():
                return
            sys.stderr.write(f"\r\033[Karchkit: {self.what} … {elapsed:.0f} s")
            sys.stderr.flush()
            self.shown = True

    def __call__(self, name: str, i: int, n: int) -> None:
        self.what = (
            f"rendering diagrams ({i}/{n} done)" if name == "render" else f"generating {name} ({i + 1}/{n})"
        )
        if self.tty:
            self._draw()

    def done(self) -> None:
        with self.lock:
            self.stop.set()
            if self.shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()


@app.command()
def render(
    spec: Annotated[Path, typer.Argument(help="The spec file.", show_default=False)],
    out: Annotated[Path, typer.Option("--output", "-o", help="Output folder.")] = Path("out"),
    only: Annotated[
        list[str] | None,
        typer.Option(help="Only these generators (comma-separated or repeated), e.g. dataflow,review."),
    ] = None,
    image_format: Annotated[
        str, typer.Option("--image-format", help="Image formats: svg, png or svg,png.")
    ] = "svg,png",
    measured: Annotated[
        Path | None,
        typer.Option(help="A load-test report (JSON) whose measured values are shown beside the budgets."),
    ] = None,
    templates: Annotated[
        Path | None, typer.Option(help="A folder of templates (NAME/file.j2) overriding the built-in ones.")
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if OUT is stale.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files archkit did not write.")] = False,
    env: Annotated[str | None, typer.Option(help="Apply this environment's budget overrides.")] = None,
    format: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="Summary as text or json.")
    ] = ReportFormat.text,
    plantuml_jar: Annotated[
        Path | None,
        typer.Option(
            help="The PlantUML jar (else ARCHKIT_PLANTUML_JAR, the user cache, `plantuml` on PATH)."
        ),
    ] = None,
    phase: Annotated[
        RenderPhase | None,
        typer.Option(help="Draw only this phase's stages and services (mva: seed 004 §4.5's MVA)."),
    ] = None,
) -> None:
    """Render the diagrams, the review page and every other artifact of SPEC into OUT.

    Findings of `archkit check` are shown on the review page; exit 1 when the checks find
    errors, files are stale (--check) or refused, or a diagram could not be rendered here
    (everything else is still written); exit 2 when the spec does not load.
    """
    # imported here, not at module top, so that `archkit --help` stays fast
    from archkit import api
    from archkit.diagnostics import Severity
    from archkit.errors import ArchkitError

    formats = tuple(_split([image_format]))
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise fail(
            f"--image-format: unknown image format {', '.join(bad) or image_format!r}; use svg, png or svg,png"
        ) from None
    names = _split(only)
    known = api.generator_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise fail(
            f"--only: no generator {', '.join(map(repr, unknown))}; known: {', '.join(known)}"
        ) from None
    if not spec.is_file():
        raise fail(f"{spec}: no such file") from None
    if templates is not None and not templates.is_dir():
        raise fail(f"--templates: {templates} is not a folder") from None
    measured_data = None
    if measured is not None:
        try:  # capped read; NaN/Infinity, bad JSON, unreadable files and no latencies are one line
            measured_data = api.measured_report(measured)
        except ArchkitError as exc:
            raise fail(f"--measured: {exc}") from None
    progress = _Progress()
    try:
        res = api.render(
            spec,
            out,
            only=names or None,
            formats=formats,
            measured=measured_data,
            templates_dir=templates,
            check=check,
            force=force,
            env=env,
            progress=progress,
            plantuml_jar=plantuml_jar,
            phase=phase.value if phase else None,
        )
    except ArchkitError as exc:  # a renderer failed, an unknown environment, an unsafe output folder
        progress.done()
        raise fail_for(exc) from None
    except Exception as exc:  # noqa: BLE001 - a template error or an unwritable folder: say what, no traceback
        progress.done()
        raise fail(f"{type(exc).__name__}: {exc}", 1) from None
    progress.done()
    w = res.write
    errors = [d for d in res.diagnostics if d.severity is Severity.ERROR]
    if not res.files and errors:  # the spec does not load: an input problem, nothing rendered
        for d in errors:
            typer.echo(diag_line(d), err=True)
        raise fail(f"{spec}: not rendered, the spec does not load", 2) from None
    if format is ReportFormat.json:
        typer.echo(
            json.dumps(
                {
                    "out": str(out),
                    "written": w.written,
                    "unchanged": w.unchanged,
                    "stale": w.stale,
                    "refused": w.refused,
                    "not_rendered": res.skipped,
                    "drawn_instead": res.notes,
                    "errors": [d.as_dict() for d in errors],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        _echo_text(res, spec, out, check, errors)
    raise typer.Exit(0 if w.ok and not res.skipped and not errors else 1)


def _echo_text(res: RenderResult, spec: Path, out: Path, check: bool, errors: list[Diagnostic]) -> None:
    """What a render did, in text: refused, redrawn and unrendered files, the counts, the errors."""
    from archkit.api import INTERNAL_ERROR

    w = res.write
    for rel in w.refused:
        typer.echo(
            f"archkit: refused to overwrite {out / rel}: archkit did not write it (use --force)", err=True
        )
    for rel, why in sorted(res.notes.items()):
        typer.echo(f"archkit: {rel}: {why}", err=True)
    for rel, why in sorted(res.skipped.items()):
        typer.echo(f"archkit: not rendered: {out / rel}: {why}", err=True)
    if check:
        for rel in w.stale:
            typer.echo(f"stale: {out / rel}")
        typer.echo(f"{out}: {len(w.stale)} stale, {len(w.unchanged)} up to date")
    else:
        typer.echo(
            f"{out}: {len(w.written)} written, {len(w.unchanged)} unchanged"
            + (f", {len(w.refused)} refused" if w.refused else "")
            + (f", {len(res.skipped)} not rendered" if res.skipped else "")
        )
    if res.rule_cost is not None:  # the rules' cost: what the Prometheus will record and alert on
        typer.echo(res.rule_cost.line())
    # a rule or a generator that raised (AK199) is named here; the checks' findings are on the page
    for d in errors:
        if d.code == INTERNAL_ERROR:
            typer.echo(diag_line(d), err=True)
    found = [d for d in errors if d.code != INTERNAL_ERROR]
    if found:
        typer.echo(
            f"archkit: {spec}: {len(found)} error(s) found by the checks, shown on the review page "
            f"(details: archkit check {spec})",
            err=True,
        )
