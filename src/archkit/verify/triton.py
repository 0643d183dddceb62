"""Triton checks through tritonclient: server health, each declared model READY at its version, its config."""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import urlparse

from archkit.spec.model import ModelInfo, Spec, Stage
from archkit.verify.findings import Finding, Recorder


def triton_models(spec: Spec) -> list[tuple[Stage, ModelInfo]]:
    """Model stages the spec serves with Triton (`model.server: triton`)."""
    return [
        (st, st.model)
        for st in spec.dataflow.stages
        if st.model is not None and (st.model.server or "").lower() == "triton"
    ]


def _client(url: str, timeout_s: float):
    import tritonclient.http as httpclient

    parsed = urlparse(url if "://" in url else f"http://{url}")
    return httpclient.InferenceServerClient(
        url=parsed.netloc,
        ssl=parsed.scheme == "https",
        connection_timeout=timeout_s,
        network_timeout=timeout_s,
    )


def _error_text(exc: BaseException) -> str:
    msg = getattr(exc, "message", None)
    text = msg() if callable(msg) else (msg or str(exc) or type(exc).__name__)
    return str(text).strip()


def check_triton(spec: Spec, url: str, timeout_s: float = 5.0) -> list[Finding]:
    """Every Triton check of `spec` against the server at `url` (host:port or http://host:port)."""
    rec = Recorder(spec, "triton")
    models = triton_models(spec)
    anchor = models[0][1] if models else spec.dataflow
    server = f"server {url}"
    try:
        client = _client(url, timeout_s)
        live = client.is_server_live()
    except Exception as exc:  # connection refused, timeout, DNS: the tritonclient raises many kinds
        rec.unknown(
            "VT200",
            server,
            anchor,
            None,
            f"cannot reach Triton at {url}: {_error_text(exc)}; is the server running and the URL its "
            "HTTP port (default 8000)?",
        )
        return rec.findings
    try:
        if live:
            rec.ok("VT201", server, anchor, None, "live")
        else:
            rec.drift("VT201", server, anchor, None, f"Triton at {url} answers but is not live")
        ready = client.is_server_ready()
        if ready:
            rec.ok("VT202", server, anchor, None, "ready")
        else:
            rec.drift(
                "VT202",
                server,
                anchor,
                None,
                f"Triton at {url} is not ready: a model failed to load (seed 000 §3.4: check the log for "
                "'Failed to load model')",
            )
        try:
            index: list | None = client.get_model_repository_index() or []
        except Exception:  # PyTriton guards the repository API with an access token: ask per model
            index = None
        for stage, model in models:
            _check_model(rec, client, stage, model, index)
    except Exception as exc:
        rec.unknown("VT200", server, anchor, None, f"Triton at {url} stopped answering: {_error_text(exc)}")
    finally:
        # closing a half-open client must not hide the findings
        with contextlib.suppress(Exception):
            client.close()
    return rec.findings


def _status(exc: BaseException) -> str:
    st = getattr(exc, "status", None)
    return str(st() if callable(st) else st or "")


def _check_model(rec: Recorder, client: Any, stage: Stage, model: ModelInfo, index: list | None) -> None:
    label = f"model/{model.name}"
    known = sorted({e.get("name", "?") for e in index}) if index is not None else None
    try:
        meta = client.get_model_metadata(model.name) or {}
    except Exception as exc:
        text = _error_text(exc)
        if _status(exc) == "404" or "not found" in text:
            listing = f" (models: {', '.join(known) or 'none'})" if known is not None else ""
            rec.drift(
                "VT210",
                label,
                model,
                "name",
                f"stage '{stage.id}' declares model '{model.name}' but Triton does not have it{listing}",
            )
        elif _status(exc) in ("400", "503") or "version" in text:
            rec.ok("VT210", label, model, "name", "in the model repository")
            rec.drift("VT211", label, model, "name", f"model '{model.name}' is not READY: {text}")
        else:
            rec.unknown("VT210", label, model, "name", f"cannot look up model '{model.name}': {text}")
        return
    rec.ok("VT210", label, model, "name", "in the model repository")
    versions = [str(v) for v in meta.get("versions") or []]
    wanted: list[str] = []
    if model.version and model.version.isdigit():
        wanted.append(model.version)
    if model.version_policy is not None:
        wanted += [str(v) for v in model.version_policy.specific]
    ready = sorted({v for v in versions + wanted if client.is_model_ready(model.name, v)}, key=_version_key)
    not_ready = [v for v in wanted if v not in ready]
    if not ready:
        rec.drift(
            "VT211",
            label,
            model,
            "name",
            f"model '{model.name}' has no READY version (versions: {', '.join(versions) or 'none'})",
        )
    elif not_ready:
        rec.drift(
            "VT211",
            label,
            model,
            "version",
            f"model '{model.name}' version(s) {', '.join(not_ready)} not READY; READY: {', '.join(ready)}",
        )
    elif model.version and not model.version.isdigit():
        rec.ok(
            "VT211",
            label,
            model,
            "version",
            f"READY (versions {', '.join(ready)}); spec version '{model.version}' is a label, not a Triton "
            "version number, so it is not compared",
        )
    else:
        rec.ok("VT211", label, model, "version", f"READY (versions {', '.join(ready)})")
    try:
        config = client.get_model_config(model.name) or {}
    except Exception as exc:
        rec.unknown(
            "VT220", label, model, "batching", f"cannot read the config of '{model.name}': {_error_text(exc)}"
        )
        return
    config = config.get("config", config)  # some servers wrap it
    _check_config(rec, label, model, config)


