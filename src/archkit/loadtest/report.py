"""The sign-off report: JSON, JUnit XML, Markdown, self-contained HTML with plots, and measured.json.

Files written into the report folder (atomically; a folder archkit did not create is refused
unless it is empty):

- `result.json`   everything: plan, measurements, per-second samples, verdicts, alerts, environment;
- `junit.xml`     one testcase per budget (skipped when not judged), for CI;
- `report.md`, `report.html`  budgets beside measurements with pass/fail, the decomposition,
  fired alerts, the environment; the HTML embeds its plots as PNG data URIs;
- `measured.json` what `archkit render --measured` overlays on the diagrams. Schema
  (all times in ms; absent keys were not measured):

      {"apiVersion": "archkit/v1", "kind": "measured", "spec": "<metadata.name>",
       "level": "<level id>", "level_kind": "baseline|stress|chaos", "env": "<env id or null>",
       "end_to_end": {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "throughput_rps", "error_rate", "requests"},
       "scenarios": {scenario_id: {"p50_ms", "p95_ms", "p99_ms", "throughput_rps", "error_rate"}},
       "stages": {stage_id: {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "count"}},   # server-side
       "models": {model: {"queue_ms", "compute_input_ms", "compute_infer_ms", "compute_output_ms",
                          "request_ms", "requests"}},                              # Triton counters
       "network_serialisation_ms": float,   # client mean minus server mean
       "stress": {"knee_rps", "failure_mode"}, "passed": bool,
       "end_to_end_from_send": {...}, "generator": {...},   # open model: actual-send latency, schedule
       "predicted": {"source", "rate_rps", "end_to_end": {key: {"predicted", "measured", "error_pct"}},
                     "stages": {stage_id: {key: {...}}}, "knee_rps": {...}}}   # loadtest/compare.py
- `locustfile.py`, `plan.json`, `locust.log`: what ran, for reproduction.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from archkit.atomic import write_atomic
from archkit.errors import InputError
from archkit.loadtest import compare as compare_mod
from archkit.loadtest import generator as generator_mod
from archkit.loadtest.report_plots import plots
from archkit.loadtest.results import junit_xml
from archkit.loadtest.scrape import ENGINE_FAMILY

MARKER = ".archkit-loadtest"
FILES = ("result.json", "junit.xml", "report.md", "report.html", "measured.json")


class ReportDirError(InputError, ValueError):
    """The report folder holds files archkit did not write."""


def prepare_dir(path: Path) -> Path:
    """Create the report folder, or accept it if archkit made it or it is empty."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ReportDirError(f"{path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not (path / MARKER).exists():
        raise ReportDirError(
            f"{path} is not empty and was not written by archkit loadtest; choose another --report"
        )
    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text("archkit loadtest report folder\n", encoding="utf-8")
    return path


def _write(path: Path, data: str | bytes) -> None:
    write_atomic(path, data)


# --------------------------------------------------------------------------- JSON


def result_json(res) -> dict:
    """The whole result as plain JSON."""
    return {
        "apiVersion": "archkit/v1",
        "kind": "loadtest-result",
        "spec": res.spec_name,
        "spec_file": res.spec_file,
        "env": res.env,
        "level": res.plan.level,
        "level_kind": res.plan.kind,
        "passed": res.passed,
        "plan": res.plan.to_json() | {"locustfile": "locustfile.py", "payload_root": res.plan.payload_root},
        "budgets": res.budgets,
        "verdicts": [v.to_json() for v in res.verdicts],
        "measured": res.measured,
        "alerts": res.alerts,
        "alert_notes": res.alert_notes,
        "environment": res.environment,
        "wall_s": res.data.wall_s,
        "stopped": res.data.stopped,
        "error_messages": dict(sorted(res.data.total.messages.items(), key=lambda kv: -kv[1])[:10]),
    }


def measured_json(res) -> dict:
    """The overlay for `archkit render --measured` (schema in the module docstring)."""
    m = res.measured
    e2e = m.get("end_to_end", {})
    dec = m.get("decomposition") or {}
    keys = ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "throughput_rps", "error_rate", "requests")
    out = {
        "apiVersion": "archkit/v1",
        "kind": "measured",
        "spec": res.spec_name,
        "level": res.plan.level,
        "level_kind": res.plan.kind,
        "env": res.env,
        "end_to_end": {k: e2e.get(k) for k in keys if e2e.get(k) is not None},
        "scenarios": {
            sid: {
                k: s.get(k)
                for k in ("p50_ms", "p95_ms", "p99_ms", "throughput_rps", "error_rate")
                if s.get(k) is not None
            }
            for sid, s in m.get("scenarios", {}).items()
        },
        "stages": {
            sid: {k: v for k, v in st.items() if k != "metric"} for sid, st in dec.get("stages", {}).items()
        },
        "models": dec.get("models", {}),
        "passed": res.passed,
    }
    if dec.get("network_serialisation_ms") is not None:
        out["network_serialisation_ms"] = dec["network_serialisation_ms"]
    out.update(compare_mod.measured_extras(m, keys))
    if m.get("stress"):
        out["stress"] = {
            "knee_rps": m["stress"].get("knee_rps"),
            "failure_mode": m["stress"].get("failure_mode"),
        }
    return out


