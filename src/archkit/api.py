"""archkit's library API: load, check, schema, init, render, ... — returns values, never prints."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from archkit.atomic import create_atomic, write_atomic
from archkit.checks import rule_meta, run_rules
from archkit.diagnostics import Diagnostic, Severity, has_errors, sort_diagnostics
from archkit.spec import LoadResult, Spec, load_file
from archkit.spec.schema import SCHEMA_ID, schema_text

__all__ = [
    "CheckReport",
    "FileReport",
    "WriteResult",
    "capacity",
    "check",
    "check_spec",
    "examples",
    "explain",
    "generate",
    "init",
    "load",
    "loadtest",
    "render",
    "rules",
    "runbook",
    "schema",
    "spec_reference",
    "verify",
    "verify_rbac",
    "write_tree",
]

SCHEMA_COMMENT = "# yaml-language-server: $schema={schema}\n"


# --------------------------------------------------------------------------- load / check


def load(path: str | os.PathLike) -> LoadResult:
    """Load and validate a spec file; the result carries every located diagnostic."""
    return load_file(path)


@dataclass
class FileReport:
    file: str
    spec: Spec | None
    diagnostics: list[Diagnostic]


@dataclass
class CheckReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.diagnostics]

    @property
    def failed(self) -> bool:
        return has_errors(self.diagnostics)


def check_spec(
    spec: Spec, select: list[str] | None = None, ignore: list[str] | None = None
) -> list[Diagnostic]:
    """Run the rule catalogue on a loaded spec."""
    return sort_diagnostics(run_rules(spec, select, ignore))


def check(
    paths: Iterable[str | os.PathLike],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    env: str | None = None,
) -> CheckReport:
    """Load each spec and run the rules; with `env`, budgets of that environment apply."""
    report = CheckReport()
    for path in paths:
        res = load(path)
        diags = list(res.diagnostics)
        spec = res.spec
        if spec is None and res.partial is not None:
            # schema errors, but the rest of the spec holds together: report broken references,
            # cycles and dead ends in the same run instead of one error family at a time
            diags += check_spec(res.partial, ["AK1"], ignore)
        if spec is not None:
            if env:
                if spec.environment(env) is None:
                    diags.append(
                        Diagnostic(
                            "AK103",
                            Severity.ERROR,
                            f"environment '{env}' is not defined",
                            res.file,
                            1,
                            1,
                            "environments",
                        )
                    )
                else:
                    spec = spec.with_environment(env)
            diags += check_spec(spec, select, ignore)
        report.files.append(FileReport(res.file, spec, sort_diagnostics(diags)))
    return report


# --------------------------------------------------------------------------- catalogue


def rules() -> dict[str, dict]:
    """code -> {name, summary, help, severity} for every registered rule."""
    return rule_meta()


def explain(code: str) -> str | None:
    """The rationale and source of any code archkit emits (AK rules, verify and load-test codes)."""
    from archkit.codes import explain as explain_code

    return explain_code(code)


def schema() -> str:
    """The JSON Schema of archkit/v1 as text."""
    return schema_text()


def spec_reference() -> str:
    """The Markdown field reference of archkit/v1 (docs/spec.md)."""
    from archkit.spec.reference import markdown

    return markdown()


# --------------------------------------------------------------------------- init


def _examples_dir() -> Path:
    packaged = resources.files("archkit") / "_examples"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "examples"


def examples() -> dict[str, Path]:
    """Bundled example specs by name."""
    return {p.stem: p for p in sorted(_examples_dir().glob("*.yaml"))}


def init(path: str | os.PathLike, example: str | None = None) -> Path:
    """Write a starter spec; never overwrites. Raises FileExistsError / KeyError."""
    target = Path(path)
    if example:
        found = examples()
        if example not in found:
            raise KeyError(example)
        text = found[example].read_text(encoding="utf-8")
        first, _, rest = text.partition("\n")
        if first.startswith("# yaml-language-server:"):
            # the example's relative schema path means nothing next to the user's file
            text = SCHEMA_COMMENT.format(schema=SCHEMA_ID) + rest
    else:
        text = (resources.files("archkit") / "starter.yaml").read_text(encoding="utf-8")
    create_atomic(target, text)  # FileExistsError rather than overwrite
    return target


# --------------------------------------------------------------------------- writing outputs

MANIFEST = ".archkit-manifest.json"


@dataclass
class WriteResult:
    """What writing a tree of generated files did (or, with check=True, would do)."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # differ from what would be written
    refused: list[str] = field(default_factory=list)  # exist but were not generated by archkit

    @property
    def ok(self) -> bool:
        return not self.refused and not self.stale


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_tree(
    out_dir: str | os.PathLike, files: dict[str, str | bytes], check: bool = False, force: bool = False
) -> WriteResult:
    """Write generated files atomically under `out_dir`.

    A manifest of what archkit wrote (path -> sha256) lets later runs tell their own files
    from a user's: an existing file that archkit did not write, or that was edited since,
    is refused unless `force`. With `check`, nothing is written and stale files are listed
    (a CI drift gate).
    """
    root = Path(out_dir)
    manifest_path = root / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            manifest = {}
    except (OSError, ValueError):
        manifest = {}
    result = WriteResult()
    new_manifest = dict(manifest)
    for rel in sorted(files):
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise ValueError(f"generated path escapes the output folder: {rel}")
        content = files[rel]
        data = content.encode("utf-8") if isinstance(content, str) else content
        dest = root / rel
        existing = dest.read_bytes() if dest.is_file() else None
        if existing == data:
            result.unchanged.append(rel)
            new_manifest[rel] = _sha(data)
            continue
        if check:
            result.stale.append(rel)
            continue
        if existing is not None and not force and manifest.get(rel) != _sha(existing):
            result.refused.append(rel)
            continue
        write_atomic(dest, data)
        new_manifest[rel] = _sha(data)
        result.written.append(rel)
    if check:
        for rel in sorted(set(manifest) - set(files)):
            if (root / rel).exists():
                result.stale.append(rel)  # a file a previous render made that is no longer produced
    elif new_manifest != manifest:
        write_atomic(
            manifest_path, (json.dumps(dict(sorted(new_manifest.items())), indent=1) + "\n").encode()
        )
    return result