def _version_key(v: str) -> tuple:
    return (0, int(v), v) if v.isdigit() else (1, 0, v)


def _check_config(rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
    b = model.batching
    name = model.name
    if b is not None:
        have = int(config.get("max_batch_size", 0) or 0)
        if have == b.max_batch_size:
            rec.ok("VT220", label, b, "max_batch_size", f"max_batch_size {have}")
        else:
            rec.drift(
                "VT220",
                label,
                b,
                "max_batch_size",
                f"model '{name}' has max_batch_size {have}, the spec declares {b.max_batch_size}: the "
                "latency budget was computed for the declared batch (seed 000 §2.1)",
            )
        dyn = config.get("dynamic_batching")
        if dyn is None:
            rec.drift(
                "VT226",
                label,
                b,
                None,
                f"model '{name}' has no dynamic_batching; the spec declares batching up to "
                f"{b.max_batch_size} with a {b.max_queue_delay_us} µs queue delay",
            )
        else:
            delay = int(dyn.get("max_queue_delay_microseconds", 0) or 0)
            if delay == b.max_queue_delay_us:
                rec.ok("VT221", label, b, "max_queue_delay_us", f"max_queue_delay_microseconds {delay}")
            else:
                rec.drift(
                    "VT221",
                    label,
                    b,
                    "max_queue_delay_us",
                    f"model '{name}' waits up to {delay} µs to fill a batch "
                    f"(max_queue_delay_microseconds), the spec declares {b.max_queue_delay_us} µs "
                    "(seed 000 §2.1: the queue delay adds to every request's latency)",
                )
            if b.preferred_batch_sizes or "preferred_batch_sizes" in b.model_fields_set:
                pref = sorted(int(x) for x in dyn.get("preferred_batch_size") or [])
                if pref == sorted(b.preferred_batch_sizes):
                    rec.ok("VT222", label, b, "preferred_batch_sizes", f"preferred_batch_size {pref}")
                else:
                    rec.drift(
                        "VT222",
                        label,
                        b,
                        "preferred_batch_sizes",
                        f"model '{name}' prefers batches {pref or 'none'}, the spec declares "
                        f"{sorted(b.preferred_batch_sizes)}",
                    )
            if b.max_queue_size is not None:
                qs = int(((dyn.get("default_queue_policy") or {}).get("max_queue_size", 0)) or 0)
                if qs == b.max_queue_size:
                    rec.ok("VT224", label, b, "max_queue_size", f"max_queue_size {qs}")
                else:
                    have_q = f"queues up to {qs} request(s)" if qs else "has an unbounded queue"
                    rec.drift(
                        "VT224",
                        label,
                        b,
                        "max_queue_size",
                        f"model '{name}' {have_q}, the spec declares max_queue_size {b.max_queue_size}",
                    )
        if dyn is not None and b.queue_timeout_us is not None:
            qt = int(((dyn.get("default_queue_policy") or {}).get("default_timeout_microseconds", 0)) or 0)
            if qt == b.queue_timeout_us:
                rec.ok("VT228", label, b, "queue_timeout_us", f"default_timeout_microseconds {qt}")
            else:
                rec.drift(
                    "VT228",
                    label,
                    b,
                    "queue_timeout_us",
                    f"model '{name}' lets a request wait {f'{qt} µs' if qt else 'without limit'} in its queue, "
                    f"the spec declares queue_timeout_us {b.queue_timeout_us}",
                )
    groups = config.get("instance_group") or []
    if groups:
        count = sum(int(g.get("count", 1) or 1) for g in groups)
        if count == model.instances:
            rec.ok("VT223", label, model, "instances", f"{count} instance(s)")
        else:
            rec.drift(
                "VT223",
                label,
                model,
                "instances",
                f"model '{name}' runs {count} instance(s), the spec declares {model.instances}",
            )
        kinds = sorted({str(g.get("kind", "KIND_AUTO")) for g in groups})
        if model.device.value == "cpu" and "KIND_GPU" in kinds:
            rec.drift(
                "VT227",
                label,
                model,
                "device",
                f"model '{name}' runs instances on the GPU (KIND_GPU), the spec declares device cpu: each "
                "takes a CUDA context (seed 000 §5.8: CPU models belong on KIND_CPU)",
            )
        elif model.device.value == "gpu" and "KIND_GPU" not in kinds and "KIND_AUTO" not in kinds:
            # not drift: a GPU model is run on CPU by the CPU environments of the same spec (the
            # local reference service, CI); the note keeps it visible
            rec.ok(
                "VT227",
                label,
                model,
                "device",
                f"instances {', '.join(kinds)}: this server runs the model on CPU (spec device: gpu)",
            )
        else:
            rec.ok("VT227", label, model, "device", f"instances {', '.join(kinds)}")
    vp = model.version_policy
    if vp is not None and vp.latest_num_versions is not None:
        have = ((config.get("version_policy") or {}).get("latest") or {}).get("num_versions")
        if have is not None and int(have) == vp.latest_num_versions:
            rec.ok("VT225", label, vp, "latest_num_versions", f"latest {have} versions")
        else:
            rec.drift(
                "VT225",
                label,
                vp,
                "latest_num_versions",
                f"model '{name}' keeps {'latest ' + str(have) if have else 'a different set of'} version(s), "
                f"the spec declares the latest {vp.latest_num_versions} (seed 000 §2.2)",
            )
