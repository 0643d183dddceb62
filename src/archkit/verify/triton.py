"""The Triton source, through tritonclient: server health, each declared model READY at its version, its config."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from archkit import engines
from archkit.errors import require_extra
from archkit.spec.model import ModelInfo, Spec, Stage
from archkit.verify.findings import Finding
from archkit.verify.reach import Target, allowed, judge
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source
from archkit.verify.source_checks import SourceContext
from archkit.verify.triton_config import CONFIG_CHECKS, MaxBatchSize, check_config  # noqa: F401 (re-exported)

_ENDPOINTS = engines.adapter("triton").endpoints


class TritonContext(SourceContext):
    """The spec, the recorder, the client and the server's repository index shared by one Triton run."""

    source_title = "Triton"

    def __init__(self, spec: Spec, url: Target, client: Any, anchor: object):
        super().__init__(spec, "triton")
        self.url, self.client, self.anchor = url, client, anchor
        self.server = f"server {url}"
        self.index: list | None = None  # the repository index; None when the server will not list it


@dataclass
class ModelTarget:
    """A model stage being checked, and the label its findings carry."""

    stage: Stage
    model: ModelInfo
    label: str


class TritonCheck(Check):
    """A check of the Triton server or of one model it serves."""

    def run(self, ctx: TritonContext, target: Any) -> None:
        raise NotImplementedError  # pragma: no cover - abstract


class ServerHealth(TritonCheck):
    """The server answers, is live and is ready."""

    code = Code(
        "VT200",
        "Triton reachable",
        "The Triton endpoint given with --triton-url must answer.",
        "Triton HTTP/REST API",
    )
    server_live = Code(
        "VT201", "server live", f"Triton's {_ENDPOINTS.live}.", "Triton HTTP/REST API (health)"
    )
    server_ready = Code(
        "VT202",
        "server ready",
        f"Triton's {_ENDPOINTS.ready} (503 means a model failed to load).",
        "seed 000 §3.4",
    )
    also = (
        server_live,
        server_ready,
    )

    def run(self, ctx: TritonContext, live: bool) -> None:
        """Report the liveness the first call read, then ask for readiness."""
        r, url, server, anchor = ctx.rec, ctx.url, ctx.server, ctx.anchor
        if live:
            r.ok(self.server_live, server, anchor, "live")
        else:
            r.drift(self.server_live, server, anchor, f"Triton at {url} answers but is not live")
        if ctx.client.is_server_ready():
            r.ok(self.server_ready, server, anchor, "ready")
        else:
            r.drift(
                self.server_ready,
                server,
                anchor,
                f"Triton at {url} is not ready: a model failed to load (seed 000 §3.4: check the log for "
                "'Failed to load model')",
            )

    def unreachable(self, ctx: TritonContext, why: str) -> None:
        ctx.rec.unknown(self.code, ctx.server, ctx.anchor, why)


