"""archkit's library API: load, check, schema, init, render, ... — returns values, never prints."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

# fault trees, calibration, OpenSLO and renderers: their own module, every name re-exported from here
from archkit import api_tools
from archkit.api_tools import *  # noqa: F403
from archkit.atomic import create_atomic
from archkit.checks import all_rules, rule_meta, run_rules
from archkit.diagnostics import Diagnostic, Severity, has_errors, sort_diagnostics
from archkit.errors import (
    ArchkitError,
    InputError,
    LoadtestError,
    SpecLoadError,
    UnknownEnvironmentError,
    UnknownNameError,
)
from archkit.loadtest.options import LoadtestOptions
from archkit.plans.alerts import alert_plan
from archkit.plans.capacity import CapacityReport, capacity_report
from archkit.plans.context import RunContext, prepare, with_environment
from archkit.render import RenderResult, generate, render
from archkit.render.tree import MANIFEST, WriteResult, write_tree
from archkit.spec import LoadResult, Spec, load_file
from archkit.spec.schema import SCHEMA_ID, schema_text

__all__ = [
    "ArchkitError",
    "CapacityReport",
    "CheckReport",
    "FileReport",
    "LoadtestOptions",
    "InputError",
    "LoadtestError",
    "MANIFEST",
    "RenderResult",
    "RunContext",
    "SpecLoadError",
    "UnknownEnvironmentError",
    "UnknownNameError",
    "WriteResult",
    "capacity",
    "check",
    "check_sarif",
    "check_spec",
    "examples",
    "expected_rule_groups",
    "explain",
    "generate",
    "init",
    "load",
    "loadtest",
    "prepare",
    "render",
    "rules",
    "runbook",
    "schema",
    "spec_reference",
    "verify",
    "verify_rbac",
    "write_tree",
]
__all__ += api_tools.__all__

if TYPE_CHECKING:
    from archkit.loadtest.k6 import K6Result
    from archkit.loadtest.session import Result as LoadtestRunResult
    from archkit.runbook.walk import CheckResult, RunbookReport, Step
    from archkit.verify.report import VerifyReport

SCHEMA_COMMENT = "# yaml-language-server: $schema={schema}\n"


# --------------------------------------------------------------------------- load / check


def load(path: str | os.PathLike[str]) -> LoadResult:
    """Load and validate a spec file; the result carries every located diagnostic."""
    return load_file(path)


@dataclass
class FileReport:
    file: str
    spec: Spec | None
    diagnostics: list[Diagnostic]
    suppressed: list[Diagnostic] = field(default_factory=list)  # by `# archkit: ignore[...]` comments


@dataclass
class CheckReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.diagnostics]

    @property
    def suppressed(self) -> list[Diagnostic]:
        """Findings an `# archkit: ignore[CODE] reason` comment silenced (not counted as failures)."""
        return [d for f in self.files for d in f.suppressed]

    @property
    def failed(self) -> bool:
        return has_errors(self.diagnostics)


def check_spec(
    spec: Spec,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    suppressed: list[Diagnostic] | None = None,
) -> list[Diagnostic]:
    """Run the rule catalogue on a loaded spec (suppressed findings go to `suppressed`, if given)."""
    return sort_diagnostics(run_rules(spec, select, ignore, suppressed=suppressed))


def check(
    paths: Iterable[str | os.PathLike[str]],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    env: str | None = None,
) -> CheckReport:
    """Load each spec and run the rules; with `env`, budgets of that environment apply."""
    report = CheckReport()
    for path in paths:
        res = load(path)
        diags = list(res.diagnostics)
        suppressed: list[Diagnostic] = []
        spec = res.spec
        if spec is None and res.partial is not None:
            # schema errors, but the rest of the spec holds together: run every rule group whose
            # sections loaded (structure always), and say which groups were skipped and why
            diags += _check_partial(res.partial, res.file, res.diagnostics, select, ignore, suppressed)
        if spec is not None:
            try:
                spec = with_environment(spec, res.file, env)
            except UnknownEnvironmentError as exc:
                diags.append(exc.diagnostic())  # reported with the findings, like any spec problem
            else:
                diags += check_spec(spec, select, ignore, suppressed)
        report.files.append(FileReport(res.file, spec, sort_diagnostics(diags), sort_diagnostics(suppressed)))
    return report


def _check_partial(
    partial: Spec,
    file: str,
    load_diags: list[Diagnostic],
    select: list[str] | None,
    ignore: list[str] | None,
    suppressed: list[Diagnostic],
) -> list[Diagnostic]:
    from archkit.checks.registry import FAMILIES, run_partial

    # an unknown key is dropped without touching its section's values: it breaks no input
    broken = {
        d.path.split(".", 1)[0].split("[", 1)[0]
        for d in load_diags
        if d.severity is Severity.ERROR and d.path and not d.message.startswith("unknown key")
    }
    diags, skipped = run_partial(partial, broken, select, ignore, suppressed)
    for fam, sections in skipped.items():
        diags.append(
            Diagnostic(
                "AK100",
                Severity.INFO,
                f"rule group {fam}* ({FAMILIES.get(fam, 'other')}) not run: "
                f"{', '.join(sections)} did not load; fix the schema errors (AK101) and check again",
                file,
                1,
                1,
                "",
            )
        )
    return diags


# --------------------------------------------------------------------------- catalogue


def rules() -> dict[str, dict[str, str]]:
    """code -> {name, summary, help, severity} for every registered rule."""
    return rule_meta()


def check_sarif(diags: Iterable[Diagnostic], version: str = "") -> str:
    """SARIF 2.1.0 of check findings, every registered rule with its summary, rationale and level."""
    from archkit.reporting import RuleInfo, sarif

    rules = {
        code: RuleInfo(r.name, r.summary(), r.explain(), getattr(r, "source", "") or "", r.severity.outcome)
        for code, r in all_rules().items()
    }
    return sarif(diags, "archkit", version, rules)


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


def init(path: str | os.PathLike[str], example: str | None = None) -> Path:
    """Write a starter spec; never overwrites. Raises FileExistsError, UnknownNameError (a KeyError)."""
    target = Path(path)
    if example:
        found = examples()
        if example not in found:
            raise UnknownNameError("example", [example], list(found))
        text = found[example].read_text(encoding="utf-8")
        first, _, rest = text.partition("\n")
        if first.startswith("# yaml-language-server:"):
            # the example's relative schema path means nothing next to the user's file
            text = SCHEMA_COMMENT.format(schema=SCHEMA_ID) + rest
    else:
        text = (resources.files("archkit") / "starter.yaml").read_text(encoding="utf-8")
    create_atomic(target, text)  # FileExistsError rather than overwrite
    return target


# --------------------------------------------------------------------------- verify


@dataclass
class VerifyResult:
    """A verify report, or the spec's load errors when it could not be loaded (report is None)."""

    report: VerifyReport | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def expected_rule_groups(
    spec: Spec | RunContext, rules_file: str | os.PathLike[str] | None = None
) -> tuple[list[str] | None, str]:
    """Rule group names Prometheus should have loaded: from `rules_file`, else from the alert plan.

    Returns (names, note); names is None (with the reason in note) when they cannot be known.
    Raises InputError when `rules_file` cannot be read or is not a rules file.
    """
    import yaml

    if rules_file is not None:
        try:
            data = yaml.safe_load(Path(rules_file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"{rules_file}: cannot read the rules file: {exc}") from None
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, list):
            raise InputError(f"{rules_file}: not a Prometheus rules file (no 'groups' list)")
        return [str(g.get("name")) for g in groups if isinstance(g, dict)], ""
    plan = spec.alerts if isinstance(spec, RunContext) else alert_plan(spec)
    return plan.group_names, ""


