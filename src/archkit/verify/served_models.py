"""The served-models source: a service's own listing of the model files it loaded, with their SHA-256.

Seed 004 §4.1 downloads each model version from a versioned bucket and checks its SHA-256 before
loading; seed 000 §2.2 tags every version with its hash. A serving engine rarely says which file it
loaded (Triton's repository index gives names, versions and states only), so a service that loads
files itself can list them: the OCR reference gateway's `/v1/models` (`{"models": [{"name",
"sha256"}]}`) and the LLM reference gateway's OpenAI-style `/v1/models` (`{"data": [{"id",
"sha256"}]}`) hash the files they serve. Each model stage with `model.sha256` is compared with the
entry of the same name.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
from collections.abc import Mapping
from typing import Any

from archkit.endpoints import EndpointError, open_url
from archkit.spec.model import Spec
from archkit.verify.findings import Finding, Recorder
from archkit.verify.reach import Target, allowed, judge
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source

MAX_ANSWER_BYTES = 4 * 1024 * 1024  # a listing of models is a few KiB


class ServedModelHash(Check):
    """Each model the service lists was loaded from the file the spec pins (its SHA-256)."""

    code = Code(
        "VM240",
        "served model hash",
        "The SHA-256 a service reports for the model file it loaded equals the stage's model.sha256: a "
        "different file is a different model, whatever its name or version.",
        "seed 004 §4.1 (SHA-256 checked before loading); seed 000 §2.2 (every version tagged with its hash)",
    )
    listing = Code(
        "VM241",
        "model listing readable",
        "The URL given with --models-url answers a JSON listing of models with their sha256.",
        "the reference services' /v1/models",
    )
    also = (listing,)


def _read(target: Target, timeout_s: float) -> Any:
    deadline = time.monotonic() + 3 * timeout_s
    try:
        with open_url(target.endpoint, target.allow, timeout=timeout_s) as resp:
            chunks: list[bytes] = []
            got = 0
            while chunk := resp.read1(1 << 16):
                got += len(chunk)
                chunks.append(chunk)
                if got > MAX_ANSWER_BYTES or time.monotonic() > deadline:
                    raise ValueError(f"the answer is over {MAX_ANSWER_BYTES} bytes or {3 * timeout_s:g} s")
        return json.loads(b"".join(chunks), parse_constant=lambda word: None)
    except urllib.error.HTTPError as exc:
        raise ValueError(f"it answered HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        raise ValueError(f"cannot reach it: {getattr(exc, 'reason', exc)}") from None
    except (EndpointError, http.client.HTTPException, RecursionError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from None


def listed_hashes(body: Any) -> dict[str, str | None]:
    """model name -> the sha256 it reports (None when it reports none), from either listing shape."""
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")
    entries = body.get("models", body.get("data"))
    if not isinstance(entries, list):
        raise ValueError("the answer has no 'models' or 'data' list")
    out: dict[str, str | None] = {}
    for e in entries:
        name = e.get("name", e.get("id")) if isinstance(e, dict) else None
        if isinstance(name, str):
            digest = e.get("sha256")
            out[name] = digest.lower() if isinstance(digest, str) else None
    return out


def check_served_models(spec: Spec, url: str, timeout_s: float = 5.0) -> list[Finding]:
    """VM240 for every model stage with a pinned sha256, against the listing at `url`."""
    target = judge(url, (), "model listing")
    rec = Recorder(spec, "models")
    pinned = [(st, st.model) for st in spec.dataflow.stages if st.model is not None and st.model.sha256]
    anchor = pinned[0][1] if pinned else spec.dataflow
    try:
        listed = listed_hashes(_read(target, timeout_s))
    except ValueError as exc:
        rec.unknown(
            ServedModelHash.listing,
            f"listing {url}",
            anchor,
            f"cannot read the model listing at {url}: {exc}",
        )
        return rec.findings
    rec.ok(ServedModelHash.listing, f"listing {url}", anchor, f"{len(listed)} model(s) listed", where=url)
    for st, m in pinned:
        assert m is not None and m.sha256 is not None
        label = f"model {m.name}"
        if m.name not in listed:
            rec.unknown(
                ServedModelHash.code,
                label,
                m,
                f"the listing at {url} does not name model '{m.name}'",
                field="sha256",
            )
        elif listed[m.name] is None:
            rec.unknown(
                ServedModelHash.code,
                label,
                m,
                f"the listing reports no sha256 for '{m.name}'",
                field="sha256",
            )
        elif listed[m.name] == m.sha256:
            rec.ok(
                ServedModelHash.code,
                label,
                m,
                f"serves {m.sha256[:12]}… as pinned",
                field="sha256",
                where=url,
            )
        else:
            rec.drift(
                ServedModelHash.code,
                label,
                m,
                f"model '{m.name}' (stage '{st.id}') is served from a file with sha256 {str(listed[m.name])[:12]}…, "
                f"the spec pins {m.sha256[:12]}…",
                field="sha256",
                where=url,
            )
    return rec.findings


@register_source
class ServedModelsSource(Source):
    """A service's listing of the model files it serves with their SHA-256 (the reference services' /v1/models)."""

    name = "models"
    title = "Served model files"
    prefix = "VM"
    options = (
        Option(
            "models_url",
            "URL of a listing of served models with their sha256, e.g. http://127.0.0.1:8080/v1/models.",
            metavar="URL",
        ),
    )
    docs = (
        DocRow(
            "`--models-url URL`",
            'a JSON listing `{"models": [{"name", "sha256"}]}` or OpenAI-style `{"data": [{"id", "sha256"}]}` '
            "(the OCR and LLM reference gateways' `/v1/models`)",
            "per model stage with `model.sha256`: the served file's hash equals the pinned one (VM240); a "
            "model the listing does not name, or names without a hash, is *unknown*.",
        ),
    )
    checks = (ServedModelHash,)

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return judge(options["models_url"], allowed(providers), "model listing")

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        return Reading({"area": self.name, "source": str(given)}, check_served_models(spec, given, timeout_s))