class ModelLoaded(TritonCheck):
    """Each model stage served by Triton is in its repository, READY at its declared version(s)."""

    code = Code(
        "VT210",
        "model present",
        "Each model stage the spec declares with server: triton is in the repository.",
        "Triton HTTP/REST API (model metadata)",
    )
    model_ready = Code(
        "VT211", "model ready", "The model is READY at its declared version(s).", "seed 000 §5.12"
    )
    also = (model_ready,)

    @classmethod
    def resolve(cls, ctx: TritonContext, t: ModelTarget) -> list[str] | None:
        """The model's versions from its metadata; None when it is missing or cannot be looked up."""
        r, model, label = ctx.rec, t.model, t.label
        known = sorted({e.get("name", "?") for e in ctx.index}) if ctx.index is not None else None
        try:
            meta = ctx.client.get_model_metadata(model.name) or {}
        except Exception as exc:
            text = _error_text(exc)
            if _status(exc) == "404" or "not found" in text:
                listing = f" (models: {', '.join(known) or 'none'})" if known is not None else ""
                r.drift(
                    cls.code,
                    label,
                    model,
                    f"stage '{t.stage.id}' declares model '{model.name}' but Triton does not have it{listing}",
                    field="name",
                )
            elif _status(exc) in ("400", "503") or "version" in text:
                r.ok(cls.code, label, model, "in the model repository", field="name")
                r.drift(
                    cls.model_ready,
                    label,
                    model,
                    f"model '{model.name}' is not READY: {text}",
                    field="name",
                )
            else:
                r.unknown(
                    cls.code, label, model, f"cannot look up model '{model.name}': {text}", field="name"
                )
            return None
        if not isinstance(meta, dict):
            r.unknown(
                cls.code,
                label,
                model,
                f"Triton's metadata of '{model.name}' is not a JSON object",
                field="name",
            )
            return None
        versions = [str(v) for v in meta.get("versions") or []]  # read first: a malformed list is unknown
        r.ok(cls.code, label, model, "in the model repository", field="name")
        return versions

    def run(self, ctx: TritonContext, t: ModelTarget, versions: list[str] | None = None) -> None:
        r, model, label = ctx.rec, t.model, t.label
        versions = versions or []
        wanted: list[str] = []
        if model.version and model.version.isdigit():
            wanted.append(model.version)
        if model.version_policy is not None:
            wanted += [str(v) for v in model.version_policy.specific]
        ready = sorted(
            {v for v in versions + wanted if ctx.client.is_model_ready(model.name, v)}, key=_version_key
        )
        not_ready = [v for v in wanted if v not in ready]
        if not ready:
            r.drift(
                self.model_ready,
                label,
                model,
                f"model '{model.name}' has no READY version (versions: {', '.join(versions) or 'none'})",
                field="name",
            )
        elif not_ready:
            r.drift(
                self.model_ready,
                label,
                model,
                f"model '{model.name}' version(s) {', '.join(not_ready)} not READY; READY: {', '.join(ready)}",
                field="version",
            )
        elif model.version and not model.version.isdigit():
            r.ok(
                self.model_ready,
                label,
                model,
                f"READY (versions {', '.join(ready)}); spec version '{model.version}' is a label, not a Triton "
                "version number, so it is not compared",
                field="version",
            )
        else:
            r.ok(self.model_ready, label, model, f"READY (versions {', '.join(ready)})", field="version")


def triton_models(spec: Spec) -> list[tuple[Stage, ModelInfo]]:
    """Model stages the spec serves with Triton (`model.server: triton`)."""
    return [
        (st, st.model)
        for st in spec.dataflow.stages
        if st.model is not None and (st.model.server or "").lower() == "triton"
    ]


def _client(url: Target, timeout_s: float):
    import tritonclient.http as httpclient

    ep = url.endpoint
    # plain HTTP goes to the judged address; TLS needs the name for its certificate check
    return httpclient.InferenceServerClient(
        url=ep.netloc if ep.scheme == "http" else ep.authority,
        ssl=ep.scheme == "https",
        connection_timeout=timeout_s,
        network_timeout=timeout_s,
    )


def _error_text(exc: BaseException) -> str:
    msg = getattr(exc, "message", None)
    text = msg() if callable(msg) else (msg or str(exc) or type(exc).__name__)
    return str(text).strip()