def verify(
    spec_path: str | os.PathLike[str],
    *,
    timeout_s: float = 10.0,
    env: str | None = None,
    default_source: bool = False,
    allow_endpoints: Sequence[str] = (),
    **options: Any,
) -> VerifyResult:
    """Verify the running system against a spec, read-only, through every source the options name.

    `options` are the sources' options (`archkit.verify.registry`: e.g. snapshot, manifests,
    live, kubeconfig, context, in_cluster, triton_url, prometheus_url, rules); with
    `default_source`, naming none reads the current cluster. Raises `archkit.verify.StateError`
    (or ValueError) when a source cannot be used at all; partial reads (403, timeouts) become
    `unknown` findings instead. Every endpoint a source connects to must be loopback or named in
    `allow_endpoints` or the spec's `verify.allow_endpoints` (and, with `env`, that
    environment's) (addresses in any form, networks, host names: `archkit.endpoints`);
    anything else raises `archkit.endpoints.EndpointError` (an InputError) before any connection.
    """
    from archkit import verify as verify_mod
    from archkit.endpoints import allow_list
    from archkit.verify.reach import PROVIDER
    from archkit.verify.registry import all_options

    known = {o.name for o in all_options()}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(
            f"verify() got unknown source option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    try:
        run = prepare(spec_path, env)
    except SpecLoadError as exc:
        return VerifyResult(None, exc.diagnostics)
    spec = run.spec
    from archkit.spec.verify_policy import allowed_endpoints

    # the flag's entries and the spec's (`verify.allow_endpoints`, the environment's): a malformed
    # flag entry is an InputError before anything is read (the spec's were checked when it loaded)
    allowed = allow_list([*allow_endpoints, *allowed_endpoints(spec)])
    providers = {
        "rule_groups": lambda: expected_rule_groups(run, options.get("rules")),
        PROVIDER: lambda: allowed,
    }
    report = verify_mod.verify_spec(spec, options, timeout_s, providers, default=default_source)
    return VerifyResult(report, [])


def verify_rbac() -> str:
    """The ClusterRole `archkit verify` needs: get/list on exactly the kinds it reads."""
    from archkit.verify.state import rbac_clusterrole

    return rbac_clusterrole()


# --------------------------------------------------------------------------- loadtest


@dataclass
class LoadtestOutcome:
    """A finished load test (`result`, an archkit.loadtest.session.Result) and its report files."""

    result: LoadtestRunResult
    report_files: dict[str, Path] = field(default_factory=dict)
    report_dir: Path | None = None

    @property
    def passed(self) -> bool:
        return self.result.passed


def loadtest_rules(
    spec: Spec | RunContext,
    spec_path: str = "<spec>",
    rule_paths: Sequence[str | os.PathLike[str]] | None = None,
) -> dict[str, str]:
    """Alert rules for the live Prometheus: the given files, else the rules of the run's alert plan."""
    if rule_paths:
        return {
            f"rules-{i}-{Path(p).name}": Path(p).read_text(encoding="utf-8") for i, p in enumerate(rule_paths)
        }
    run = spec if isinstance(spec, RunContext) else RunContext(spec, spec_path)
    return _rule_files(run, spec_path, {})


def _rule_files(run: RunContext, spec_path: str, files: dict[str, str | bytes]) -> dict[str, str]:
    """The Prometheus rules among `files` (generated on `run` when the prometheus generator is absent)."""
    from archkit.generators import all_generators

    if "prometheus" not in all_generators():
        return {}
    if not any(rel.startswith("prometheus/") for rel in files):
        files, _ = generate(run.spec, spec_path, only=["prometheus"], run=run, strict=True)
    return {
        Path(rel).name: text
        for rel, text in sorted(files.items())
        if rel.endswith(("rules.yaml", "rules.yml")) and isinstance(text, str)
    }


def loadtest(
    spec_path: str | os.PathLike[str],
    level: str | None = None,
    *,
    options: LoadtestOptions | None = None,
    report_dir: str | os.PathLike[str] | None = None,
    plots: bool = True,
    progress: Callable[[dict[str, Any]], None] | None = None,
    **changes: Any,
) -> LoadtestOutcome:
    """Load-test the spec's target at one level (baseline, stress, chaos or a level id) and judge its budgets.

    `options` (a `LoadtestOptions`) says how; `level` and keyword `changes` of its fields
    (`rate=`, `duration=`, ...) override it. Traffic only ever goes to loopback addresses.
    Raises SpecLoadError, UnknownEnvironmentError or LoadtestError (all InputError) for anything
    that keeps the test from starting, RunError (exit 1) when the load generator fails while
    running; a missed budget is not an error but `outcome.passed == False`.
    """
    from archkit.errors import require_extra

    require_extra("archkit loadtest", "load")  # before any import of locust, gevent, hdrh
    from archkit.generators import all_generators
    from archkit.loadtest import chaos as chaos_mod
    from archkit.loadtest import plan as plan_mod
    from archkit.loadtest import report as report_mod
    from archkit.loadtest import session
    from archkit.loadtest.safety import RemoteTargetError

    opts = (options or LoadtestOptions()).with_(**changes)
    if level is not None:
        opts = opts.with_(level=level)
    run = prepare(spec_path, opts.env, opts.calibration)
    spec = run.spec
    if spec.loadtest is None:
        raise LoadtestError(f"{spec_path} has no loadtest section (target, scenarios, levels)")
    # one generator pass for the locustfile and the rules: checks and plans computed once, on `run`
    gens = all_generators()
    wanted = ["locust"] + (
        ["prometheus"] if opts.prometheus and not opts.rules and "prometheus" in gens else []
    )
    files, _ = generate(spec, str(spec_path), only=wanted, run=run, strict=True)
    locustfile = files["locust/locustfile.py"]
    if not isinstance(locustfile, str):
        raise ArchkitError("the locust generator produced bytes, not a locustfile")
    try:
        if not opts.prometheus:
            rule_files: dict[str, str] = {}
        elif opts.rules:
            rule_files = loadtest_rules(run, str(spec_path), opts.rules)
        else:
            rule_files = _rule_files(run, str(spec_path), files)
    except OSError as exc:
        raise LoadtestError(f"cannot read a rules file: {exc}") from None
    folder = None
    try:
        if report_dir is not None:
            folder = report_mod.prepare_dir(Path(report_dir))
            result = session.execute(spec, str(spec_path), locustfile, opts, folder, progress, rule_files)
        else:
            with tempfile.TemporaryDirectory(prefix="archkit-loadtest-") as tmp:
                result = session.execute(
                    spec, str(spec_path), locustfile, opts, Path(tmp), progress, rule_files
                )
    except (
        RemoteTargetError,
        plan_mod.PlanError,
        chaos_mod.ChaosError,
        report_mod.ReportDirError,
    ) as exc:
        raise LoadtestError(str(exc)) from None
    # a RunError (the load generator failed while running) stays what it is: a runtime
    # ArchkitError, exit 1 (errors.py), not an input error
    written = report_mod.write(result, folder, with_plots=plots) if folder is not None else {}
    return LoadtestOutcome(result, written, folder)


def loadtest_k6(
    spec_path: str | os.PathLike[str],
    level: str = "baseline",
    *,
    env: str | None = None,
    host: str | None = None,
    rate: float | None = None,
    duration: float | None = None,
) -> K6Result:
    """Run one level of render's k6 script with the real k6 binary; judged like a locust run.

    Raises SpecLoadError, UnknownEnvironmentError or LoadtestError (a chaos level, no k6, a
    missing payload, a non-loopback target).
    """
    from archkit.generators.gen_k6 import k6_data
    from archkit.loadtest import k6 as k6_mod
    from archkit.loadtest import plan as plan_mod
    from archkit.loadtest import session

    run = prepare(spec_path, env)
    spec, plan = run.spec, run.load_test
    if spec.loadtest is None or plan is None:
        raise LoadtestError(f"{spec_path} has no loadtest section (target, scenarios, levels)")
    files, _ = generate(spec, str(spec_path), only=["k6"], run=run)
    script = files.get("k6/script.js")
    if not isinstance(script, str):
        raise LoadtestError(f"{spec_path}: no k6 script for a {plan.protocol} target (use --engine locust)")
    try:
        root = session.payload_root(spec, Path(spec_path).resolve().parent)
    except plan_mod.PlanError as exc:
        raise LoadtestError(str(exc)) from None
    return k6_mod.run_k6(
        spec,
        Path(spec_path).name,
        script,
        k6_data(spec, plan),
        level,
        root,
        host=host,
        rate=rate,
        duration=duration,
    )


# --------------------------------------------------------------------------- runbook


def runbook(
    spec_path: str | os.PathLike[str],
    tree: str | None = None,
    run: bool = False,
    timeout: float | None = None,
    on_start: Callable[[Step, int], None] | None = None,
    on_result: Callable[[Step, CheckResult], None] | None = None,
) -> RunbookReport:
    """Plan (and with `run`, walk) one fault tree's checks; returns a `RunbookReport`.

    Raises SpecLoadError when the spec does not load, `archkit.runbook.RunbookError` when the
    tree is unknown (both InputError).
    Commands run only with `run=True`, exactly as the spec writes them.
    """
    from archkit.runbook import plan, walk

    spec = prepare(spec_path).spec
    if run:
        return walk(spec, tree, timeout, on_start, on_result)
    return plan(spec, tree, timeout)


# --------------------------------------------------------------------------- capacity


def calibration_findings(
    path: str | os.PathLike[str], env: str | None = None, calibration: str | None = None
) -> list[Diagnostic]:
    """AK230: each environment's calibration measured on another machine than its target (none
    when the spec does not load: `capacity` and `check` report that themselves)."""
    try:
        run = prepare(path, env, calibration)
    except ArchkitError:
        return []
    return run_rules(run.spec, select=["AK230"])


def capacity(
    path: str | os.PathLike[str],
    env: str | None = None,
    rates: list[float] | None = None,
    plot: str | os.PathLike[str] | None = None,
    requests: int | None = None,
    calibration: str | None = None,
    sim_budget: int | None = None,
) -> CapacityReport:
    """Load a spec and analyse every model stage: λ, ρ, P50/P99 per batch size, recommendation.

    `rates` (req/s): also predict P50/P95/P99, throughput and shed share at each offered rate
    (`report.curve`, `requests` simulated requests each), with the knee; `plot` writes that
    curve as SVG or PNG (by its suffix). `sim_budget` (simulated events) bounds the pipeline
    simulation and its knee search (`perf.pipeline.SIM_BUDGET` by default).
    A spec that does not load, or an unknown environment, comes back as the report's
    `diagnostics` (the capacity command prints them like `archkit check`).
    """
    try:
        run = prepare(path, env, calibration)
    except SpecLoadError as exc:
        return CapacityReport(exc.file, "", None, None, diagnostics=exc.diagnostics)
    except UnknownEnvironmentError as exc:
        return CapacityReport(exc.file, "", None, None, diagnostics=[exc.diagnostic()])
    report = capacity_report(run.spec, run.file, rates, requests, sim_budget)
    if plot is not None and report.curve is not None:
        from archkit.atomic import write_atomic
        from archkit.perf.curve import curve_png, curve_svg, load_curve

        curve = load_curve(report.curve)
        write_atomic(plot, curve_png(curve) if str(plot).lower().endswith(".png") else curve_svg(curve))
    return report