# --------------------------------------------------------------------------- render


@dataclass
class RenderResult:
    """Files a render produced and what writing them did."""

    files: dict[str, str | bytes]
    write: WriteResult
    diagnostics: list[Diagnostic]
    skipped: dict[str, str] = field(default_factory=dict)  # file not rendered -> why, and the fix
    notes: dict[str, str] = field(default_factory=dict)  # source drawn another way -> how and why


def generate(
    spec: Spec,
    spec_path: str = "<spec>",
    only: list[str] | None = None,
    formats: tuple[str, ...] = ("svg",),
    measured: dict | None = None,
    templates_dir: Path | None = None,
    env: str | None = None,
    progress=None,
    tools=None,
) -> tuple[dict[str, str | bytes], list[Diagnostic]]:
    """Run the selected generators in memory; returns {relative path: content} and findings.

    `tools` (an `archkit.generators.renderers.Tools`) names the PlantUML jar and, with
    `degrade`, collects diagrams that could not be rendered here instead of raising.
    """
    from archkit.generators import RenderContext, all_generators

    gens = all_generators()
    unknown = [n for n in (only or []) if n not in gens]
    if unknown:
        raise KeyError(", ".join(unknown))
    if env:
        spec = spec.with_environment(env)
    diags = check_spec(spec)
    ctx = RenderContext(
        spec=spec,
        spec_path=spec_path,
        diagnostics=diags,
        measured=measured,
        formats=formats,
        templates_dir=templates_dir,
        env=env,
        progress=progress,
    )
    if tools is not None:
        ctx.cache["_tools"] = tools
    files: dict[str, str | bytes] = {}
    selected = [g for name, g in gens.items() if not only or name in only]
    for i, gen in enumerate(selected):
        if progress:
            progress(gen.name, i, len(selected))
        # memoised per context, so a generator that embeds another's output (the review page)
        # and the file pass share one run
        for rel, content in ctx.memo(f"generator:{gen.name}", lambda gen=gen: gen.fn(ctx)).items():
            if rel in files:
                raise RuntimeError(f"generators disagree: two of them produce {rel}")
            files[rel] = content
    files.update(_render_diagrams(files, formats, ctx, progress))
    return files, diags


