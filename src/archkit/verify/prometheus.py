"""The Prometheus source, over its HTTP API: rule groups loaded and healthy, declared scrape targets up."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from archkit.spec.model import Spec
from archkit.spec.observability import ScrapeTarget
from archkit.verify.findings import Finding
from archkit.verify.prometheus_context import (
    PrometheusCheck,
    PrometheusContext,
    Unreachable,
    dicts,
)
from archkit.verify.prometheus_slo import SloBuckets, check_slo_buckets
from archkit.verify.reach import allowed, judge
from archkit.verify.registry import Code, DocRow, Option, Providers, Reading, Source, register_source


class Reachable(PrometheusCheck):
    """The Prometheus server answers its HTTP API."""

    code = Code(
        "VP300",
        "Prometheus reachable",
        "The Prometheus endpoint given with --prometheus-url must answer.",
        "Prometheus HTTP API",
    )

    @classmethod
    def resolve(cls, ctx: PrometheusContext) -> dict | None:
        """The loaded rules (`/api/v1/rules`); None, reported unknown, when Prometheus does not answer."""
        try:
            return ctx.get("/api/v1/rules")
        except Unreachable as exc:
            ctx.rec.unknown(cls.code, ctx.server, ctx.spec.observability, str(exc))
            return None


@dataclass
class Rules:
    """The rule groups Prometheus has loaded, and those the spec's generators make."""

    loaded: dict[str, dict]
    expected: list[str] | None
    note: str


class RuleGroups(PrometheusCheck):
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

    def run(self, ctx: PrometheusContext, t: Rules) -> None:
        r, obs, loaded = ctx.rec, ctx.spec.observability, t.loaded
        if t.expected is None:
            r.unknown(self.code, "rules", obs, t.note or "the expected rule groups are not known")
            check = sorted(loaded)
        else:
            for name in t.expected:
                if name in loaded:
                    r.ok(
                        self.code,
                        f"rules/{name}",
                        obs,
                        f"{len(dicts(loaded[name].get('rules')))} rule(s) loaded",
                    )
                else:
                    r.drift(
                        self.code,
                        f"rules/{name}",
                        obs,
                        f"rule group '{name}' generated from the spec is not loaded in Prometheus "
                        f"(loaded: {', '.join(sorted(loaded)) or 'none'}); add the rendered rules file to "
                        "rule_files and reload",
                    )
            check = [n for n in t.expected if n in loaded]
        for name in check:
            self._evaluates(ctx, name, loaded[name])

    def _evaluates(self, ctx: PrometheusContext, name: str, group: dict) -> None:
        r, obs = ctx.rec, ctx.spec.observability
        bad, pending = [], 0
        for rule in dicts(group.get("rules")):
            health = rule.get("health", "unknown")
            if rule.get("lastError") or health == "err":
                bad.append(f"{rule.get('name')}: {rule.get('lastError') or health}")
            elif health != "ok":
                pending += 1
        if bad:
            r.drift(
                self.rules_evaluate,
                f"rules/{name}",
                obs,
                f"rule group '{name}' has rules that fail to evaluate, so they never fire: {'; '.join(bad[:3])}",
            )
        elif pending:
            r.unknown(
                self.rules_evaluate,
                f"rules/{name}",
                obs,
                f"{pending} rule(s) of '{name}' have not been evaluated yet",
            )
        else:
            r.ok(self.rules_evaluate, f"rules/{name}", obs, "every rule evaluates")


@dataclass
class Scrape:
    """A declared scrape target, and the active targets Prometheus reported."""

    st: ScrapeTarget
    label: str
    targets: list[dict]


class ScrapeTargets(PrometheusCheck):
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

    @classmethod
    def resolve(cls, ctx: PrometheusContext) -> list[dict] | None:
        """The active targets; None, each declared target reported unknown, when they cannot be read."""
        try:
            return dicts(ctx.get("/api/v1/targets?state=active").get("activeTargets"))
        except Unreachable as exc:
            for st in ctx.spec.observability.scrape:
                ctx.rec.unknown(cls.code, _label(st), st, str(exc))
            return None

    def run(self, ctx: PrometheusContext, t: Scrape) -> None:
        r, st, label, targets = ctx.rec, t.st, t.label, t.targets
        matched = []
        for tg in targets:
            raw_labels = tg.get("labels")
            labels: dict = raw_labels if isinstance(raw_labels, dict) else {}
            u = urlparse(str(tg.get("scrapeUrl") or ""))
            if st.job:
                ok = labels.get("job") == st.job
            else:
                ok = labels.get("job") == st.service or (u.port == st.port and (u.path or "/") == st.path)
            if ok:
                matched.append(tg)
        if not matched:
            jobs = sorted(
                {str(tg["labels"].get("job", "?")) for tg in targets if isinstance(tg.get("labels"), dict)}
            )
            want = f"job '{st.job}'" if st.job else f"port {st.port} path {st.path} (or job '{st.service}')"
            r.drift(
                self.code,
                label,
                st,
                f"Prometheus scrapes no target for service '{st.service}' ({want}); jobs: "
                f"{', '.join(jobs) or 'none'}",
            )
            return
        r.ok(self.code, label, st, f"{len(matched)} target(s)")
        down = [tg for tg in matched if tg.get("health") == "down"]
        waiting = [tg for tg in matched if tg.get("health") not in ("up", "down")]
        if waiting and not down:
            r.unknown(
                self.scrape_target_up,
                label,
                st,
                f"{len(waiting)} scrape target(s) of '{st.service}' have not been scraped yet",
            )
        elif down:
            r.drift(
                self.scrape_target_up,
                label,
                st,
                f"{len(down)} of {len(matched)} scrape target(s) of '{st.service}' are "
                f"{down[0].get('health')}: {down[0].get('scrapeUrl')}: {down[0].get('lastError') or 'not scraped yet'}",
            )
        else:
            r.ok(self.scrape_target_up, label, st, f"{len(matched)} target(s) up")


def _label(st: ScrapeTarget) -> str:
    return f"scrape/{st.service}:{st.port}"


def check_prometheus(
    spec: Spec, url: str, expected_groups: list[str] | None, groups_note: str = "", timeout_s: float = 5.0
) -> list[Finding]:
    """Every Prometheus check of `spec`; `expected_groups` are the generated rule groups' names."""
    ctx = PrometheusContext(spec, url, timeout_s)
    obs = spec.observability
    rules = Reachable.resolve(ctx)
    if rules is None:
        return ctx.rec.findings
    groups = RuleGroups()
    ctx.guarded(
        groups.code,
        "rules",
        obs,
        lambda: groups.run(
            ctx,
            Rules(
                {g["name"]: g for g in dicts(rules.get("groups")) if isinstance(g.get("name"), str)},
                expected_groups,
                groups_note,
            ),
        ),
    )
    if not obs.scrape:
        return ctx.rec.findings
    targets = ScrapeTargets.resolve(ctx)
    if targets is None:
        return ctx.rec.findings
    scrape = ScrapeTargets()
    for st in obs.scrape:
        label = _label(st)
        ctx.guarded(scrape.code, label, st, partial(scrape.run, ctx, Scrape(st, label, targets)))
    return ctx.rec.findings


def slo_buckets(spec: Spec, url: str, timeout_s: float = 5.0) -> list[Finding]:
    """VP320 (`prometheus_slo`) against the Prometheus at `url`, read as this source reads it."""
    return check_slo_buckets(PrometheusContext(spec, url, timeout_s))


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
            findings += slo_buckets(spec, url, timeout_s)
        return Reading({"area": self.name, "source": url}, findings)