# --------------------------------------------------------------------------- Markdown / HTML


def _v(x, unit: str = "") -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        x = f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"
    return f"{x}{(' ' + unit) if unit else ''}"


def _mark(v) -> str:
    return {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}.get(v.outcome, "not judged")


def _samples(v) -> str:
    return "—" if v.samples is None else str(v.samples)


Section = tuple[str, list[str], list[list[str]], list[str]]


def sections(res) -> list[Section]:
    """The report as (title, table header, rows, notes) sections, shared by Markdown and HTML."""
    m = res.measured
    out = [_budgets_section(res), _measured_section(res)]
    extra = (generator_mod.section(m.get("generator")), compare_mod.section(m.get("predicted")))
    out += [x for x in extra if x is not None]
    for optional in (_stress_section(res), _chaos_section(res), _decomposition_section(res)):
        if optional is not None:
            out.append(optional)
    out += [_alerts_section(res), _environment_section(res)]
    return out


def _budgets_section(res) -> Section:
    """Each budget's verdict with its sample size."""
    return (
        "Budgets",
        ["budget", "limit", "measured", "samples", "result", "why"],
        [
            [
                v.id,
                f"{v.op} {_v(v.budget, v.unit)}" if v.budget is not None else "—",
                _v(
                    v.measured if v.unit != "ratio" or v.measured is None else round(v.measured * 100, 4),
                    "%" if v.unit == "ratio" else v.unit,
                ),
                _samples(v),
                _mark(v),
                v.why,
            ]
            for v in res.verdicts
        ],
        (
            [
                "A percentile budget is judged on its 95 % order-statistics interval: met when the "
                "whole interval is within the budget, missed when it is all beyond, otherwise "
                "INCONCLUSIVE (counts as met unless `--strict`; its why says how long a run would "
                "decide it)."
            ]
            if res.verdicts
            else ["The spec declares no budget that this level can judge."]
        ),
    )


def _measured_section(res) -> Section:
    """End to end and per scenario, client side."""
    m = res.measured
    e2e = m.get("end_to_end", {})
    rows = [
        [
            "end to end",
            _v(e2e.get("requests")),
            _v(e2e.get("error_rate")),
            _v(e2e.get("throughput_rps")),
            _v(e2e.get("p50_ms")),
            _v(e2e.get("p95_ms")),
            _v(e2e.get("p99_ms")),
            _v(e2e.get("max_ms")),
        ]
    ]
    for sid, s in m.get("scenarios", {}).items():
        rows.append(
            [
                f"scenario {sid}",
                _v(s.get("requests")),
                _v(s.get("error_rate")),
                _v(s.get("throughput_rps")),
                _v(s.get("p50_ms")),
                _v(s.get("p95_ms")),
                _v(s.get("p99_ms")),
                _v(s.get("max_ms")),
            ]
        )
    return (
        "Measured (client side, every request, HDR histograms)",
        ["what", "requests", "error rate", "req/s ok", "P50 ms", "P95 ms", "P99 ms", "max ms"],
        rows,
        [
            f"Offered rate {_v(m.get('offered_rps'), 'req/s')}, {res.plan.users} users, "
            f"{_v(m.get('duration_s'), 's')} measured; stopped: {m.get('stopped') or '—'}."
        ],
    )


def _stress_section(res) -> Section | None:
    """Each stress step, the knee and what happens past it."""
    m = res.measured
    if not (m.get("phases") and res.plan.kind == "stress"):
        return None
    st = m.get("stress") or {}
    return (
        "Stress steps",
        [
            "offered req/s",
            "achieved ok req/s",
            "error rate",
            "P50 ms",
            "P99 ms",
            "statuses",
            "within budgets",
        ],
        [
            [
                _v(p["offered_rps"]),
                _v(p["throughput_rps"]),
                _v(p["error_rate"]),
                _v(p["p50_ms"]),
                _v(p["p99_ms"]),
                ", ".join(f"{k}: {n}" for k, n in p["statuses"].items()),
                "yes" if _step_ok(res, p) else "no",
            ]
            for p in m["phases"]
        ],
        [
            f"Knee: {_v(st.get('knee_rps'), 'req/s')} (highest throughput of the steps that met the P99 "
            f"and error budgets).",
            f"Past the knee: {st.get('failure_mode')}",
        ],
    )