def _render_diagrams(files: dict[str, str | bytes], formats: tuple[str, ...], ctx, progress) -> dict:
    """One renderer pass over every `.dot`/`.puml` source: one PlantUML JVM per format, `dot` in parallel."""
    from archkit.generators.renderers import render_sources

    rendered = render_sources(files, formats, ctx.cache, progress)
    clash = sorted(set(rendered) & set(files))
    if clash:
        raise RuntimeError(
            f"generators disagree: a generated file would be overwritten by a rendering: {clash[0]}"
        )
    return rendered


def render(
    spec_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    only: list[str] | None = None,
    formats: tuple[str, ...] = ("svg",),
    measured: dict | None = None,
    templates_dir: Path | None = None,
    check: bool = False,
    force: bool = False,
    env: str | None = None,
    progress=None,
    plantuml_jar: Path | None = None,
) -> RenderResult:
    """Render every artifact of a spec into `out_dir` (or, with `check`, report stale files).

    A renderer that is missing here does not stop the render: the other files are written,
    the control flow is drawn by Graphviz when PlantUML cannot run, and `skipped` lists each
    file that was not rendered with why and how to fix it (`notes` what was drawn instead).
    """
    from archkit.generators.renderers import Tools

    res = load(spec_path)
    if res.spec is None:
        return RenderResult({}, WriteResult(), res.diagnostics)
    tools = Tools(jar=plantuml_jar, degrade=True)
    files, diags = generate(
        res.spec, str(spec_path), only, formats, measured, templates_dir, env, progress, tools
    )
    result = RenderResult(files, write_tree(out_dir, files, check=check, force=force), diags)
    result.skipped.update(tools.unrendered)
    result.notes.update(tools.notes)
    return result


# --------------------------------------------------------------------------- verify (issue 8)


@dataclass
class VerifyResult:
    """A verify report, or the spec's load errors when it could not be loaded (report is None)."""

    report: object | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def expected_rule_groups(
    spec: Spec, rules_file: str | os.PathLike | None = None
) -> tuple[list[str] | None, str]:
    """Rule group names Prometheus should have loaded: from `rules_file`, else from the prometheus generator.

    Returns (names, note); names is None (with the reason in note) when they cannot be known.
    """
    import yaml

    if rules_file is not None:
        try:
            data = yaml.safe_load(Path(rules_file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"{rules_file}: cannot read the rules file: {exc}") from None
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, list):
            raise ValueError(f"{rules_file}: not a Prometheus rules file (no 'groups' list)")
        return [str(g.get("name")) for g in groups if isinstance(g, dict)], ""
    try:
        files, _ = generate(spec, only=["prometheus"])
    except KeyError:
        return (
            None,
            "the prometheus generator is not available; pass --rules FILE to name the expected groups",
        )
    rules = next((v for k, v in sorted(files.items()) if k.endswith("rules.yaml")), None)
    if rules is None:
        return None, "the prometheus generator produced no rules.yaml"
    data = yaml.safe_load(rules if isinstance(rules, str) else rules.decode("utf-8")) or {}
    return [str(g.get("name")) for g in data.get("groups") or []], ""


