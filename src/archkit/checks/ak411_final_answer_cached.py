"""AK411: a stage caches the pipeline's final model answer, or a model's cache is not keyed by content."""

from __future__ import annotations

import re
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Spec, StageKind

# Kinds whose output another model or rule still judges: a cache in front of them holds an intermediate.
_JUDGES = {StageKind.model, StageKind.llm, StageKind.rules, StageKind.human}
_CONTENT_KEY = re.compile(r"sha-?\d+|md5|xxh|blake|hash|digest", re.IGNORECASE)


def judged_downstream(spec: Spec, stage_id: str) -> bool:
    """Whether a model, rules or human stage lies downstream of `stage_id` in the data flow."""
    succ: dict[str, list[str]] = {}
    for e in spec.dataflow.edges:
        succ.setdefault(e.from_, []).append(e.to)
    seen, todo = {stage_id}, list(succ.get(stage_id, []))
    while todo:
        sid = todo.pop()
        if sid in seen:
            continue
        seen.add(sid)
        st = spec.stage(sid)
        if st is not None and st.kind in _JUDGES:
            return True
        todo.extend(succ.get(sid, []))
    return False


@register
class FinalAnswerCached(Rule):
    """A model stage caches its answer with nothing downstream judging it, or caches it under a non-content key."""

    code = "AK411"
    name = "final-answer-cached"
    severity = Severity.WARNING
    source = "seed 004 §3.3 (do not cache model outputs; cache deterministic intermediates by content hash)"
    rationale = """
Seed 004 §3.3: caching a model's final answer (`Cache-Control: max-age=3600` on the output
JSON) repeats a wrong answer for an hour, since the same ID photo read "张三" today may read
differently tomorrow; what is cached are deterministic intermediates keyed by the input's
hash (image hash → OCR text, image → feature vector), after which a repeated upload
answers in 35 ms instead of 1200 ms. A model or LLM stage with `cache` settings is reported
when no model, rules or human stage lies downstream of it (its output is the answer), and
when its cache key does not name a content hash (sha256, md5, xxhash, ...).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for st in spec.dataflow.stages:
            c = st.cache
            if c is None or st.kind not in (StageKind.model, StageKind.llm):
                continue
            if not judged_downstream(spec, st.id):
                yield ctx.at(
                    c,
                    None,
                    f"stage '{st.id}' caches its model's answer and nothing downstream judges it: a wrong answer "
                    "is repeated for the cache's lifetime (seed 004 §3.3 caches intermediates only)",
                )
            elif not _CONTENT_KEY.search(c.key):
                yield ctx.at(
                    c,
                    "key",
                    f"stage '{st.id}' caches model output under '{c.key}', not a content hash of its input "
                    "(seed 004 §3.3: sha256(image) → OCR text)",
                )