def _chaos_section(res) -> Section | None:
    """Each fault: its burst of errors, its recovery, the fallback answers."""
    m = res.measured
    if not m.get("chaos"):
        return None
    return (
        "Chaos faults",
        [
            "fault",
            "applied at",
            "ended",
            "errors in burst",
            "peak error rate",
            "worst P99 ms",
            "recovery s",
            "fallback answers",
        ],
        [
            [
                f"{f['action']} {f['target']}",
                _v(f.get("started_s"), "s"),
                _v(f.get("ended_s"), "s"),
                f"{f.get('burst_errors', '—')} of {f.get('burst_requests', '—')}",
                _v(f.get("peak_error_rate")),
                _v(f.get("worst_p99_ms")),
                _v(f.get("recovery_s")),
                (
                    f"{f.get('fallback_answers', 0)} × status {f['fallback_status']} ({f['expect_fallback']})"
                    if f.get("fallback_status") is not None
                    else (
                        f"{f['expect_fallback']}: no status to recognise" if f.get("expect_fallback") else "—"
                    )
                ),
            ]
            for f in m["chaos"]
        ],
        [f"fault {f['index'] + 1}: {f['error']}" for f in m["chaos"] if f.get("error")]
        + [n for f in m["chaos"] for n in f.get("notes", [])],
    )


def _decomposition_section(res) -> Section | None:
    """Client, server, network and per-stage and per-model server time (seed 000 §2.1)."""
    dec = res.measured.get("decomposition") or {}
    if not (dec.get("stages") or dec.get("models") or dec.get("server")):
        return None
    rows = [["client observed (mean)", _v((dec.get("client") or {}).get("mean_ms")), "every request, HDR"]]
    if dec.get("server"):
        rows.append(["server side (mean)", _v(dec["server"]["mean_ms"]), dec["server"]["source"]])
        rows.append(["network + serialisation", _v(dec.get("network_serialisation_ms")), "client − server"])
    for sid, s in dec.get("stages", {}).items():
        if "queue_ms" in s:
            detail = (
                f"queue {_v(s.get('queue_ms'))} + compute {_v(s.get('compute_ms'))} ms per request "
                f"from {s.get('metric')} ({s.get('count')} requests)"
            )
        else:
            detail = (
                f"P50 {_v(s.get('p50_ms'))} / P99 {_v(s.get('p99_ms'))} ms from {s.get('metric')} "
                f"({s.get('count')} obs.)"
            )
        rows.append([f"stage {sid}", _v(s.get("mean_ms")), detail])
    for model, mm in dec.get("models", {}).items():
        for part in (
            "queue_ms",
            "compute_input_ms",
            "compute_infer_ms",
            "compute_output_ms",
            "request_ms",
        ):
            if part in mm:
                rows.append(
                    [
                        f"model {model}: {part[:-3].replace('_', ' ')}",
                        _v(mm[part]),
                        f"{ENGINE_FAMILY} counters over {mm['requests']} requests",
                    ]
                )
    return (
        "Latency decomposition (ms)",
        ["part", "mean ms", "source"],
        rows,
        ["Seed 000 §2.1: network, queue and compute measured apart, not guessed."],
    )


def _alerts_section(res) -> Section:
    """Alerts that went pending or fired during the run."""
    alerts = res.alerts
    return (
        "Alerts (live Prometheus)",
        ["alert", "labels", "pending at", "firing at", "last seen"],
        [
            [
                a["alert"],
                ", ".join(f"{k}={v}" for k, v in a["labels"].items()),
                _v(a["pending_s"], "s"),
                _v(a["firing_s"], "s"),
                _v(a["last_seen_s"], "s"),
            ]
            for a in alerts
        ],
        list(res.alert_notes) + ([] if alerts else ["No alert went pending or fired during the run."]),
    )


def _environment_section(res) -> Section:
    """Where and with what the run was made."""
    env = res.environment
    return (
        "Environment",
        ["", ""],
        [
            ["CPU", f"{env.get('cpu')} ({env.get('cores')} cores)"],
            ["load average", _v(env.get("load_average"))],
            ["python", env.get("python", "?")],
            ["platform", env.get("platform", "?")],
        ]
        + [[k, v] for k, v in env.get("versions", {}).items()]
        + [
            ["spec", f"{res.spec_file}" + (f" (environment {res.env})" if res.env else "")],
            ["target", res.plan.host],
            ["level", f"{res.plan.level} ({res.plan.kind})"],
        ],
        [],
    )


