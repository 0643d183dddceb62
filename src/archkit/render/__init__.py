"""Render orchestration: the generators in memory, their sources through the renderers, files written safely.

`generate` runs the selected generators on one run's context (check findings and plans
computed once, `archkit.plans.RunContext`) and renders every `.dot`/`.puml` source in one
pass; `render` loads a spec, generates and writes the tree with the safe writer
(`archkit.render.tree`: atomic files, a manifest, no symlinks followed, a user's file never
overwritten).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archkit.checks.registry import internal_error
from archkit.diagnostics import Diagnostic
from archkit.errors import ArchkitError, InputError, SpecLoadError, UnknownNameError
from archkit.isolation import ANY, Failure, isolated
from archkit.plans.context import RunContext, prepare, with_environment
from archkit.plans.slo import RuleCost, rule_cost
from archkit.render.tree import WriteResult, write_tree
from archkit.spec import Spec
from archkit.spec.phase import Phase

# what `render --phase` draws: the diagrams of stages and services (the other outputs plan a
# whole deployment: alerts, load tests and runbooks of a part would be a different design)
PHASE_GENERATORS = ("dataflow", "topology")

if TYPE_CHECKING:
    from archkit.generators import RenderContext
    from archkit.generators.renderers import Tools

Progress = Callable[[str, int, int], None]
Files = dict[str, str | bytes]


@dataclass
class RenderResult:
    """Files a render produced and what writing them did."""

    files: Files
    write: WriteResult
    diagnostics: list[Diagnostic]
    skipped: dict[str, str] = field(default_factory=dict)  # file not rendered -> why, and the fix
    notes: dict[str, str] = field(default_factory=dict)  # source drawn another way -> how and why
    rule_cost: RuleCost | None = None  # the Prometheus rules' cost, when they were generated


def generate(
    spec: Spec,
    spec_path: str = "<spec>",
    only: list[str] | None = None,
    formats: tuple[str, ...] = ("svg",),
    measured: dict[str, Any] | None = None,
    templates_dir: Path | None = None,
    env: str | None = None,
    progress: Progress | None = None,
    tools: Tools | None = None,
    run: RunContext | None = None,
    strict: bool = False,
) -> tuple[Files, list[Diagnostic]]:
    """Run the selected generators in memory; returns {relative path: content} and findings.

    `tools` (an `archkit.generators.renderers.Tools`) names the PlantUML jar and, with
    `degrade`, collects diagrams that could not be rendered here instead of raising.
    `run` (from `prepare`) shares that run's check findings and plans; without it the spec,
    with `env` applied, gets its own. Raises UnknownNameError (a generator that does not
    exist) and UnknownEnvironmentError. A generator that raises becomes an AK199 finding and the
    others still run, unless `strict` (a caller that needs that generator's output) re-raises.
    """
    from archkit.generators import RenderContext, all_generators

    gens = all_generators()
    unknown = [n for n in (only or []) if n not in gens]
    if unknown:
        raise UnknownNameError("generator", unknown, list(gens))
    if run is None:
        run = RunContext(with_environment(spec, spec_path, env), spec_path, env)
    ctx = RenderContext(
        spec=run.spec,
        spec_path=spec_path,
        diagnostics=run.diagnostics,
        measured=measured,
        formats=formats,
        templates_dir=templates_dir,
        env=env,
        progress=progress,
        run=run,
    )
    if tools is not None:
        ctx.cache["_tools"] = tools
    files: Files = {}
    diagnostics = list(run.diagnostics)
    selected = [g for name, g in gens.items() if not only or name in only]
    for i, gen in enumerate(selected):
        if progress:
            progress(gen.name, i, len(selected))
        # memoised per context, so a generator that embeds another's output (the review page)
        # and the file pass share one run; a broken generator does not stop the others, but the
        # user's input (a template folder, an option) being wrong exits 2 as always
        out: Mapping[str, str | bytes] | Failure = isolated(
            "generator",
            gen.name,
            partial(ctx.memo, f"generator:{gen.name}", partial(gen.fn, ctx)),
            catch=() if strict else ANY,
            passes=(InputError,),
        )
        if isinstance(out, Failure):
            diagnostics.append(internal_error(out, spec_path))
            continue
        for rel, content in out.items():
            if rel in files:
                raise ArchkitError(f"generators disagree: two of them produce {rel}")
            files[rel] = content
    files.update(_render_diagrams(files, formats, ctx, progress))
    return files, diagnostics


def _render_diagrams(
    files: Files, formats: tuple[str, ...], ctx: RenderContext, progress: Progress | None
) -> Files:
    """One renderer pass over every `.dot`/`.puml` source: one PlantUML JVM per format, `dot` in parallel."""
    from archkit.generators.renderers import render_sources

    rendered: Files = dict(render_sources(files, formats, ctx.cache, progress))
    clash = sorted(set(rendered) & set(files))
    if clash:
        raise ArchkitError(
            f"generators disagree: a generated file would be overwritten by a rendering: {clash[0]}"
        )
    return rendered


def render(
    spec_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    only: list[str] | None = None,
    formats: tuple[str, ...] = ("svg",),
    measured: dict[str, Any] | None = None,
    templates_dir: Path | None = None,
    check: bool = False,
    force: bool = False,
    env: str | None = None,
    progress: Progress | None = None,
    plantuml_jar: Path | None = None,
    phase: Phase | None = None,
) -> RenderResult:
    """Render every artifact of a spec into `out_dir` (or, with `check`, report stale files).

    `phase` ("mva"): draw only that phase's stages, edges, services and pools (`spec.phase`, seed
    004 §4.5) with the diagram generators (`PHASE_GENERATORS`, or those of `only`).

    A spec that does not load comes back as the result's `diagnostics` (nothing written).
    A renderer that is missing here does not stop the render: the other files are written,
    the control flow is drawn by Graphviz when PlantUML cannot run, and `skipped` lists each
    file that was not rendered with why and how to fix it (`notes` what was drawn instead).
    """
    from archkit.generators.renderers import Tools

    try:
        run = prepare(spec_path, env)
    except SpecLoadError as exc:
        return RenderResult({}, WriteResult(), exc.diagnostics)
    if phase is not None:
        from archkit.spec.phase import of_phase

        outside = sorted(set(only or ()) - set(PHASE_GENERATORS))
        if outside:
            raise InputError(f"--phase draws only {', '.join(PHASE_GENERATORS)}; not {', '.join(outside)}")
        whole = run
        run = RunContext(of_phase(run.spec, phase), run.file, env)
        # the findings are the whole design's: a part's dangling references are not the design's
        run.__dict__["diagnostics"] = whole.diagnostics
        only = list(only or PHASE_GENERATORS)
    tools = Tools(jar=plantuml_jar, degrade=True)
    files, diags = generate(
        run.spec, str(spec_path), only, formats, measured, templates_dir, env, progress, tools, run
    )
    result = RenderResult(files, write_tree(out_dir, files, check=check, force=force), diags)
    if "prometheus/rules.yaml" in files:  # read from the plan the rules were rendered from
        result.rule_cost = rule_cost(run.alerts)
    result.skipped.update(tools.unrendered)
    result.notes.update(tools.notes)
    return result
