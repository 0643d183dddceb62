"""Any string a spec can hold renders safely in every diagram and the review page (real renderers)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.generators.diagram_helpers import context

from archkit.spec.model import Spec

NASTY = [
    "@enduml",
    "@startuml",
    '"quoted"',
    "'single'",
    "{braces}",
    "}",
    "<b>bold</b>",
    "&amp;",
    "<script>",
    "line1\nline2",
    "\\n",
    "\\",
    "end note",
    "endlegend",
    "%date()",
    "!include /etc/passwd",
    "-[#red]->",
    "[[link]]",
    "]]",
    "(paren)",
    ")",
    ";",
    "|",
    "--",
    "**",
    "~",
    "ünïcödé 中文 🚀",
    "\t",
    "#",
    ":",
    "\r\n",
    "<<stereo>>",
    "$var",
    "]",
    "-->",
    "<!-- c -->",
    "\x1b[31m",
    "\ufeff",
    "\u202e",
    "\x00",
    "\ud800",
]

fragment = st.one_of(st.sampled_from(NASTY), st.text(max_size=8))
nasty = st.lists(fragment, min_size=1, max_size=4).map("".join)


def spec_with(s: list[str]) -> Spec:
    """A small spec with user text in every field a diagram or the page shows."""
    doc = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": "svc", "title": s[0], "description": s[1], "owners": [s[2]]},
        "budgets": {"p50_ms": 10, "p99_ms": 100},
        "dataflow": {
            "stages": [
                {
                    "id": "a",
                    "name": s[3],
                    "kind": "ingress",
                    "description": s[4],
                    "data_classes": [s[5]],
                    "compliance": [s[6]],
                    "p99_ms": 5,
                    "failure_rate": 0.5,
                },
                {
                    "id": "b",
                    "name": s[7],
                    "kind": "model",
                    "plane": "policy",
                    "p50_ms": 1,
                    "p99_ms": 9,
                    "model": {"name": s[8], "version": s[9]},
                },
            ],
            "edges": [{"from": "a", "to": "b", "label": s[10], "payload": s[11], "condition": s[12]}],
        },
        "controlflow": {
            "start": "d",
            "decisions": [
                {
                    "id": "d",
                    "label": s[13],
                    "criterion": s[14],
                    "source": s[15],
                    "branches": [{"when": s[16], "next": "c"}, {"when": s[17], "next": "t"}],
                    "on_failure": "t",
                }
            ],
            "calls": [
                {
                    "id": "c",
                    "label": s[18],
                    "target": "b",
                    "timeout_ms": 5,
                    "retry": {"attempts": 1},
                    "next": "t",
                    "on_failure": "t2",
                }
            ],
            "terminals": [{"id": "t", "label": s[19]}, {"id": "t2", "label": s[20], "outcome": "error"}],
        },
        "topology": {
            "node_pools": [
                {
                    "id": "p",
                    "instance_type": s[21],
                    "gpu": {"model": s[22], "mig_profile": s[23]},
                    "networks": ["n"],
                    "taints": [{"key": s[24]}],
                }
            ],
            "networks": [{"id": "n", "cidr": s[25]}],
            "storage": [{"id": "v", "type": "nfs", "source": s[26], "mount_options": [s[27]]}],
            "services": [
                {
                    "id": "svc",
                    "pool": "p",
                    "image": s[28],
                    "mounts": [{"storage": "v", "path": s[29]}],
                    "ingress": [{"from": s[30], "ports": [80]}],
                }
            ],
        },
        "faulttrees": [
            {
                "id": "ft",
                "top": "g",
                "label": s[31],
                "gates": [{"id": "g", "label": s[32], "type": "or", "inputs": ["e1", "e2"]}],
                "events": [
                    {"id": "e1", "label": s[33], "check": s[34], "expect": s[35], "probability": 0.1},
                    {"id": "e2", "label": s[36], "check": s[37], "expect_regex": s[38]},
                ],
            }
        ],
    }
    return Spec.model_validate(doc)


N_FIELDS = 39
BATCH = 4  # specs per example: one renderer pass (one JVM) renders a whole batch


@pytest.mark.slow
# No shrinking: each example costs a JVM start; a failure prints its whole (un-shrunk) batch.
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
)
@given(st.lists(st.lists(nasty, min_size=N_FIELDS, max_size=N_FIELDS), min_size=BATCH, max_size=BATCH))
def test_any_spec_string_renders_safely(batch):
    from archkit.generators import all_generators
    from archkit.generators.renderers import render_sources

    store: dict = {}  # renderer results shared by the batch: one JVM renders all its PlantUML
    all_sources: dict[str, str] = {}
    contexts = []
    for i, strings in enumerate(batch):
        ctx = context(spec_with(strings))
        contexts.append(ctx)
        for name in ("dataflow", "controlflow", "topology", "faulttree"):
            for rel, src in all_generators()[name].fn(ctx).items():
                all_sources[f"{i}/{rel}"] = src
    # every renderer reports no error (render_sources raises otherwise), and each SVG is XML
    rendered = render_sources(all_sources, ("svg",), {"_renderers": store})
    for rel, svg in rendered.items():
        text = svg.decode("utf-8")
        ET.fromstring(text)
        assert "<script" not in text.lower() and "<b>bold" not in text, rel
    for ctx in contexts:
        ctx.cache["_renderers"] = store
        page = all_generators()["review"].fn(ctx)["review.html"]
        assert "<script" not in page.lower(), "a spec string became a script element"
        assert "<b>bold</b>" not in page and "<<stereo" not in page
        assert page.count("<svg ") >= 4
