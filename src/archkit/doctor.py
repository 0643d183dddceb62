"""What external tools archkit can use here: found or not, their version, what each enables.

Read-only and bounded: each probe is one `--version`-style call with a timeout; the kube
context is read from the kubeconfig file, never from a cluster.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from archkit.generators.toolchain import (
    INSTALL,
    PLANTUML_VERSION,
    RendererMissing,
    find_plantuml_jar,
    install_hint,
    parse_version,
    version_text,
)

PROBE_TIMEOUT_S = 20.0


@dataclass
class Tool:
    """One external tool: whether it is here, its version, what it enables, how to install it."""

    name: str
    enables: str
    found: bool
    version: str = ""
    where: str = ""
    fix: str = ""
    needed: bool = False  # the spec (or, without one, `archkit render`) needs it

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "found": self.found,
            "version": self.version,
            "where": self.where,
            "enables": self.enables,
            "needed": self.needed,
            "fix": "" if self.found else self.fix,
        }


def _run_version(cmd: list[str]) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    m = re.search(r"\d+\.\d+(?:\.\d+)?(?:[-+.\w]*)?", text)
    return m.group(0) if m else ""


def _exe(name: str, enables: str, version_args: list[str] | None, fix: str) -> Tool:
    path = shutil.which(name)
    if path is None:
        return Tool(name, enables, False, fix=fix)
    version = _run_version([path, *version_args]) if version_args is not None else ""
    return Tool(name, enables, True, version, path)


def _python_package(dist: str, name: str, enables: str, fix: str) -> Tool:
    try:
        return Tool(name, enables, True, metadata.version(dist), "python package")
    except metadata.PackageNotFoundError:
        return Tool(name, enables, False, fix=fix)


def _plantuml() -> Tool:
    enables = "the control-flow diagram (PlantUML activity; Graphviz draws a stand-in without it)"
    try:
        jar = find_plantuml_jar()
    except RendererMissing as exc:
        return Tool("plantuml jar", enables, False, fix=str(exc))
    v = parse_version(jar.name)
    return Tool("plantuml jar", enables, True, version_text(v) if v else "?", str(jar))


def kube_context() -> Tool:
    """The current context of the kubeconfig (KUBECONFIG or ~/.kube/config), read as a file."""
    enables = "`archkit verify` against a live cluster (offline: --manifests, --snapshot)"
    fix = "set KUBECONFIG or create ~/.kube/config (e.g. `kubectl config use-context NAME`)"
    paths = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    paths = paths or [Path.home() / ".kube" / "config"]
    import yaml

    for p in paths:
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")[:1_000_000])
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            continue
        ctx = data.get("current-context") if isinstance(data, dict) else None
        if ctx:
            return Tool("kube context", enables, True, str(ctx), str(p))
    return Tool("kube context", enables, False, fix=fix)


def probe() -> list[Tool]:
    """Every external tool archkit can use, in a fixed order."""
    render_extra = "pip install 'archkit[render]'"
    load_extra = "pip install 'archkit[load]'"
    return [
        _exe(
            "dot", "the data-flow, topology and fault-tree diagrams (Graphviz)", ["-V"], install_hint("dot")
        ),
        _exe("java", "PlantUML (the control-flow diagram)", ["-version"], install_hint("java")),
        _plantuml(),
        _python_package("diagrams", "diagrams", "the deployment-topology diagram's icons", render_extra),
        _exe(
            "promtool",
            "unit tests of the generated Prometheus rules",
            ["--version"],
            install_hint("promtool"),
        ),
        _exe(
            "prometheus",
            "live alert evaluation during `archkit loadtest`",
            ["--version"],
            install_hint("prometheus"),
        ),
        _python_package("locust", "locust", "`archkit loadtest` (the load generator)", load_extra),
        _exe("k6", "k6 scripts as an alternative load generator", ["version"], install_hint("k6")),
        _exe(
            "perf_analyzer",
            "Triton's perf_analyzer, to measure service times per batch size",
            None,
            "pip install perf-analyzer (or use the Triton SDK container)",
        ),
        kube_context(),
    ]


def needs_of(spec: object | None) -> set[str]:
    """Tool names the spec's outputs need; without a spec, what `archkit render` needs."""
    needed = {"dot", "java", "plantuml jar", "diagrams"}
    if spec is None:
        return needed
    if getattr(spec, "loadtest", None) is not None:
        needed.add("locust")
    return needed


def doctor(spec: object | None = None) -> list[Tool]:
    tools = probe()
    needed = needs_of(spec)
    for t in tools:
        t.needed = t.name in needed
    return tools


__all__ = ["INSTALL", "PLANTUML_VERSION", "Tool", "doctor", "kube_context", "needs_of", "probe"]