def _step_ok(res, p: dict) -> bool:
    b = res.budgets
    err = b.get("error_rate", 0.01)
    return (
        bool(p.get("requests"))
        and (p.get("error_rate") or 0) <= err
        and ("p99_ms" not in b or (p.get("p99_ms") is not None and p["p99_ms"] <= b["p99_ms"]))
    )


def _md_cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


OVERLAY_TITLE = "Predicted latency vs load, with the measured points"
OVERLAY_NOTE = (
    "report.html draws the whole-pipeline model's P50/P99 and shed share against the offered rate "
    "(what `archkit capacity --rate A:B:STEP --plot` draws), with each step of this run on it: "
    "○ its P99, □ its P50."
)


def markdown(res, images: dict[str, bytes]) -> str:
    verdict = "PASSED" if res.passed else "FAILED"
    lines = [f"# Load test: {res.spec_name}, level {res.plan.level} ({res.plan.kind}) — {verdict}", ""]
    failed = [v for v in res.verdicts if v.passed is False]
    if failed:
        lines += ["Missed budgets:", ""] + [f"- **{v.id}**: {v.why}" for v in failed] + [""]
    undecided = [v for v in res.verdicts if v.inconclusive]
    if undecided:
        lines += ["Inconclusive budgets:", ""] + [f"- **{v.id}**: {v.why}" for v in undecided] + [""]
    for title, head, rows, notes in sections(res):
        lines += [f"## {title}", ""]
        if rows:
            lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
            lines.append("")
        lines += [f"{n}" for n in notes] + ([""] if notes else [])
    if images:
        lines += ["## Plots", "", "See report.html (plots are embedded there).", ""]
    if (res.measured.get("predicted") or {}).get("curve"):
        lines += [f"## {OVERLAY_TITLE}", "", OVERLAY_NOTE, ""]
    return "\n".join(lines)


def html_page(res, images: dict[str, bytes]) -> str:
    e = html.escape
    verdict = "PASSED" if res.passed else "FAILED"
    colour = "#1a7f37" if res.passed else "#cf222e"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>archkit loadtest {e(res.spec_name)} {e(res.plan.level)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:0.5em 0 1em}td,th{border:1px solid #ccc;padding:3px 8px;"
        "font-size:13px;text-align:left}th{background:#f3f3f3}.PASS{color:#1a7f37;font-weight:bold}"
        ".FAIL{color:#cf222e;font-weight:bold}img{max-width:100%}</style></head><body>",
        f"<h1>Load test: {e(res.spec_name)}, level {e(res.plan.level)} ({e(res.plan.kind)}) — "
        f'<span style="color:{colour}">{verdict}</span></h1>',
    ]
    failed = [v for v in res.verdicts if v.passed is False]
    if failed:
        parts.append(
            "<p>Missed budgets:</p><ul>"
            + "".join(f"<li><b>{e(v.id)}</b>: {e(v.why)}</li>" for v in failed)
            + "</ul>"
        )
    undecided = [v for v in res.verdicts if v.inconclusive]
    if undecided:
        parts.append(
            "<p>Inconclusive budgets:</p><ul>"
            + "".join(f"<li><b>{e(v.id)}</b>: {e(v.why)}</li>" for v in undecided)
            + "</ul>"
        )
    for name in ("latency", "throughput", "load"):
        if name in images:
            data = base64.b64encode(images[name]).decode("ascii")
            parts.append(f'<img alt="{name} plot" src="data:image/png;base64,{data}">')
    overlay = compare_mod.curve_overlay(res.measured)
    if overlay:
        parts += [f"<h2>{e(OVERLAY_TITLE)}</h2>", overlay]
    for title, head, rows, notes in sections(res):
        parts.append(f"<h2>{e(title)}</h2>")
        if rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
            for r in rows:
                cells = []
                for c in r:
                    cls = f' class="{c}"' if c in ("PASS", "FAIL") else ""
                    cells.append(f"<td{cls}>{e(str(c))}</td>")
                parts.append("<tr>" + "".join(cells) + "</tr>")
            parts.append("</table>")
        parts += [f"<p>{e(n)}</p>" for n in notes]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write(res, folder: Path, with_plots: bool = True) -> dict[str, Path]:
    """Write every report file into `folder` (already prepared) and return their paths."""
    folder = Path(folder)
    images = plots(res) if with_plots else {}
    files = {
        "result.json": json.dumps(result_json(res), indent=1, ensure_ascii=False, default=str) + "\n",
        "measured.json": json.dumps(measured_json(res), indent=1, ensure_ascii=False, sort_keys=True) + "\n",
        "junit.xml": junit_xml(res),
        "report.md": markdown(res, images),
        "report.html": html_page(res, images),
    }
    out = {}
    for name, text in files.items():
        _write(folder / name, text)
        out[name] = folder / name
    return out
