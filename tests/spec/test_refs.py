"""References declared in the model: one walk derives AK102's namespaces, AK103's references and the
lookups, and a new section that marks its fields is checked without an edit outside spec/."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from archkit.checks.ak102_duplicate_id import DuplicateId
from archkit.checks.ak103_dangling_reference import DanglingReference
from archkit.checks.registry import Context
from archkit.spec import load_file
from archkit.spec.loader import parse_yaml
from archkit.spec.model import Id, Node, Spec, assign_paths
from archkit.spec.refs import IdOf, RefTo, declared_namespaces, reference_fields, refs_of
from tests.conftest import ROOT

# Every reference AK103 checked when it listed them by hand: (model class, document key, what
# the message calls the target). The walk must find each one, with the same wording.
HAND_LISTED = {
    ("Edge", "from", "stage"),
    ("Edge", "to", "stage"),
    ("Stage", "service", "service"),
    ("Service", "pool", "node pool"),
    ("Mount", "storage", "storage"),
    ("NodePool", "networks", "network"),
    ("Controlflow", "start", "control-flow node"),
    ("Branch", "next", "control-flow node"),
    ("Decision", "on_failure", "control-flow node"),
    ("Call", "target", "stage or service"),
    ("Call", "next", "control-flow node"),
    ("Call", "on_failure", "control-flow node"),
    ("Call", "caller", "call"),
    ("FaultTree", "service", "service"),
    ("FaultTree", "top", "gate or event"),
    ("Gate", "inputs", "gate or event"),
    ("StageMetrics", "stage", "stage"),
    ("ScrapeTarget", "service", "service"),
    ("DegradeRule", "target", "stage, control node or service"),
    ("DegradeRule", "fallback", "stage, control node or service"),
    ("Target", "service", "service"),
    ("Fault", "target", "service"),
    ("Fault", "expect_fallback", "control-flow node"),
    ("StageOverride", "stage", "stage"),
}
# The namespaces checks/common.id_namespaces listed by hand (per-tree members aside).
HAND_LISTED_NAMESPACES = {
    "stage",
    "control-flow node",
    "node pool",
    "network",
    "storage",
    "service",
    "fault tree",
    "degrade rule",
    "environment",
    "load-test scenario",
    "load-test level",
}


def test_the_model_walk_finds_every_hand_listed_reference():
    found = {(cls.__name__, key, marker.label) for cls, key, marker in reference_fields(Spec)}
    assert found >= HAND_LISTED, f"lost: {sorted(HAND_LISTED - found)}"


def test_namespaces_and_lookups_of_an_example():
    assert declared_namespaces(Spec) >= HAND_LISTED_NAMESPACES | {"gate or event"}
    spec = load_file(ROOT / "examples" / "loan-preapproval.yaml").spec
    names = {label for label, _ in refs_of(spec).namespaces()}
    assert {"stage", "control-flow node", "service", "node pool"} <= names
    for st in spec.dataflow.stages:
        assert spec.stage(st.id) is next(s for s in spec.dataflow.stages if s.id == st.id)
    assert set(spec.by_id("call")) == {c.id for c in spec.controlflow.calls}
    assert set(spec.by_id("control-flow node")) == {n.id for n in spec.controlflow.nodes()}


def _located(cls: type[Spec], text: str) -> Spec:
    data, smap = parse_yaml(text, "synthetic.yaml")
    spec = cls.model_validate(data)
    assign_paths(spec)
    spec.__dict__["_archkit_source"] = smap
    spec.__dict__["_archkit_file"] = "synthetic.yaml"
    return spec


class Widget(Node):
    """A made-up section's object, referred to by id."""

    id: Annotated[Id, IdOf("widget")]
    parts: list[Annotated[Id, RefTo("stage")]] = Field(default_factory=list)


class WidgetUse(Node):
    widget: Annotated[Id, RefTo("widget")]
    spare: Annotated[Id, RefTo("widget", "stage")] | None = None


class SpecWithWidgets(Spec):
    widgets: list[Widget] = Field(default_factory=list)
    uses: list[WidgetUse] = Field(default_factory=list)


SYNTHETIC = """\
apiVersion: archkit/v1
metadata: {name: w}
dataflow:
  stages:
    - {id: detect, kind: model}
widgets:
  - {id: gear, parts: [detect, detcet]}
  - {id: gear}
uses:
  - {widget: gera}
  - {widget: gear, spare: nothing}
"""


def test_a_new_section_with_refto_gets_dangling_and_duplicate_checks():
    spec = _located(SpecWithWidgets, SYNTHETIC)
    dangling = list(DanglingReference().check(Context(spec, rule=DanglingReference)))
    got = [(d.line, d.col, d.path, d.message, d.hint) for d in dangling]
    assert got == [
        (7, 32, "widgets[0].parts[1]", "stage 'detcet' is not defined", "did you mean 'detect'?"),
        (10, 14, "uses[0].widget", "widget 'gera' is not defined", "did you mean 'gear'?"),
        (11, 27, "uses[1].spare", "widget or stage 'nothing' is not defined", "known: detect, gear"),
    ]
    dups = list(DuplicateId().check(Context(spec, rule=DuplicateId)))
    assert [(d.line, d.message) for d in dups] == [
        (8, "duplicate widget id 'gear' (first defined on line 7)")
    ]
    assert spec.by_id("widget")["gear"] is spec.widgets[0]


def test_fault_tree_members_resolve_within_their_tree():
    text = """\
apiVersion: archkit/v1
metadata: {name: t}
faulttrees:
  - id: a
    top: g
    gates: [{id: g, type: or, inputs: [x, y]}]
    events: [{id: x}]
  - id: b
    top: y
    events: [{id: y}, {id: y}]
"""
    spec = _located(Spec, text)
    dangling = [d.message for d in DanglingReference().check(Context(spec, rule=DanglingReference))]
    assert dangling == ["gate or event 'y' is not defined"]  # b's y is not a's
    dups = [d.message for d in DuplicateId().check(Context(spec, rule=DuplicateId))]
    assert dups == ["duplicate gate or event of fault tree 'b' id 'y' (first defined on line 10)"]
