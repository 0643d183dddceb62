"""`archkit calibrate`: measure each model stage's service time on a live Triton into a calibration file."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import fail


class CalibrateFormat(str, Enum):
    text = "text"
    json = "json"


def _token(token_file: Path | None) -> str | None:
    """Triton's access token: --token-file, else TRITON_ACCESS_TOKEN_FILE, else TRITON_ACCESS_TOKEN."""
    path = token_file or (
        Path(os.environ["TRITON_ACCESS_TOKEN_FILE"]) if os.environ.get("TRITON_ACCESS_TOKEN_FILE") else None
    )
    if path is not None:
        try:
            return path.read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise fail(f"cannot read the token file {path}: {exc.strerror}", 2) from None
    return os.environ.get("TRITON_ACCESS_TOKEN") or None


def _ints(text: str | None, what: str) -> list[int] | None:
    if not text:
        return None
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise fail(f"{what} expects comma-separated integers, got {text!r}", 2) from None
    if not vals or any(v < 1 or v > 1024 for v in vals):
        raise fail(f"{what} expects integers from 1 to 1024, got {text!r}", 2)
    return vals


@app.command()
def calibrate(
    spec: Annotated[Path, typer.Argument(help="The spec file.", show_default=False)],
    env: Annotated[
        str | None, typer.Option(help="The environment (hardware profile) being measured.")
    ] = None,
    triton: Annotated[
        str, typer.Option(help="Triton's HTTP endpoint (loopback only).")
    ] = "http://127.0.0.1:8000",
    token_file: Annotated[
        Path | None,
        typer.Option(help="File with Triton's access token (default: $TRITON_ACCESS_TOKEN[_FILE])."),
    ] = None,
    inputs: Annotated[
        Path | None, typer.Option(help="Folder with MODEL/INPUT.npy items (default: random tensors).")
    ] = None,
    dim: Annotated[int, typer.Option(min=1, max=8192, help="A random tensor's variable dimensions.")] = 64,
    requests: Annotated[int, typer.Option(min=1, max=10_000, help="Measured requests per batch size.")] = 20,
    batch_sizes: Annotated[
        str | None, typer.Option(help="Batch sizes, e.g. 1,2,4 (default: the spec's).")
    ] = None,
    concurrency: Annotated[
        str | None, typer.Option(help="Concurrency levels at batch 1 (default: 1 .. instances + 1).")
    ] = None,
    seconds: Annotated[
        float,
        typer.Option(
            min=0.5,
            max=600,
            help="Seconds per concurrency level (1 and 2: in all, over 5 interleaved rounds).",
        ),
    ] = 4.0,
    budget_s: Annotated[
        float, typer.Option(min=1, max=86_400, help="Stop the whole run after this.")
    ] = 600.0,
    model: Annotated[list[str] | None, typer.Option(help="Only this model (repeatable).")] = None,
    llm_url: Annotated[
        str | None,
        typer.Option(help="Probe the spec's LLM stage on this engine instead (llama-server, loopback only)."),
    ] = None,
    service: Annotated[
        str | None,
        typer.Option(
            help="The service's base URL (loopback), asked at /v1/models for the runtime and precision it "
            "serves with, recorded in the fingerprint (default: loadtest.target.host)."
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The calibration file (default: next to the spec).")
    ] = None,
    format: Annotated[
        CalibrateFormat, typer.Option("--format", "-f", help="Output format.")
    ] = CalibrateFormat.text,
) -> None:
    """Measure each model stage on a live Triton (loopback) and write a calibration file.

    Batch sweep (server-side compute and queue times from Triton's statistics) and a concurrency
    sweep per model; with --llm-url, the LLM stage's prefill rate, decode step time by running
    sequences and context, and the engine's KV capacity instead. Reference the file from the spec
    with environments[].calibration. The spec is never rewritten. Progress goes to stderr.
    """
    from archkit import api

    def progress(msg: str) -> None:
        sys.stderr.write(f"calibrate: {msg}\n")
        sys.stderr.flush()

    opts = api.CalibrationOptions(
        env=env,
        triton=triton,
        token=_token(token_file),
        inputs=inputs,
        dim=dim,
        requests=requests,
        batch_sizes=_ints(batch_sizes, "--batch-sizes"),
        concurrency=_ints(concurrency, "--concurrency"),
        seconds=seconds,
        budget_s=budget_s,
        models=list(model or []),
        llm_url=llm_url,
        service=service,
        output=output,
    )
    try:
        outcome = api.calibrate(spec, opts, progress)
    except api.ArchkitError as exc:  # a spec, option or target problem, or a failed measurement
        raise fail(str(exc), 2) from None
    doc, text, out = outcome.doc, outcome.text, outcome.path
    if format is CalibrateFormat.json:
        typer.echo(text, nl=False)
        return
    for stage_id, e in doc.get("llm", {}).items():
        pf, dc, kv = e["prefill"], e["decode"], e["kv_capacity"]
        typer.echo(
            f"{stage_id}: prefill {pf['ms_per_token']} ms/token + {pf['fixed_ms']} ms ({pf['tokens_per_s']} tokens/s); "
            f"decode step {dc['base_ms']} ms + {dc['per_sequence_ms']} ms per further sequence + "
            f"{dc['per_context_token_ms']} ms per context token; KV {kv['tokens']} tokens ({kv['slots']} slots)"
            + _per_request_text(e.get("per_request"))
        )
    for name, m in doc["models"].items():
        for b in m["batches"]:
            s = b["service_ms"]
            typer.echo(
                f"{name} (stage {m['stage']}) batch {b['batch_size']}: service P50 {s['p50']} ms, P95 {s['p95']} ms, "
                f"mean {s['mean']} ms over {b['requests']} requests; queue mean {b['queue_ms']['mean']} ms"
            )
        for c in m["concurrency"]:
            typer.echo(
                f"{name} concurrency {c['concurrency']}: {c['throughput_rps']} req/s (x{c['speedup']}), "
                f"compute {c['compute_ms_mean']} ms per request"
            )
    for line in doc.get("warnings") or []:  # a disturbed host: the readings are uncertain
        typer.echo(f"warning: {line}")
    typer.echo(f"calibration: {out}")
    typer.echo(f"use it: environments[].calibration: {os.path.relpath(out, spec.resolve().parent)}")


def _per_request_text(pr: object) -> str:
    if not isinstance(pr, dict):
        return ""
    return (
        f"; per request {pr['request_overhead_ms']} ms in the engine + {pr['client_overhead_ms']} ms "
        f"outside it ({pr['points']} requests)"
    )
