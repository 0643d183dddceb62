"""The llama.cpp source: a running llama-server's slots, context, model file and metrics against the spec.

Reads the server's own endpoints (llama.cpp tools/server README): `/health` (200 once the model is
loaded, 503 while it loads), `/props` (`total_slots`, `model_path`,
`default_generation_settings.n_ctx` = context per slot), `/slots` (each slot's `n_ctx`) and
`/metrics` (the `llamacpp:*` series of `archkit.engines.llamacpp`, only with `--metrics`). Each
LLM stage whose `llm.engine.name` is `llama.cpp` is checked; one server is one replica.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from archkit import engines
from archkit.atomic import file_sha256
from archkit.spec.llm import LlmEngineName, LlmStage, TokenLengths
from archkit.spec.model import Spec, Stage
from archkit.verify.findings import Finding, Recorder
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source
from archkit.verify.source_checks import SourceContext

SOURCE = "llama.cpp tools/server README (API endpoints)"


class LlamaCppContext(SourceContext):
    """The spec, the recorder, the server and the LLM stage it serves, shared by one run's checks."""

    source_title = "llama-server"

    def __init__(self, spec: Spec, url: str, timeout_s: float, stage: Stage, llm: LlmStage):
        super().__init__(spec, "llamacpp")
        self.url, self.timeout_s = url, timeout_s
        self.base = url.rstrip("/") if "://" in url else f"http://{url.rstrip('/')}"
        self.stage, self.llm = stage, llm
        self.label = f"stage/{stage.id}"
        self.adapter = engines.adapter("llama.cpp")

    def get(self, path: str) -> tuple[int, str]:
        """(status, body) of GET `path` on the server; raises OSError when it cannot be read."""
        return _get(self.base + path, self.timeout_s)


class LlamaCppCheck(Check):
    """A check of the llama-server against the LLM stage it serves; `props` is its /props answer."""

    def run(self, ctx: LlamaCppContext, props: Mapping[str, Any]) -> None:
        raise NotImplementedError  # pragma: no cover - abstract


class EngineHealth(LlamaCppCheck):
    """The server answers and has its model loaded."""

    code = Code(
        "VL400",
        "llama-server reachable",
        "The llama-server given with --llamacpp-url must answer /health.",
        SOURCE,
    )
    also = (
        Code(
            "VL401",
            "model loaded",
            "/health answers 200 once the model is loaded; 503 means it is still loading or failed to.",
            "seed 000 §3.4",
        ),
    )
    model_loaded = also[0]

    @classmethod
    def resolve(cls, ctx: LlamaCppContext) -> bool:
        """Whether the server answers /health with its model loaded (reported either way)."""
        r, label, engine, base = ctx.rec, ctx.label, ctx.llm.engine, ctx.base
        try:
            health, body = ctx.get(ctx.adapter.endpoints.ready or "/health")
        except (OSError, ValueError) as exc:
            r.unknown(cls.code, label, engine, f"cannot reach llama-server at {ctx.url}: {exc}")
            return False
        r.ok(cls.code, label, engine, "answers /health", where=base)
        if health != 200:
            r.drift(
                cls.model_loaded,
                label,
                engine,
                f"/health answers {health}: the model is not loaded ({body[:120]})",
                where=base,
            )
            return False
        r.ok(cls.model_loaded, label, engine, "model loaded", where=base)
        return True


class Slots(LlamaCppCheck):
    """The server runs as many slots (concurrent sequences) as the spec's max_num_seqs."""

    code = Code(
        "VL410",
        "slots = max_num_seqs",
        "llama-server's --parallel slots are its maximum running sequences; the capacity model and the "
        "admission limit assume the spec's llm.engine.max_num_seqs.",
        SOURCE + " (/props total_slots)",
    )

    def run(self, ctx: LlamaCppContext, props: Mapping[str, Any]) -> None:
        rec, label, llm, where = ctx.rec, ctx.label, ctx.llm, ctx.base
        slots, want = props.get("total_slots"), llm.engine.max_num_seqs
        if not isinstance(slots, int):
            rec.unknown(
                self.code, label, llm.engine, "/props has no total_slots", field="max_num_seqs", where=where
            )
        elif slots == want:
            rec.ok(self.code, label, llm.engine, f"{slots} slots", field="max_num_seqs", where=where)
        else:
            rec.drift(
                self.code,
                label,
                llm.engine,
                f"llama-server runs {slots} slots (--parallel); the spec says max_num_seqs {want}",
                field="max_num_seqs",
                where=where,
            )