def verify(
    spec_path: str | os.PathLike,
    *,
    timeout_s: float = 10.0,
    env: str | None = None,
    default_source: bool = False,
    **options: Any,
) -> VerifyResult:
    """Verify the running system against a spec, read-only, through every source the options name.

    `options` are the sources' options (`archkit.verify.registry`: e.g. snapshot, manifests,
    live, kubeconfig, context, in_cluster, triton_url, prometheus_url, rules); with
    `default_source`, naming none reads the current cluster. Raises `archkit.verify.StateError`
    (or ValueError) when a source cannot be used at all; partial reads (403, timeouts) become
    `unknown` findings instead.
    """
    from archkit import verify as verify_mod
    from archkit.verify.registry import all_options

    known = {o.name for o in all_options()}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(
            f"verify() got unknown source option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    res = load(spec_path)
    if res.spec is None:
        return VerifyResult(None, res.diagnostics)
    if env and res.spec.environment(env) is None:
        envs = ", ".join(e.id for e in res.spec.environments) or "none"
        raise ValueError(f"environment '{env}' is not defined in {spec_path} (environments: {envs})")
    spec = res.spec.with_environment(env) if env else res.spec
    providers = {"rule_groups": lambda: expected_rule_groups(spec, options.get("rules"))}
    report = verify_mod.verify_spec(spec, options, timeout_s, providers, default=default_source)
    return VerifyResult(report, [])


def verify_rbac() -> str:
    """The ClusterRole `archkit verify` needs: get/list on exactly the kinds it reads."""
    from archkit.verify.state import rbac_clusterrole

    return rbac_clusterrole()


# --------------------------------------------------------------------------- loadtest (issue 7)


class LoadtestError(ValueError):
    """A load test that cannot start: bad spec, non-loopback host, missing payloads, bad options."""


@dataclass
class LoadtestOutcome:
    """A finished load test (`result`, an archkit.loadtest.session.Result) and its report files."""

    result: object
    report_files: dict = field(default_factory=dict)
    report_dir: Path | None = None

    @property
    def passed(self) -> bool:
        return self.result.passed


def loadtest_rules(spec: Spec, spec_path: str = "<spec>", rule_paths: list | None = None) -> dict[str, str]:
    """Alert rules for the live Prometheus: the given files, else what the prometheus generator makes."""
    if rule_paths:
        return {
            f"rules-{i}-{Path(p).name}": Path(p).read_text(encoding="utf-8") for i, p in enumerate(rule_paths)
        }
    from archkit.generators import all_generators

    if "prometheus" not in all_generators():
        return {}
    files, _ = generate(spec, spec_path, only=["prometheus"])
    return {
        Path(rel).name: text
        for rel, text in sorted(files.items())
        if rel.endswith(("rules.yaml", "rules.yml")) and isinstance(text, str)
    }


def loadtest(
    spec_path: str | os.PathLike,
    level: str = "baseline",
    *,
    env: str | None = None,
    host: str | None = None,
    users: int | None = None,
    rate: float | None = None,
    duration: float | None = None,
    max_requests: int | None = None,
    report_dir: str | os.PathLike | None = None,
    workers: int = 0,
    master_host: str | None = None,
    master_port: int = 5557,
    services: list[str] | None = None,
    proxies: list[str] | None = None,
    metrics: list[str] | None = None,
    rules: list | None = None,
    prometheus: bool = True,
    plots: bool = True,
    progress=None,
    arrival: str | None = None,
    max_inflight: int | None = None,
) -> LoadtestOutcome:
    """Load-test the spec's target at one level (baseline, stress, chaos or a level id) and judge its budgets.

    Traffic only ever goes to loopback addresses. Raises LoadtestError for anything that keeps
    the test from starting; a missed budget is not an error but `outcome.passed == False`.
    """
    from archkit.loadtest import chaos as chaos_mod
    from archkit.loadtest import plan as plan_mod
    from archkit.loadtest import report as report_mod
    from archkit.loadtest import session
    from archkit.loadtest.runner import RunError
    from archkit.loadtest.safety import RemoteTargetError

    res = load(spec_path)
    if res.spec is None:
        first = [d.text() for d in res.diagnostics[:5]]
        raise LoadtestError("the spec does not load:\n" + "\n".join(first))
    spec = res.spec
    if env:
        if spec.environment(env) is None:
            raise LoadtestError(
                f"environment {env!r} is not defined in {spec_path} "
                f"(have: {', '.join(e.id for e in spec.environments) or 'none'})"
            )
        spec = spec.with_environment(env)
    if spec.loadtest is None:
        raise LoadtestError(f"{spec_path} has no loadtest section (target, scenarios, levels)")
    files, _ = generate(spec, str(spec_path), only=["locust"])
    try:
        rule_files = loadtest_rules(spec, str(spec_path), rules) if prometheus else {}
    except OSError as exc:
        raise LoadtestError(f"cannot read a rules file: {exc}") from None
    opts = session.Options(
        level=level,
        env=env,
        host=host,
        users=users,
        rate=rate,
        duration=duration,
        max_requests=max_requests,
        workers=workers,
        master_host=master_host,
        master_port=master_port,
        services=list(services or []),
        proxies=list(proxies or []),
        metrics=list(metrics or []),
        rule_files=rule_files,
        prometheus=prometheus,
        arrival=arrival,
        max_inflight=max_inflight,
    )
    folder = None
    try:
        if report_dir is not None:
            folder = report_mod.prepare_dir(Path(report_dir))
            result = session.execute(
                spec, str(spec_path), files["locust/locustfile.py"], opts, folder, progress
            )
        else:
            with tempfile.TemporaryDirectory(prefix="archkit-loadtest-") as tmp:
                result = session.execute(
                    spec, str(spec_path), files["locust/locustfile.py"], opts, Path(tmp), progress
                )
    except (
        RemoteTargetError,
        plan_mod.PlanError,
        chaos_mod.ChaosError,
        report_mod.ReportDirError,
        RunError,
    ) as exc:
        raise LoadtestError(str(exc)) from None
    written = report_mod.write(result, folder, with_plots=plots) if folder is not None else {}
    return LoadtestOutcome(result, written, folder)


# --------------------------------------------------------------------------- capacity (issue 3)


@dataclass
class CapacityReport:
    """`archkit capacity`: per model stage, the queueing/batching analysis as plain data."""

    file: str
    name: str
    arrival_rps: float | None
    p99_budget_ms: float | None
    stages: list[dict] = field(default_factory=list)
    paths: list[dict] = field(default_factory=list)
    workers: list[dict] = field(default_factory=list)  # non-model stages with `concurrency` (M/M/c)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def missed(self) -> bool:
        """True when a model stage's predicted P99 misses its budget or a worker pool is overloaded."""
        return any(s["declared"] and not s["declared"]["meets"] for s in self.stages) or any(
            w["rho"] >= 1 for w in self.workers
        )

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "name": self.name,
            "arrival_rps": self.arrival_rps,
            "p99_budget_ms": self.p99_budget_ms,
            "stages": self.stages,
            "paths": self.paths,
            "workers": self.workers,
        }


