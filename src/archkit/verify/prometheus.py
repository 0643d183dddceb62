"""The Prometheus source, over its HTTP API: rule groups loaded and healthy, declared scrape targets up."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from archkit.endpoints import EndpointError, open_url
from archkit.errors import ArchkitError
from archkit.spec.model import Spec
from archkit.verify.findings import Finding, Recorder
from archkit.verify.prometheus_slo import SloBuckets, check_slo_buckets
from archkit.verify.reach import allowed, judge
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source


class Reachable(Check):
    """The Prometheus server answers its HTTP API."""

    code = Code(
        "VP300",
        "Prometheus reachable",
        "The Prometheus endpoint given with --prometheus-url must answer.",
        "Prometheus HTTP API",
    )


class RuleGroups(Check):
    """The rule groups generated from the spec are loaded and every rule evaluates."""

    code = Code(
        "VP301",
        "rule groups loaded",
        "The alert and recording rules generated from the spec are loaded.",
        "Prometheus HTTP API (/api/v1/rules)",
    )
    rules_evaluate = Code(
        "VP302",
        "rules evaluate",
        "A rule with an evaluation error never fires.",
        "Prometheus HTTP API (/api/v1/rules)",
    )
    also = (rules_evaluate,)


class ScrapeTargets(Check):
    """Each declared scrape target is configured and up."""

    code = Code(
        "VP310",
        "scrape target present",
        "Each scrape target the spec declares is configured.",
        "Prometheus HTTP API (/api/v1/targets)",
    )
    scrape_target_up = Code(
        "VP311", "scrape target up", "Each scrape target the spec declares is up.", "seed 000 §4.3"
    )
    also = (scrape_target_up,)


class _Unreachable(ArchkitError):
    pass


# Prometheus' rules and targets answers for a large server are a few MiB; a body past this is
# not an API answer. The whole answer must arrive within a few timeouts (a body sent one byte at
# a time would otherwise never trip the per-read socket timeout).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


def _get(base: str, path: str, timeout_s: float) -> dict:
    target = judge(base, (), "Prometheus")
    endpoint = replace(target.endpoint, path=target.endpoint.path.rstrip("/") + path)
    deadline = time.monotonic() + 3 * timeout_s
    try:
        # the endpoint policy: the judged address, redirects only within the allowed set, no proxy
        with open_url(endpoint, target.allow, timeout=timeout_s) as resp:
            chunks: list[bytes] = []
            got = 0
            while chunk := resp.read1(1 << 16):
                got += len(chunk)
                chunks.append(chunk)
                if got > MAX_ANSWER_BYTES:
                    raise _Unreachable(f"GET {path}: the answer is over {MAX_ANSWER_BYTES} bytes")
                if time.monotonic() > deadline:
                    raise _Unreachable(
                        f"GET {path}: the answer took over {3 * timeout_s:g} s (a stalled body?)"
                    )
        body = json.loads(b"".join(chunks), parse_constant=lambda word: None)
    except urllib.error.HTTPError as exc:
        hint = " (credentials?)" if exc.code in (401, 403) else ""
        raise _Unreachable(f"GET {path} answered HTTP {exc.code}{hint}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        raise _Unreachable(f"cannot reach Prometheus at {base}: {getattr(exc, 'reason', exc)}") from None
    except EndpointError as exc:  # a redirect off the allowed set: refused before connecting
        raise _Unreachable(str(exc)) from None
    except http.client.HTTPException as exc:  # truncated bodies, answers that are not HTTP
        raise _Unreachable(f"GET {path}: a broken HTTP answer ({type(exc).__name__}) from {base}") from None
    except (ValueError, RecursionError):
        raise _Unreachable(f"GET {path} did not answer JSON; is {base} a Prometheus server?") from None
    if not isinstance(body, dict):
        raise _Unreachable(f"GET {path} did not answer a JSON object; is {base} a Prometheus server?")
    if body.get("status") != "success":
        raise _Unreachable(f"GET {path}: {str(body.get('error') or body.get('status'))[:200]}")
    data = body.get("data")
    return data if isinstance(data, dict) else {}


def _dicts(value: object) -> list[dict]:
    """The mappings of a list from an answer (anything else in it, or a non-list, is ignored)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def check_prometheus(
    spec: Spec, url: str, expected_groups: list[str] | None, groups_note: str = "", timeout_s: float = 5.0
) -> list[Finding]:
    """Every Prometheus check of `spec`; `expected_groups` are the generated rule groups' names."""
    rec = Recorder(spec, "prometheus")
    obs = spec.observability
    server = f"server {url}"
    try:
        rules = _get(url, "/api/v1/rules", timeout_s)
    except _Unreachable as exc:
        rec.unknown(Reachable.code, server, obs, str(exc))
        return rec.findings
    loaded = {g["name"]: g for g in _dicts(rules.get("groups")) if isinstance(g.get("name"), str)}
    if expected_groups is None:
        rec.unknown(RuleGroups.code, "rules", obs, groups_note or "the expected rule groups are not known")
        check = sorted(loaded)
    else:
        for name in expected_groups:
            if name in loaded:
                rec.ok(
                    RuleGroups.code,
                    f"rules/{name}",
                    obs,
                    f"{len(_dicts(loaded[name].get('rules')))} rule(s) loaded",
                )
            else:
                rec.drift(
                    RuleGroups.code,
                    f"rules/{name}",
                    obs,
                    f"rule group '{name}' generated from the spec is not loaded in Prometheus "
                    f"(loaded: {', '.join(sorted(loaded)) or 'none'}); add the rendered rules file to "
                    "rule_files and reload",
                )
        check = [n for n in expected_groups if n in loaded]
    for name in check:
        bad, pending = [], 0
        for rule in _dicts(loaded[name].get("rules")):
            health = rule.get("health", "unknown")
            if rule.get("lastError") or health == "err":
                bad.append(f"{rule.get('name')}: {rule.get('lastError') or health}")
            elif health != "ok":
                pending += 1
        if bad:
            rec.drift(
                RuleGroups.rules_evaluate,
                f"rules/{name}",
                obs,
                f"rule group '{name}' has rules that fail to evaluate, so they never fire: {'; '.join(bad[:3])}",
            )
        elif pending:
            rec.unknown(
                RuleGroups.rules_evaluate,
                f"rules/{name}",
                obs,
                f"{pending} rule(s) of '{name}' have not been evaluated yet",
            )
        else:
            rec.ok(RuleGroups.rules_evaluate, f"rules/{name}", obs, "every rule evaluates")
    if not obs.scrape:
        return rec.findings
    try:
        targets = _dicts(_get(url, "/api/v1/targets?state=active", timeout_s).get("activeTargets"))
    except _Unreachable as exc:
        for st in obs.scrape:
            rec.unknown(ScrapeTargets.code, f"scrape/{st.service}:{st.port}", st, str(exc))
        return rec.findings
    for st in obs.scrape:
        label = f"scrape/{st.service}:{st.port}"
        matched = []
        for t in targets:
            raw_labels = t.get("labels")
            labels: dict = raw_labels if isinstance(raw_labels, dict) else {}
            u = urlparse(str(t.get("scrapeUrl") or ""))
            if st.job:
                ok = labels.get("job") == st.job
            else:
                ok = labels.get("job") == st.service or (u.port == st.port and (u.path or "/") == st.path)
            if ok:
                matched.append(t)
        if not matched:
            jobs = sorted(
                {str(t["labels"].get("job", "?")) for t in targets if isinstance(t.get("labels"), dict)}
            )
            want = f"job '{st.job}'" if st.job else f"port {st.port} path {st.path} (or job '{st.service}')"
            rec.drift(
                ScrapeTargets.code,
                label,
                st,
                f"Prometheus scrapes no target for service '{st.service}' ({want}); jobs: "
                f"{', '.join(jobs) or 'none'}",
            )
            continue
        rec.ok(ScrapeTargets.code, label, st, f"{len(matched)} target(s)")
        down = [t for t in matched if t.get("health") == "down"]
        waiting = [t for t in matched if t.get("health") not in ("up", "down")]
        if waiting and not down:
            rec.unknown(
                ScrapeTargets.scrape_target_up,
                label,
                st,
                f"{len(waiting)} scrape target(s) of '{st.service}' have not been scraped yet",
            )
        elif down:
            rec.drift(
                ScrapeTargets.scrape_target_up,
                label,
                st,
                f"{len(down)} of {len(matched)} scrape target(s) of '{st.service}' are "
                f"{down[0].get('health')}: {down[0].get('scrapeUrl')}: {down[0].get('lastError') or 'not scraped yet'}",
            )
        else:
            rec.ok(ScrapeTargets.scrape_target_up, label, st, f"{len(matched)} target(s) up")
    return rec.findings


