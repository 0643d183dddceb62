"""`archkit verify`: a cluster (live, snapshot or manifests), Triton and Prometheus against the spec."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import diag_line, fail, use_colour


class VerifyFormat(str, Enum):
    text = "text"
    json = "json"
    junit = "junit"


class FailOn(str, Enum):
    drift = "drift"
    unknown = "unknown"
    never = "never"


@app.command()
def verify(
    spec: Annotated[
        Path | None, typer.Argument(help="The spec to verify against.", show_default=False)
    ] = None,
    snapshot: Annotated[
        Path | None,
        typer.Option(
            help="Output of `kubectl get nodes,deploy,sts,ds,svc,netpol,pods,pvc,pv,sc -A -o yaml`."
        ),
    ] = None,
    manifests: Annotated[
        Path | None,
        typer.Option(
            help="Folder (or file) of rendered manifests (Helm/kustomize output): checks before deploy."
        ),
    ] = None,
    live: Annotated[
        bool,
        typer.Option(
            "--live", help="Read the live cluster of the kubeconfig (implied by --context/--kubeconfig)."
        ),
    ] = False,
    kubeconfig: Annotated[
        Path | None, typer.Option(help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config).")
    ] = None,
    context: Annotated[str | None, typer.Option(help="Kubeconfig context to use.")] = None,
    in_cluster: Annotated[bool, typer.Option("--in-cluster", help="Use the pod's service account.")] = False,
    triton_url: Annotated[
        str | None, typer.Option(help="Triton HTTP endpoint, e.g. http://127.0.0.1:8000.")
    ] = None,
    prometheus_url: Annotated[
        str | None, typer.Option(help="Prometheus base URL, e.g. http://127.0.0.1:9090.")
    ] = None,
    rules: Annotated[
        Path | None,
        typer.Option(
            help="Rules file whose groups must be loaded (default: the groups `archkit render` generates)."
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 10.0,
    env: Annotated[str | None, typer.Option(help="Apply this environment's overrides to the spec.")] = None,
    format: Annotated[
        VerifyFormat, typer.Option("--format", "-f", help="text, json or junit.")
    ] = VerifyFormat.text,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here.")] = None,
    fail_on: Annotated[
        FailOn, typer.Option(help="Exit 1 on drift (default), on drift or unknown, or never.")
    ] = FailOn.drift,
    only_problems: Annotated[
        bool, typer.Option("--problems", help="Text format: hide passing checks.")
    ] = False,
    print_rbac: Annotated[
        bool,
        typer.Option("--print-rbac", help="Print the read-only ClusterRole this command needs, and exit."),
    ] = False,
) -> None:
    """Verify a running system against the spec, read-only: exit 1 on drift.

    Kubernetes: --snapshot FILE, --manifests DIR, or a live cluster (--live, --context,
    --kubeconfig, --in-cluster; the default when no other source is given). Triton:
    --triton-url. Prometheus: --prometheus-url.
    """
    from archkit import api
    from archkit.verify import StateError, to_json, to_junit, to_text

    if print_rbac:
        typer.echo(api.verify_rbac(), nl=False)
        raise typer.Exit(0)
    if spec is None:
        raise fail("missing SPEC; usage: archkit verify SPEC [--snapshot F | --manifests D | --live] ...", 2)
    live_wanted = live or context is not None or kubeconfig is not None
    if (
        snapshot is None
        and manifests is None
        and not in_cluster
        and not live_wanted
        and not triton_url
        and not prometheus_url
    ):
        live_wanted = True  # like kubectl: no source named means the current cluster
    try:
        result = api.verify(
            spec,
            snapshot=snapshot,
            manifests=manifests,
            live=live_wanted,
            kubeconfig=str(kubeconfig) if kubeconfig else None,
            context=context,
            in_cluster=in_cluster,
            triton_url=triton_url,
            prometheus_url=prometheus_url,
            rules_file=rules,
            timeout_s=timeout,
            env=env,
        )
    except (StateError, ValueError, KeyError) as exc:
        raise fail(str(exc).strip("'\""), 2) from None
    if result.report is None:
        for d in result.diagnostics:
            typer.echo(diag_line(d), err=True)
        raise fail(f"{spec}: the spec has errors; fix them (see `archkit check {spec}`)", 2)
    report = result.report
    if format is VerifyFormat.json:
        text = to_json(report)
    elif format is VerifyFormat.junit:
        text = to_junit(report)
    else:
        text = to_text(report, colour=output is None and use_colour(), show_pass=not only_problems)
    if output:
        from archkit.atomic import write_atomic

        write_atomic(output, text)
        typer.echo(report.summary(), err=True)
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(1 if report.failed(fail_on.value) else 0)