def capacity(path: str | os.PathLike, env: str | None = None) -> CapacityReport:
    """Load a spec and analyse every model stage: λ, ρ, P50/P99 per batch size, recommendation."""
    import math

    from archkit.analysis.batching import recommend
    from archkit.analysis.capacity import model_capacities, worker_capacities
    from archkit.analysis.latency import dataflow_paths
    from archkit.analysis.simulate import simulate

    def sim(p) -> dict:
        r = simulate(cap.table, p.arrival_rps, p.batch_size, p.max_queue_delay_us, p.replicas * p.instances)
        return {
            "sim_p50_ms": num(r.p50_ms) if r.stable else None,
            "sim_p99_ms": num(r.p99_ms) if r.stable else None,
            "sim_mean_batch": round(r.mean_batch, 2),
        }

    res = load(path)
    if res.spec is None:
        return CapacityReport(res.file, "", None, None, diagnostics=list(res.diagnostics))
    spec = res.spec
    if env:
        if spec.environment(env) is None:
            return CapacityReport(
                res.file,
                spec.metadata.name,
                None,
                None,
                diagnostics=[
                    Diagnostic(
                        "AK103",
                        Severity.ERROR,
                        f"environment '{env}' is not defined",
                        res.file,
                        1,
                        1,
                        "environments",
                    )
                ],
            )
        spec = spec.with_environment(env)

    def num(v):
        return None if v is None or (isinstance(v, float) and math.isinf(v)) else round(v, 1)

    report = CapacityReport(res.file, spec.metadata.name, spec.budgets.throughput_rps, spec.budgets.p99_ms)
    for p in dataflow_paths(spec):
        report.paths.append(
            {
                "stages": p.stages,
                "p50_sum_ms": num(p.p50_sum),
                "p99_sum_ms": num(p.p99_sum),
                "p99_independent_ms": num(p.p99_rss),
                "dominant": p.dominant,
                "dominant_p99_ms": num(p.dominant_p99),
            }
        )
    for w in worker_capacities(spec):
        report.workers.append(
            {
                "stage": w.stage.id,
                "arrival_rps": w.arrival_rps,
                "servers": w.servers,
                "service_ms": w.service_ms,
                "rho": round(w.rho, 3),
                "wait_mean_ms": num(w.wait_mean_ms),
                "wait_p99_ms": num(w.wait_p99_ms),
            }
        )
    for cap in model_capacities(spec):
        st, m = cap.stage, cap.stage.model
        row: dict = {
            "stage": st.id,
            "model": m.name,
            "device": m.device.value,
            "arrival_rps": cap.arrival_rps,
            "replicas": cap.replicas,
            "instances": cap.instances,
            "gpus_per_replica": cap.gpus_per_replica,
            "budget_ms": cap.budget_ms,
            "budget_source": cap.budget_source,
            "batch_size": cap.batch_size,
            "max_batch_size": cap.max_batch_size,
            "max_queue_delay_us": cap.max_queue_delay_us,
            "ceiling_rps": num(cap.ceiling_rps),
            "declared": None,
            "per_batch": [],
            "recommendations": [],
            "why": [],
        }
        if cap.table is None:
            row["why"].append("no service_time table: nothing to predict (AK210)")
        if cap.declared is not None:
            d = cap.declared
            row["declared"] = {
                **_pred(d, num),
                **sim(d),
                "meets": cap.budget_ms is None or d.p99_ms <= cap.budget_ms,
            }
            for p in cap.per_batch:
                row["per_batch"].append(
                    {
                        **_pred(p, num),
                        **sim(p),
                        "per_item_ms": num(cap.table.ms(p.batch_size) / p.batch_size),
                        "batch_ms": num(cap.table.ms(p.batch_size)),
                        "meets": cap.budget_ms is not None and p.p99_ms <= cap.budget_ms,
                    }
                )
            row["why"] = _why(cap, d)
            budgets = []
            if cap.budget_ms is not None:
                budgets.append((cap.budget_ms, cap.budget_source))
            if spec.budgets.p99_ms is not None and spec.budgets.p99_ms != cap.budget_ms:
                budgets.append((spec.budgets.p99_ms, "budgets.p99_ms"))
            for b_ms, src in budgets:
                rec = (
                    cap.recommendation
                    if b_ms == cap.budget_ms
                    else recommend(
                        cap.table,
                        cap.arrival_rps,
                        b_ms,
                        cap.max_batch_size,
                        m.batching.preferred_batch_sizes if m.batching else (),
                        cap.instances,
                    )
                )
                pr = rec.prediction
                row["recommendations"].append(
                    {
                        "budget_ms": b_ms,
                        "budget_source": src,
                        "met": rec.met,
                        "reason": rec.reason,
                        "batch_size": pr.batch_size if rec.met else None,
                        "max_queue_delay_us": pr.max_queue_delay_us if rec.met else None,
                        "replicas": pr.replicas if rec.met else None,
                        "gpus": (pr.replicas * cap.gpus_per_replica) if rec.met else None,
                        "p50_ms": num(pr.p50_ms) if rec.met else None,
                        "p99_ms": num(pr.p99_ms) if rec.met else None,
                        **(
                            sim(pr)
                            if rec.met
                            else {"sim_p50_ms": None, "sim_p99_ms": None, "sim_mean_batch": None}
                        ),
                    }
                )
        report.stages.append(row)
    return report