def check_triton(spec: Spec, url: str, timeout_s: float = 5.0) -> list[Finding]:
    """Every Triton check of `spec` against the server at `url` (host:port or http://host:port).

    `url` must pass the endpoint policy (loopback, or a `reach.Target` judged with an allow-list).
    """
    target = judge(url, (), "Triton")
    models = triton_models(spec)
    anchor = models[0][1] if models else spec.dataflow
    health = ServerHealth()
    # tritonclient's timeouts are per socket operation: a body sent one byte at a time never
    # trips them. gevent (tritonclient.http's own I/O) bounds the whole conversation instead.
    import gevent

    total_s = 10 * timeout_s + 5 * timeout_s * len(models)
    budget = gevent.Timeout(total_s)  # a BaseException: client retries that catch Exception skip it
    budget.start()
    ctx = TritonContext(spec, target, None, anchor)
    try:
        ctx.client = _client(target, timeout_s)
        live = ctx.client.is_server_live()
    except (Exception, gevent.Timeout) as exc:  # refused, timeout, DNS: tritonclient raises many kinds
        if isinstance(exc, gevent.Timeout) and exc is not budget:
            raise
        health.unreachable(
            ctx,
            f"cannot reach Triton at {target}: {_error_text(exc)}; is the server running and the URL its "
            "HTTP port (default 8000)?",
        )
        budget.cancel()
        return ctx.rec.findings
    try:
        ctx.guarded(health.code, ctx.server, anchor, lambda: health.run(ctx, live))
        try:
            ctx.index = ctx.client.get_model_repository_index() or []
        except Exception:  # PyTriton guards the repository API with an access token: ask per model
            ctx.index = None
        for stage, model in models:
            _check_model(ctx, ModelTarget(stage, model, f"model/{model.name}"))
    except gevent.Timeout as exc:
        if exc is not budget:
            raise
        health.unreachable(
            ctx,
            f"Triton at {target} did not finish answering within {total_s:g} s (a stalled or endless answer?)",
        )
    except Exception as exc:
        health.unreachable(ctx, f"Triton at {target} stopped answering: {_error_text(exc)}")
    finally:
        budget.cancel()
        # closing a half-open client must not hide the findings
        with contextlib.suppress(Exception):
            ctx.client.close()
    return ctx.rec.findings


def _status(exc: BaseException) -> str:
    st = getattr(exc, "status", None)
    return str(st() if callable(st) else st or "")


def _check_model(ctx: TritonContext, t: ModelTarget) -> None:
    """One model stage: present, READY, then its configuration's checks, each guarded."""
    model, label = t.model, t.label
    versions = ctx.guarded(ModelLoaded.code, label, model, lambda: ModelLoaded.resolve(ctx, t), field="name")
    if versions is None:
        return
    ctx.guarded(
        ModelLoaded.model_ready, label, model, lambda: ModelLoaded().run(ctx, t, versions), field="name"
    )
    try:
        config = ctx.client.get_model_config(model.name) or {}
    except Exception as exc:
        ctx.rec.unknown(
            MaxBatchSize.code,
            label,
            model,
            f"cannot read the config of '{model.name}': {_error_text(exc)}",
            field="batching",
        )
        return
    if not isinstance(config, dict):
        ctx.rec.unknown(
            MaxBatchSize.code,
            label,
            model,
            f"Triton's config of '{model.name}' is not a JSON object",
            field="batching",
        )
        return
    config = config.get("config", config)  # some servers wrap it
    for chk in CONFIG_CHECKS:
        check = chk()
        ctx.guarded(check.code, label, model, partial(check.run, ctx.rec, label, model, config))


def _version_key(v: str) -> tuple:
    return (0, int(v), v) if v.isdigit() else (1, 0, v)


@register_source
class TritonSource(Source):
    """A Triton Inference Server's models and their configuration, over its HTTP API."""

    name = "triton"
    title = "Triton"
    prefix = "VT"
    options = (Option("triton_url", "Triton HTTP endpoint, e.g. http://127.0.0.1:8000."),)
    docs = (
        DocRow(
            "`--triton-url URL`",
            "Triton's HTTP API through `tritonclient.http`",
            "live/ready, then per model stage with `model.server: triton`: metadata, version readiness, config.",
        ),
    )
    checks = (ServerHealth, ModelLoaded, *CONFIG_CHECKS)

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        require_extra("archkit verify --triton-url", "load")  # tritonclient and gevent
        return judge(options["triton_url"], allowed(providers), "Triton")

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        return Reading({"area": self.name, "source": given}, check_triton(spec, given, timeout_s))