class Context(LlamaCppCheck):
    """Each slot's context is the context the spec declares for a request."""

    code = Code(
        "VL411",
        "context per slot",
        "A request longer than a slot's context is refused (exceed_context_size_error); the spec's "
        "llm.model.max_context_tokens is what a request may use.",
        SOURCE + " (/props default_generation_settings.n_ctx)",
    )

    def run(self, ctx: LlamaCppContext, props: Mapping[str, Any]) -> None:
        rec, label, llm, where = ctx.rec, ctx.label, ctx.llm, ctx.base
        settings = props.get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        want = llm.model.architecture().max_context_tokens
        fld = "max_context_tokens"
        if not isinstance(n_ctx, int):
            rec.unknown(
                self.code,
                label,
                llm.model,
                "/props has no default_generation_settings.n_ctx",
                field=fld,
                where=where,
            )
        elif n_ctx == want:
            rec.ok(self.code, label, llm.model, f"{n_ctx} tokens per slot", field=fld, where=where)
        else:
            rec.drift(
                self.code,
                label,
                llm.model,
                f"each slot holds {n_ctx} tokens (--ctx-size / --parallel); the spec says max_context_tokens {want}",
                field=fld,
                where=where,
            )


class ModelFile(LlamaCppCheck):
    """The GGUF the server loaded has the SHA-256 the spec pins."""

    code = Code(
        "VL412",
        "model file hash",
        "The served model file is the one the spec names (stage model.sha256): a different file is a "
        "different model, whatever its name.",
        "seed 000 §5.12 (models as versioned artefacts)",
    )

    def run(self, ctx: LlamaCppContext, props: Mapping[str, Any]) -> None:
        rec, label, stage, llm, where = ctx.rec, ctx.label, ctx.stage, ctx.llm, ctx.base
        path = props.get("model_path")
        pinned = stage.model.sha256 if stage.model is not None else None
        node, fld = (stage.model, "sha256") if stage.model is not None else (llm.model, None)
        if not pinned:
            rec.unknown(
                self.code,
                label,
                node,
                "the spec pins no model file (stage model.sha256)",
                field=fld,
                where=where,
            )
            return
        if not isinstance(path, str) or not Path(path).is_file():
            rec.unknown(
                self.code,
                label,
                node,
                f"the model file {path!r} is not readable here (a remote engine?)",
                field=fld,
                where=where,
            )
            return
        digest = file_sha256(Path(path))
        if digest == pinned:
            rec.ok(self.code, label, node, f"{Path(path).name}: SHA-256 matches", field=fld, where=where)
        else:
            rec.drift(
                self.code,
                label,
                node,
                f"llama-server serves {Path(path).name} with SHA-256 {digest[:12]}…; the spec pins {pinned[:12]}…",
                field=fld,
                where=where,
            )


class KvCapacity(LlamaCppCheck):
    """The KV cache holds the declared concurrency at the workload's longest request."""

    code = Code(
        "VL413",
        "KV capacity",
        "Every slot's context together must hold max concurrency x (longest prompt + longest output) "
        "tokens, and one slot one whole request, or requests are cut short or refused.",
        SOURCE + " (/slots n_ctx)",
    )

    def run(self, ctx: LlamaCppContext, props: Mapping[str, Any]) -> None:
        rec, label, llm = ctx.rec, ctx.label, ctx.llm
        url = ctx.base + ctx.adapter.endpoints.extra["slots"]
        try:
            status, body = _get(url, ctx.timeout_s)
            slots = json.loads(body) if status == 200 else None
        except (OSError, ValueError) as exc:
            rec.unknown(self.code, label, llm.workload, f"cannot read /slots: {exc}", where=url)
            return
        if not isinstance(slots, list) or not all(isinstance(s, dict) and "n_ctx" in s for s in slots):
            rec.unknown(self.code, label, llm.workload, f"/slots answers {status}: no slot list", where=url)
            return
        per_request = longest(llm.workload.prompt_tokens) + longest(llm.workload.output_tokens)
        concurrency = llm.workload.max_concurrency or llm.engine.max_num_seqs
        total = sum(int(s["n_ctx"]) for s in slots)
        smallest = min(int(s["n_ctx"]) for s in slots) if slots else 0
        need = concurrency * per_request
        declared = llm.engine.kv_capacity_tokens
        if declared is not None and declared != total:  # the figure the capacity model predicts from
            rec.drift(
                self.code,
                label,
                llm.engine,
                f"the KV cache holds {total} tokens over {len(slots)} slots (--ctx-size); the spec says "
                f"kv_capacity_tokens {declared}",
                field="kv_capacity_tokens",
                where=url,
            )
        elif per_request > smallest:
            rec.drift(
                self.code,
                label,
                llm.workload,
                f"the longest request ({per_request} tokens: prompt + output) exceeds a slot's context of {smallest}",
                where=url,
            )
        elif total < need:
            rec.drift(
                self.code,
                label,
                llm.workload,
                f"the KV cache holds {total} tokens over {len(slots)} slots; {concurrency} concurrent requests of "
                f"{per_request} tokens need {need}",
                where=url,
            )
        else:
            rec.ok(
                self.code,
                label,
                llm.workload,
                f"{total} KV tokens over {len(slots)} slots hold {concurrency} x {per_request} tokens",
                where=url,
            )