def _pred(p, num) -> dict:
    return {
        "batch_size": p.batch_size,
        "max_queue_delay_us": p.max_queue_delay_us,
        "mean_batch": round(p.mean_batch, 2),
        "p99_batch": p.p99_batch,
        "service_ms": num(p.service_ms),
        "rho": round(p.rho, 3),
        "fill_mean_ms": num(p.fill_mean_ms),
        "fill_p99_ms": num(p.fill_p99_ms),
        "wait_mean_ms": num(p.wait_mean_ms),
        "wait_p99_ms": num(p.wait_p99_ms),
        "p50_ms": num(p.p50_ms),
        "mean_ms": num(p.mean_ms),
        "p99_ms": num(p.p99_ms),
        "ceiling_rps": num(p.ceiling_rps),
        "extrapolated": p.extrapolated,
    }


def _why(cap, d) -> list[str]:
    """Plain-language arithmetic behind the declared configuration's prediction."""
    lam_r = (cap.arrival_rps or 0) / cap.replicas
    out = []
    b = cap.batch_size
    t1, tb = cap.table.ms(1), cap.table.ms(b)
    if b > 1:
        fill_ms = 1000 * (b - 1) / lam_r if lam_r > 0 else float("inf")
        gain = f"{t1 * b / tb:.1f}×" if tb > 0 else "unbounded"
        out.append(
            f"a batch of {b} costs {tb:g} ms ({tb / b:.1f} ms per item) against {t1:g} ms for one item: "
            f"{gain} the throughput per instance"
        )
        out.append(
            f"each replica sees {lam_r:g} req/s, so the {b - 1} requests after the first take "
            f"{fill_ms:.0f} ms on average to arrive; max_queue_delay_us caps the wait at {cap.max_queue_delay_us / 1000:g} ms, so batches "
            f"leave at ~{d.mean_batch:.1f} items (99th percentile {d.p99_batch})"
        )
    out.append(
        f"batches queue for {cap.servers} instance(s) as M/D/{cap.servers}: ρ = {d.rho:.2f}, "
        f"mean wait {d.wait_mean_ms:.1f} ms, P99 wait {d.wait_p99_ms:.1f} ms"
    )
    out.append(
        f"analytic P99 = fill {d.fill_p99_ms:.1f} ms + wait {d.wait_p99_ms:.1f} ms + service of a "
        f"{d.p99_batch}-batch {cap.table.ms(d.p99_batch):.1f} ms = {d.p99_ms:.1f} ms"
        + (f" vs budget {cap.budget_ms:g} ms ({cap.budget_source})" if cap.budget_ms is not None else "")
    )
    return out


# --------------------------------------------------------------------------- runbook (issue 5)


def runbook(
    spec_path: str | os.PathLike,
    tree: str | None = None,
    run: bool = False,
    timeout: float | None = None,
    on_start=None,
    on_result=None,
):
    """Plan (and with `run`, walk) one fault tree's checks; returns a `RunbookReport`.

    Raises `archkit.runbook.RunbookError` when the spec does not load or the tree is unknown.
    Commands run only with `run=True`, exactly as the spec writes them.
    """
    from archkit.runbook import RunbookError, plan, walk

    res = load(spec_path)
    if res.spec is None:
        first = next((d for d in res.diagnostics if d.severity is Severity.ERROR), None)
        raise RunbookError(first.text() if first else f"{spec_path}: cannot load the spec")
    if run:
        return walk(res.spec, tree, timeout, on_start, on_result)
    return plan(res.spec, tree, timeout)
