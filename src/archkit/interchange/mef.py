"""Open-PSA Model Exchange Format (MEF 2.0d) in and out, for fault trees.

Import parses with defusedxml's SAX reader: no DTD, no entity expansion, no external
resource is ever fetched, and every error names the file, line and element. Supported: the
fault-tree part of the MEF (§4–§7) — `define-fault-tree`, `define-gate` with nested
formulas (and, or, not, xor, nand, nor, iff, imply, atleast, constants, gate/basic-event/
house-event/event references), `define-basic-event` with `float`/`int`, `parameter`,
`exponential` (λ and the mission time) and `periodic-test` (λ, τ, θ, t), `define-house-event`,
`define-parameter`, `define-CCF-group` (beta-factor, alpha-factor, MGL) and `model-data`.
archkit's own fields (check, expect, remedy, ...) travel as `<attributes>` so that a tree
exported and imported again is the same tree.
"""

from __future__ import annotations

import re
import xml.sax
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import quoteattr

from archkit.faulttree.model import FaultTreeError
from archkit.spec.model import FaultTree, GateType

__all__ = ["MefError", "export_mef", "import_mef"]

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
CONNECTIVES = {t.value for t in GateType if t is not GateType.INHIBIT}
EVENT_FIELDS = (
    "check",
    "expect",
    "expect_regex",
    "expect_exit_code",
    "timeout_s",
    "cost_s",
    "mismatch_means",
    "remedy",
)
MAX_ELEMENTS = 2_000_000  # bounds memory on hostile input (Aralia's largest has ~30,000)


class MefError(FaultTreeError):
    """A model that is not valid MEF or uses what archkit does not support; located."""


@dataclass
class _El:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[_El] = field(default_factory=list)
    text: str = ""


class _Builder(xml.sax.ContentHandler):
    def __init__(self) -> None:
        super().__init__()
        self.root: _El | None = None
        self.stack: list[_El] = []
        self.count = 0
        self.locator: Any = None

    def setDocumentLocator(self, locator: Any) -> None:  # noqa: N802 - SAX's name
        self.locator = locator

    def startElement(self, name: str, attrs: Any) -> None:  # noqa: N802
        self.count += 1
        if self.count > MAX_ELEMENTS:
            raise xml.sax.SAXException(f"more than {MAX_ELEMENTS:,} elements")
        el = _El(name, dict(attrs.items()), self.locator.getLineNumber() if self.locator else 0)
        if self.stack:
            self.stack[-1].children.append(el)
        else:
            self.root = el
        self.stack.append(el)

    def endElement(self, name: str) -> None:  # noqa: N802
        self.stack.pop()

    def characters(self, content: str) -> None:
        if self.stack:
            self.stack[-1].text += content