class Metrics(LlamaCppCheck):
    """The server exports the series the alert rules and dashboards read, and its slots endpoint."""

    code = Code(
        "VL420",
        "metrics exported",
        "Alert rules and dashboards read the llamacpp:* series; llama-server exports them only with "
        "--metrics, and /slots only without --no-slots.",
        "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
    )

    def run(self, ctx: LlamaCppContext, props: Mapping[str, Any]) -> None:
        rec, label, llm, base, adapter = ctx.rec, ctx.label, ctx.llm, ctx.base, ctx.adapter
        url = base + (adapter.endpoints.metrics or "/metrics")
        try:
            status, text = _get(url, ctx.timeout_s)
            slots_status = ctx.get(adapter.endpoints.extra["slots"])[0]
        except OSError as exc:
            rec.unknown(self.code, label, llm.engine, f"cannot read /metrics: {exc}", where=url)
            return
        present = {
            line.split(" ", 1)[0].split("{", 1)[0] for line in text.splitlines() if not line.startswith("#")
        }
        wanted = sorted({m.name for ms in adapter.measures.values() for m in ms})
        missing = [n for n in wanted if n not in present] if status == 200 else wanted
        problems = []
        if missing:
            problems.append(
                f"/metrics answers {status} and lacks {', '.join(missing[:4])}"
                + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
                + " (start llama-server with --metrics)"
            )
        if slots_status != 200:
            problems.append(f"/slots answers {slots_status} (started with --no-slots?)")
        if problems:
            rec.drift(self.code, label, llm.engine, "; ".join(problems), where=url)
        else:
            rec.ok(self.code, label, llm.engine, f"{len(wanted)} llamacpp:* series and /slots", where=url)


def llamacpp_stages(spec: Spec) -> list[tuple[Stage, LlmStage]]:
    """LLM stages the spec serves with llama.cpp."""
    return [
        (st, st.llm)
        for st in spec.dataflow.stages
        if st.llm is not None and st.llm.engine.name is LlmEngineName.llamacpp
    ]


def longest(t: TokenLengths) -> int:
    """The most tokens a distribution yields: its bound, else mean + 3 std, else the CDF's end."""
    if t.max_tokens is not None:
        return t.max_tokens
    if t.distribution == "empirical" and t.cdf:
        return t.cdf[-1][0]
    return int((t.mean_tokens or 0) + 3 * (t.std_tokens or 0))


def _get(url: str, timeout_s: float) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 - the operator's URL
            return resp.status, resp.read(4 * 1024 * 1024).decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(65536).decode(errors="replace")


def check_llamacpp(spec: Spec, url: str, timeout_s: float = 5.0) -> list[Finding]:
    """Every llama.cpp check of `spec` against the llama-server at `url`."""
    stages = llamacpp_stages(spec)
    if not stages:
        rec = Recorder(spec, "llamacpp")
        rec.unknown(
            EngineHealth.code,
            f"server {url}",
            spec.dataflow,
            "no llm stage with engine llama.cpp in the spec",
        )
        return rec.findings
    ctx = LlamaCppContext(spec, url, timeout_s, *stages[0])
    if not EngineHealth.resolve(ctx):
        return ctx.rec.findings
    try:
        props = json.loads(ctx.get(ctx.adapter.endpoints.model_config or "/props")[1])
    except (OSError, ValueError) as exc:
        ctx.rec.unknown(
            Slots.code,
            ctx.label,
            ctx.llm.engine,
            f"cannot read /props: {exc}",
            field="max_num_seqs",
            where=ctx.base,
        )
        return ctx.rec.findings
    for chk in (Slots, Context, ModelFile, KvCapacity, Metrics):
        check = chk()
        ctx.guarded(check.code, ctx.label, ctx.llm, partial(check.run, ctx, props))
    return ctx.rec.findings


@register_source
class LlamaCppSource(Source):
    """A running llama.cpp llama-server: slots, context, model file, KV capacity and metrics."""

    name = "llamacpp"
    title = "llama.cpp"
    prefix = "VL"
    options = (Option("llamacpp_url", "llama-server's HTTP endpoint, e.g. http://127.0.0.1:8091."),)
    docs = (
        DocRow(
            "`--llamacpp-url URL`",
            "llama-server's `/health`, `/props`, `/slots` and `/metrics`",
            "per llm stage with `engine.name: llama.cpp`: model loaded, slots vs `max_num_seqs`, context per "
            "slot, SHA-256 of the loaded GGUF, KV capacity for the workload, the `llamacpp:*` series.",
        ),
    )
    checks = (EngineHealth, Slots, Context, ModelFile, KvCapacity, Metrics)

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return options["llamacpp_url"]

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        return Reading({"area": self.name, "source": given}, check_llamacpp(spec, given, timeout_s))
