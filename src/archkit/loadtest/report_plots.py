"""The sign-off report's plots (PNG, embedded in report.html): latency and throughput over time,
and against the offered load in a stress run."""

from __future__ import annotations

import io


def plots(res) -> dict[str, bytes]:
    """PNG plots: latency and throughput over time; latency and throughput against offered load (stress)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, bytes] = {}
    secs = res.measured.get("seconds") or []
    b = res.budgets
    faults = res.measured.get("chaos") or []

    def shade(ax):
        for f in faults:
            if f.get("started_s") is not None:
                end = f.get("ended_s") or f["started_s"]
                ax.axvspan(
                    f["started_s"],
                    max(end, f["started_s"] + 0.2),
                    color="tab:red",
                    alpha=0.15,
                    label=f"fault: {f['action']} {f['target']}",
                )

    def png(fig) -> bytes:
        buf = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=90, metadata={"Software": None})
        plt.close(fig)
        return buf.getvalue()

    if secs:
        t = [r["t"] for r in secs]
        fig, ax = plt.subplots(figsize=(8, 3.2))
        # markers too: a second between two seconds without completions is otherwise invisible
        ax.plot(t, [r["p50_ms"] for r in secs], label="P50", color="tab:blue", marker=".", markersize=4)
        ax.plot(t, [r["p99_ms"] for r in secs], label="P99", color="tab:orange", marker=".", markersize=4)
        for key, style in (("p50_ms", ":"), ("p99_ms", "--")):
            if key in b:
                ax.axhline(
                    b[key], linestyle=style, color="grey", label=f"budget {key[:3].upper()} {b[key]:g} ms"
                )
        shade(ax)
        ax.set_xlabel("time since start (s)")
        ax.set_ylabel("latency per second (ms)")
        ax.set_title("Latency over time (exact, per-second HDR percentiles)")
        ax.legend(fontsize=7, loc="upper left")
        out["latency"] = png(fig)

        fig, ax = plt.subplots(figsize=(8, 3.2))
        ax.plot(t, [r["requests"] - r["errors"] for r in secs], label="successful req/s", color="tab:green")
        ax.plot(t, [r["errors"] for r in secs], label="errors/s", color="tab:red")
        offered = [r.get("offered_rps") for r in secs]
        if any(o is not None for o in offered):
            ax.step(
                t,
                [o or 0 for o in offered],
                where="post",
                label="offered req/s",
                color="grey",
                linestyle="--",
            )
        if "throughput_rps" in b:
            ax.axhline(
                b["throughput_rps"],
                linestyle=":",
                color="black",
                label=f"design rate {b['throughput_rps']:g}",
            )
        shade(ax)
        ax.set_xlabel("time since start (s)")
        ax.set_ylabel("requests per second")
        ax.set_title("Throughput over time")
        ax.legend(fontsize=7, loc="upper left")
        out["throughput"] = png(fig)

    phases = res.measured.get("phases") or []
    if res.plan.kind == "stress" and phases:
        x = [p["offered_rps"] for p in phases]
        fig, ax = plt.subplots(figsize=(8, 3.4))
        ax.plot(x, [p["p50_ms"] for p in phases], marker="o", label="P50")
        ax.plot(x, [p["p99_ms"] for p in phases], marker="o", label="P99")
        if "p99_ms" in b:
            ax.axhline(b["p99_ms"], linestyle="--", color="grey", label=f"budget P99 {b['p99_ms']:g} ms")
        knee = (res.measured.get("stress") or {}).get("knee_offered_rps")
        if knee:
            ax.axvline(knee, color="tab:green", linestyle=":", label=f"knee (offered {knee:g} req/s)")
        ax2 = ax.twinx()
        ax2.plot(
            x,
            [p["throughput_rps"] for p in phases],
            marker="s",
            color="tab:green",
            alpha=0.6,
            label="throughput",
        )
        ax2.set_ylabel("achieved req/s")
        ax.set_xlabel("offered load (req/s)")
        ax.set_ylabel("latency (ms)")
        ax.set_title("Latency against offered load (one point per stress step)")
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="upper left")
        out["load"] = png(fig)
    return out
