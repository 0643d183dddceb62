"""The traffic mix inside the load generator: typed scenarios, their payloads (read once), weighted picks.

A generated locustfile lists its scenarios and levels as plain literals (readable, and what
`locust -f` users edit); `Scenario.of` and `Level.of` turn them into these values once at import.
No locust here: the mix is plain Python, tested without a generator process.
"""

from __future__ import annotations

import glob
import json
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from archkit.loadtest.runtime.llm import LlmLoad


@dataclass(frozen=True)
class TritonTensor:
    """One input tensor of a Triton scenario: its name, datatype and declared shape (-1: any)."""

    name: str
    datatype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Scenario:
    """One request kind of the mix, as the generated file lists it."""

    id: str
    weight: float
    method: str
    path: str | None
    headers: tuple[tuple[str, str], ...]
    payload: Mapping[str, str] | None  # file | folder+glob | template, and content_type
    expect_status: frozenset[int]
    model: str | None
    inputs: tuple[TritonTensor, ...]
    outputs: tuple[str, ...]
    llm: LlmLoad | None = None  # each body drawn from an llm stage's workload

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Scenario:
        return cls(
            id=str(d["id"]),
            weight=float(d["weight"]),
            method=str(d["method"]),
            path=d.get("path"),
            headers=tuple((str(k), str(v)) for k, v in (d.get("headers") or {}).items()),
            payload=dict(d["payload"]) if d.get("payload") else None,
            expect_status=frozenset(int(s) for s in d.get("expect_status") or (200,)),
            model=d.get("model"),
            inputs=tuple(
                TritonTensor(str(i["name"]), str(i["datatype"]), tuple(int(x) for x in i["shape"]))
                for i in d.get("inputs") or ()
            ),
            outputs=tuple(str(o) for o in d.get("outputs") or ()),
            llm=LlmLoad.of(d["llm"]) if d.get("llm") else None,
        )

    @property
    def content_type(self) -> str | None:
        return (self.payload or {}).get("content_type") or None


@dataclass(frozen=True)
class Level:
    """A level of the spec as the standalone locustfile offers it (`--archkit-level`)."""

    id: str
    kind: str
    users: int
    rate_rps: float | None
    duration_s: float
    steps: tuple[tuple[float, float], ...]

    @classmethod
    def of(cls, level_id: str, d: Mapping[str, Any]) -> Level:
        return cls(
            id=level_id,
            kind=str(d["kind"]),
            users=int(d["users"]),
            rate_rps=float(d["rate_rps"]) if d.get("rate_rps") is not None else None,
            duration_s=float(d["duration_s"]),
            steps=tuple((float(a), float(b)) for a, b in d.get("steps") or ()),
        )


class Mix:
    """Draws a scenario by weight and one of its payloads; payload files are read once, lazily."""

    def __init__(self, scenarios: Sequence[Scenario], root: str | None = None) -> None:
        self.scenarios = list(scenarios)
        self.weights = [s.weight for s in self.scenarios]
        self.root = root
        self._bodies: dict[str, list[bytes]] = {}
        self._rng: np.random.Generator | None = None

    def payload_root(self) -> str:
        """Where payload paths are relative to: ARCHKIT_PAYLOAD_ROOT, else the current directory."""
        return self.root or os.environ.get("ARCHKIT_PAYLOAD_ROOT") or os.getcwd()

    def bodies(self, sc: Scenario) -> list[bytes]:
        """The bodies of one scenario: a file, every file of a folder matching a glob, or a template."""
        if sc.id in self._bodies:
            return self._bodies[sc.id]
        p, root = sc.payload, self.payload_root()
        if p is None:
            bodies = [b""]
        elif "template" in p:
            bodies = [p["template"].encode("utf-8")]
        elif "file" in p:
            with open(os.path.join(root, p["file"]), "rb") as fh:
                bodies = [fh.read()]
        else:
            bodies = []
            for name in sorted(glob.glob(os.path.join(root, p["folder"], p["glob"]))):
                if os.path.isfile(name):
                    with open(name, "rb") as fh:
                        bodies.append(fh.read())
            if not bodies:
                raise FileNotFoundError(
                    f"scenario {sc.id}: no file matches {p['folder']}/{p['glob']} under {root}"
                )
        self._bodies[sc.id] = bodies
        return bodies

    def pick(self) -> tuple[Scenario, bytes]:
        """A scenario drawn by weight and one of its payloads (an llm scenario: a body drawn from its workload)."""
        sc = random.choices(self.scenarios, weights=self.weights)[0]
        body = random.choice(self.bodies(sc))
        if sc.llm is not None:
            if self._rng is None:  # seeded from the process's seed (the worker seeds `random`)
                self._rng = np.random.default_rng(random.getrandbits(64))
            base = json.loads(body) if body.strip() else {}
            body = json.dumps(sc.llm.body(sc.path, self._rng, base), separators=(",", ":")).encode("utf-8")
        return sc, body