def _parse(text: bytes, where: str) -> _El:
    import defusedxml.sax

    b = _Builder()
    try:
        defusedxml.sax.parseString(text, b, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except xml.sax.SAXParseException as exc:
        raise MefError(f"{where}:{exc.getLineNumber()}:{exc.getColumnNumber()}: {exc.getMessage()}") from None
    except (xml.sax.SAXException, ValueError) as exc:  # defusedxml's DTDForbidden etc. are ValueErrors
        line = b.locator.getLineNumber() if b.locator else 0
        raise MefError(f"{where}:{line}: refused: {exc}") from None
    if b.root is None or b.root.tag != "opsa-mef":
        raise MefError(f"{where}:1: not an Open-PSA model: the root element must be <opsa-mef>")
    return b.root


@dataclass
class _Model:
    where: str
    gates: dict[str, tuple[_El, str]] = field(default_factory=dict)  # name -> (element, tree)
    events: dict[str, _El] = field(default_factory=dict)
    houses: dict[str, _El] = field(default_factory=dict)
    params: dict[str, _El] = field(default_factory=dict)
    ccf: list[_El] = field(default_factory=list)
    trees: list[tuple[str, _El]] = field(default_factory=list)

    def err(self, el: _El, msg: str) -> MefError:
        return MefError(f"{self.where}:{el.line}: <{el.tag}> {msg}")

    def name(self, el: _El) -> str:
        n = el.attrs.get("name")
        if not n:
            raise self.err(el, "has no name")
        if not ID_RE.match(n) or len(n) > 128:
            raise self.err(el, f"name {n!r} is not an archkit id (letters, digits, '_', '-', '.')")
        return n

    def collect(self, el: _El, tree: str | None) -> None:
        for c in el.children:
            if c.tag == "define-fault-tree":
                self.trees.append((self.name(c), c))
                self.collect(c, self.name(c))
            elif c.tag == "model-data":
                self.collect(c, tree)
            elif c.tag == "define-gate":
                self.gates[self.name(c)] = (c, tree or "")
            elif c.tag == "define-basic-event":
                self.events[self.name(c)] = c
            elif c.tag == "define-house-event":
                self.houses[self.name(c)] = c
            elif c.tag == "define-parameter":
                self.params[self.name(c)] = c
            elif c.tag == "define-CCF-group":
                self.ccf.append(c)
            elif c.tag not in ("label", "attributes", "define-component"):
                raise self.err(c, "is not supported by archkit's importer (fault trees only)")

    # ---- expressions

    def value(self, el: _El, depth: int = 0) -> float:
        if depth > 50:
            raise self.err(el, "parameters nest too deeply")
        if el.tag in ("float", "int"):
            try:
                return float(el.attrs["value"])
            except (KeyError, ValueError):
                raise self.err(el, f"value {el.attrs.get('value')!r} is not a number") from None
        if el.tag == "parameter":
            p = self.params.get(el.attrs.get("name", ""))
            if p is None:
                raise self.err(el, f"names undefined parameter {el.attrs.get('name')!r}")
            return self.value(self._expr(p), depth + 1)
        raise self.err(el, "is not a constant archkit can use here")

    def _expr(self, el: _El) -> _El:
        kids = [c for c in el.children if c.tag not in ("label", "attributes")]
        if len(kids) != 1:
            raise self.err(el, "needs exactly one expression")
        return kids[0]


def _attributes(el: _El) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in el.children:
        if c.tag == "attributes":
            for a in c.children:
                if a.tag == "attribute" and "name" in a.attrs:
                    out[a.attrs["name"]] = a.attrs.get("value", "")
    return out


def _label(el: _El) -> str | None:
    for c in el.children:
        if c.tag == "label":
            return " ".join(c.text.split()) or None
    return None


def _basic_event(m: _Model, name: str, el: _El, mission: list[float]) -> dict[str, Any]:
    ev: dict[str, Any] = {"id": name}
    if (lab := _label(el)) is not None:
        ev["label"] = lab
    attrs = _attributes(el)
    for key in EVENT_FIELDS:
        if f"archkit.{key}" in attrs:
            raw = attrs[f"archkit.{key}"]
            ev[key] = int(raw) if key == "expect_exit_code" else float(raw) if key.endswith("_s") else raw
    kids = [c for c in el.children if c.tag not in ("label", "attributes")]
    if not kids:
        return ev
    x = m._expr(el)
    if x.tag == "exponential" or x.tag == "periodic-test":
        args = [c for c in x.children if c.tag not in ("label", "attributes")]
        want = 2 if x.tag == "exponential" else 4
        if len(args) != want:
            raise m.err(x, f"takes {want} arguments, found {len(args)}")
        ev["rate_per_hour"] = m.value(args[0])
        if x.tag == "periodic-test":
            ev["test_interval_h"] = m.value(args[1])
            ev["first_test_h"] = m.value(args[2])
        t = args[-1]
        mission.append(
            float(attrs.get("archkit.mission_time_h", "nan"))
            if t.tag == "system-mission-time"
            else m.value(t)
        )
    else:
        p = m.value(x)
        if not 0 <= p <= 1:
            raise m.err(x, f"probability {p} is not between 0 and 1")
        ev["probability"] = p
    return ev


def import_mef(sources: list[tuple[str, bytes]], mission_time_h: float | None = None) -> list[FaultTree]:
    """Fault trees from one MEF model spread over files [(name, content)], validated as archkit trees.

    A tree's top is its gate that no other gate uses. Raises MefError, located.
    """
    models = []
    for where, text in sources:
        m = _Model(where)
        m.collect(_parse(text, where), None)
        models.append(m)
    m = models[0]
    for other in models[1:]:  # one model over several files (Baobab: tree + basic events)
        m.gates.update(other.gates)
        m.events.update(other.events)
        m.houses.update(other.houses)
        m.params.update(other.params)
        m.ccf.extend(other.ccf)
        m.trees.extend(other.trees)
    if not m.trees:
        raise MefError(f"{m.where}:1: no <define-fault-tree> in the model")
    out = []
    for tname, tel in m.trees:
        out.append(_tree(m, tname, tel, mission_time_h))
    return out


def _tree(m: _Model, tname: str, tel: _El, mission_time_h: float | None) -> FaultTree:
    gates: list[dict[str, Any]] = []
    used_events: list[str] = []
    used_houses: list[str] = []
    referenced: set[str] = set()
    own = [(n, el) for n, (el, t) in m.gates.items() if t == tname]

    def ref(el: _El, owner: str, counter: list[int]) -> str:
        if el.tag in ("gate", "basic-event", "house-event", "event"):
            n = m.name(el)
            kind = el.tag
            if kind == "event":
                kind = "gate" if n in m.gates else "house-event" if n in m.houses else "basic-event"
            if kind == "gate":
                if n not in m.gates:
                    raise m.err(el, f"names undefined gate {n!r}")
                referenced.add(n)
            elif kind == "house-event":
                if n not in m.houses:
                    raise m.err(el, f"names undefined house event {n!r}")
                if n not in used_houses:
                    used_houses.append(n)
            else:
                if n not in used_events:
                    used_events.append(n)
            return n
        if el.tag == "constant":
            n = f"{owner}.{el.attrs.get('value', 'false')}"
            if n not in used_houses:
                used_houses.append(n)
                m.houses.setdefault(n, _El("define-house-event", {"name": n}, el.line, [el]))
            return n
        counter[0] += 1
        sub = f"{owner}.{counter[0]}"
        gates.append(formula(sub, el, owner, counter, None))
        return sub

    def formula(gname: str, el: _El, owner: str, counter: list[int], label: str | None) -> dict[str, Any]:
        if el.tag not in CONNECTIVES:
            if el.tag in ("gate", "basic-event", "house-event", "event", "constant"):
                return {"id": gname, "type": "or", "inputs": [ref(el, owner, counter)], "label": label}
            raise m.err(el, "is not a Boolean connective archkit supports")
        args = [c for c in el.children if c.tag not in ("label", "attributes")]
        if not args:
            raise m.err(el, "has no arguments")
        g: dict[str, Any] = {"id": gname, "type": el.tag, "inputs": [ref(a, owner, counter) for a in args]}
        if label:
            g["label"] = label
        if el.tag == "atleast":
            try:
                g["k"] = int(el.attrs["min"])
            except (KeyError, ValueError):
                raise m.err(el, "needs an integer 'min'") from None
        return g

    for gname, gel in own:
        f = m._expr(gel)
        g = formula(gname, f, gname, [0], _label(gel))
        if _attributes(gel).get("flavor") == "inhibit" and g["type"] == "and" and len(g["inputs"]) >= 2:
            g["type"], g["condition"] = "inhibit", g["inputs"].pop()
        gates.append({k: v for k, v in g.items() if v is not None})
    tops = [n for n, _ in own if n not in referenced]
    if not tops:
        raise m.err(tel, "has no top gate (every gate is used by another)")
    mission: list[float] = []
    events = []
    for n in used_events:
        el = m.events.get(n)
        events.append(_basic_event(m, n, el, mission) if el is not None else {"id": n})
    houses = []
    for n in used_houses:
        hel = m.houses[n]
        const = [c for c in hel.children if c.tag == "constant"]
        state = bool(const) and const[0].attrs.get("value", "false").strip().lower() == "true"
        houses.append({"id": n, "state": state})
    doc: dict[str, Any] = {"id": tname, "top": tops[0], "gates": gates, "events": events}
    if houses:
        doc["house_events"] = houses
    if _label(tel):
        doc["label"] = _label(tel)
    known = [t for t in mission if t == t]
    if mission_time_h is not None or known:
        doc["mission_time_h"] = mission_time_h if mission_time_h is not None else known[0]
    groups = [_ccf(m, c, set(used_events)) for c in m.ccf]
    if any(groups):
        doc["ccf_groups"] = [g for g in groups if g]
    try:
        return FaultTree.model_validate(doc)
    except ValueError as exc:
        first = str(exc).splitlines()
        raise m.err(tel, f"'{tname}' is not a valid archkit tree: {' '.join(first[:3])}") from None


def _ccf(m: _Model, el: _El, used: set[str]) -> dict[str, Any] | None:
    name = m.name(el)
    members: list[str] = []
    qt: float | None = None
    factors: list[float] = []
    for c in el.children:
        if c.tag == "members":
            members = [m.name(x) for x in c.children]
        elif c.tag == "distribution":
            qt = m.value(m._expr(c))
        elif c.tag == "factors":
            factors = [m.value(m._expr(f)) for f in c.children]
        elif c.tag == "factor":
            factors = [m.value(m._expr(c))]
    if not set(members) & used:
        return None
    model = {"beta-factor": "beta-factor", "alpha-factor": "alpha-factor", "MGL": "mgl"}.get(
        el.attrs.get("model", "")
    )
    if model is None:
        raise m.err(el, f"model {el.attrs.get('model')!r} is not supported (beta-factor, alpha-factor, MGL)")
    return {"id": name, "members": members, "model": model, "probability": qt, "factors": factors}


# --------------------------------------------------------------------------- export


def export_mef(tree: FaultTree) -> str:
    """One tree as an Open-PSA MEF document (deterministic: document order, two-space indent)."""
    q = quoteattr
    houses = {h.id for h in tree.house_events}
    gates = {g.id for g in tree.gates}
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<opsa-mef>", f"  <define-fault-tree name={q(tree.id)}>"]
    if tree.label:
        out.append(f"    <label>{_text(tree.label)}</label>")

    def ref(x: str) -> str:
        kind = "gate" if x in gates else "house-event" if x in houses else "basic-event"
        return f"<{kind} name={q(x)}/>"

    for g in tree.gates:
        out.append(f"    <define-gate name={q(g.id)}>")
        if g.label:
            out.append(f"      <label>{_text(g.label)}</label>")
        inputs = list(g.inputs)
        kind = g.type.value
        if g.type is GateType.INHIBIT:
            out.append('      <attributes><attribute name="flavor" value="inhibit"/></attributes>')
            kind = "and"
            inputs.append(g.condition or "")
        attr = f' min="{g.k}"' if g.type is GateType.ATLEAST else ""
        out.append(f"      <{kind}{attr}>" + "".join(ref(x) for x in inputs) + f"</{kind}>")
        out.append("    </define-gate>")
    for grp in tree.ccf_groups:
        model = "MGL" if grp.model.value == "mgl" else grp.model.value
        out.append(f"    <define-CCF-group name={q(grp.id)} model={q(model)}>")
        out.append(
            "      <members>" + "".join(f"<basic-event name={q(x)}/>" for x in grp.members) + "</members>"
        )
        qt = grp.probability
        if qt is None:
            first = next((e for e in tree.events if e.id == grp.members[0]), None)
            qt = first.probability if first is not None else None
        if qt is not None:
            out.append(f'      <distribution><float value="{_num(qt)}"/></distribution>')
        if grp.model.value == "beta-factor":
            out.append(
                f'      <factor level="{len(grp.members)}"><float value="{_num(grp.factors[0])}"/></factor>'
            )
        else:
            first_level = 1 if grp.model.value == "alpha-factor" else 2
            out.append("      <factors>")
            for i, fv in enumerate(grp.factors):
                out.append(f'        <factor level="{i + first_level}"><float value="{_num(fv)}"/></factor>')
            out.append("      </factors>")
        out.append("    </define-CCF-group>")
    out.append("  </define-fault-tree>")
    out.append("  <model-data>")
    members = {m for g in tree.ccf_groups for m in g.members}
    for e in tree.events:
        out.append(f"    <define-basic-event name={q(e.id)}>")
        if e.label:
            out.append(f"      <label>{_text(e.label)}</label>")
        attrs = [
            (k, getattr(e, k)) for k in EVENT_FIELDS if getattr(e, k) is not None and k in e.model_fields_set
        ]
        if tree.mission_time_h is not None and e.rate_per_hour is not None:
            attrs.append(("mission_time_h", tree.mission_time_h))
        if attrs:
            out.append("      <attributes>")
            for k, v in attrs:
                out.append(
                    f"        <attribute name={q('archkit.' + k)} value={q(_num(v) if isinstance(v, float) else str(v))}/>"
                )
            out.append("      </attributes>")
        if e.id in members:
            pass  # the CCF group's distribution gives its probability
        elif e.probability is not None:
            out.append(f'      <float value="{_num(e.probability)}"/>')
        elif e.rate_per_hour is not None:
            lam = f'<float value="{_num(e.rate_per_hour)}"/>'
            if e.test_interval_h is not None:
                first_h = e.first_test_h if e.first_test_h is not None else e.test_interval_h
                out.append(
                    f'      <periodic-test>{lam}<float value="{_num(e.test_interval_h)}"/>'
                    f'<float value="{_num(first_h)}"/><system-mission-time/></periodic-test>'
                )
            else:
                out.append(f"      <exponential>{lam}<system-mission-time/></exponential>")
        out.append("    </define-basic-event>")
    for h in tree.house_events:
        out.append(f"    <define-house-event name={q(h.id)}>")
        if h.label:
            out.append(f"      <label>{_text(h.label)}</label>")
        out.append(f'      <constant value="{"true" if h.state else "false"}"/>')
        out.append("    </define-house-event>")
    out.append("  </model-data>")
    out.append("</opsa-mef>")
    return "\n".join(out) + "\n"


def _num(v: float) -> str:
    return repr(float(v)) if not float(v).is_integer() else str(int(v)) if abs(v) < 1e15 else repr(float(v))


def _text(s: str) -> str:
    from xml.sax.saxutils import escape

    return escape(s)