@register_source
class PrometheusSource(Source):
    """A Prometheus server's loaded rules and scrape targets."""

    name = "prometheus"
    title = "Prometheus"
    prefix = "VP"
    options = (
        Option("prometheus_url", "Prometheus base URL, e.g. http://127.0.0.1:9090."),
        Option(
            "rules",
            "Rules file whose groups must be loaded (default: the groups `archkit render` generates).",
            Path,
        ),
    )
    docs = (
        DocRow(
            "`--prometheus-url URL`",
            "`/api/v1/rules`, `/api/v1/targets`",
            "the expected rule groups are those `archkit render` generates (`prometheus/rules.yaml`), or the "
            "groups of `--rules FILE`.",
        ),
    )
    checks = (Reachable, RuleGroups, ScrapeTargets, SloBuckets)
    needs = ("rule_groups",)  # (names or None, why not): the groups the prometheus generator makes

    def given(self, options: Mapping[str, Any]) -> bool:
        return bool(options.get("prometheus_url"))  # --rules alone names no server

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        groups: list[str] | None = None
        note = "the expected rule groups are not known; pass --rules FILE to name them"
        if "rule_groups" in providers:
            groups, note = providers["rule_groups"]()
        return judge(options["prometheus_url"], allowed(providers), "Prometheus"), groups, note

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        url, groups, note = given
        findings = check_prometheus(spec, url, groups, note, timeout_s)
        if not any(
            f.code == Reachable.code.id for f in findings
        ):  # reachable: latency SLOs against live buckets
            findings += check_slo_buckets(spec, url, timeout_s)
        return Reading({"area": self.name, "source": url}, findings)
