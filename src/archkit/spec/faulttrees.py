"""The fault-tree section: gates, basic events, house events and common-cause groups."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import Field

from archkit.spec.base import Fraction, Id, Node, PositiveInt
from archkit.spec.refs import IdOf, RefTo

__all__ = [
    "BasicEvent",
    "CcfGroup",
    "CcfModel",
    "FaultTree",
    "FaultTreeLimits",
    "Gate",
    "GateType",
    "HouseEvent",
]


class GateType(str, Enum):
    """Open-PSA MEF's Boolean connectives, plus `inhibit` (an AND with a conditioning event)."""

    OR = "or"
    AND = "and"
    ATLEAST = "atleast"
    NOT = "not"
    XOR = "xor"
    NAND = "nand"
    NOR = "nor"
    IFF = "iff"
    IMPLY = "imply"
    INHIBIT = "inhibit"


class Gate(Node):
    id: Annotated[Id, IdOf("gate or event", scope="fault tree")]
    label: str | None = None
    type: GateType
    k: PositiveInt | None = Field(None, description="for atleast: how many inputs must fail")
    inputs: list[Annotated[Id, RefTo("gate or event")]] = Field(min_length=1)
    condition: Annotated[Id, RefTo("gate or event")] | None = Field(
        None, description="for inhibit: the conditioning event (basic or house) that must also hold"
    )


class HouseEvent(Node):
    """An event that is certainly true or false (a switch), e.g. 'maintenance in progress'."""

    id: Annotated[Id, IdOf("gate or event", scope="fault tree")]
    label: str | None = None
    state: bool = Field(False, description="true or false; `archkit faulttree --house ID=true` overrides it")


class CcfModel(str, Enum):
    BETA_FACTOR = "beta-factor"
    ALPHA_FACTOR = "alpha-factor"
    MGL = "mgl"


class CcfGroup(Node):
    """Common-cause failure group: members fail independently or together (NUREG/CR-5485 models).

    beta-factor: `factors: [beta]`; alpha-factor: `factors: [a1, ..., am]`; MGL:
    `factors: [beta, gamma, ...]` (m - 1 values). The members' total failure probability
    is `probability`, or each member's own when they agree.
    """

    id: Annotated[Id, IdOf("CCF group", scope="fault tree")]
    members: list[Annotated[Id, RefTo("basic event")]] = Field(min_length=2)
    model: CcfModel = CcfModel.BETA_FACTOR
    probability: Fraction | None = None
    factors: list[Fraction] = Field(min_length=1)


class FaultTreeLimits(Node):
    """Bounds on the analysis, so that a huge tree is a finding instead of a hang."""

    # Budgets of work, not of wall-clock time, so that results stay byte-identical on any
    # machine. The defaults keep `archkit check` within ~2 s and ~512 MiB on this project's
    # 2-core EPYC (docs/benchmarks.md, issue 28); the maxima bound what a spec can ask for (issue 28:
    # a spec raised them to 10^15). das9701, the largest Aralia tree, needs 14.1M BDD nodes
    # (7 s, 465 MiB): it sets its own limits. The compiled kernel holds ~30 bytes a live node.
    max_bdd_nodes: Annotated[int, Field(ge=1, le=64_000_000)] = Field(
        4_000_000,
        description="BDD nodes made: the probability's work (~0.5 s a million; at most 64,000,000)",
    )
    # counted with the minimal-solutions steps: a Python pass takes ~2 s and ~130 MB a million
    # (das9701's stopped at 4M after 8 s, 530 MB); a compiled one far less (`ft_kernel`)
    max_zbdd_nodes: Annotated[int, Field(ge=1, le=16_000_000)] = Field(
        1_000_000,
        description="cut-set ZBDD nodes and minimal-solution steps: the cut sets' work "
        "(up to ~2 s a million; at most 16,000,000)",
    )
    # listing is ~11 s and ~1 GB a million sets (an AND of 10 ORs of 4 events: 1,048,576 sets);
    # the counts by order and the probability are exact whatever is listed
    max_cut_sets: Annotated[int, Field(ge=1, le=2_000_000)] = Field(
        10_000, description="minimal cut sets listed (counts are exact; ~11 s a million; at most 2,000,000)"
    )
    max_order: PositiveInt | None = Field(None, description="drop cut sets with more events")
    cutoff: Fraction | None = Field(None, description="drop cut sets less probable than this")


class BasicEvent(Node):
    """A leaf: how to check it, what healthy output looks like, and how to fix it.

    The check's output is compared with `expect` (substring), `expect_regex` or
    `expect_exit_code`; a mismatch confirms the event (the fault is present).
    """

    id: Annotated[Id, IdOf("gate or event", scope="fault tree", also=("basic event",))]
    label: str | None = None
    check: str | None = Field(None, description="shell command, run exactly as written")
    expect: str | None = Field(None, description="substring present when healthy")
    expect_regex: str | None = None
    expect_exit_code: Annotated[int, Field(ge=0, le=255)] | None = None
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 10
    cost_s: Annotated[float, Field(ge=0)] | None = Field(None, description="time a check takes a human")
    probability: Fraction | None = None
    rate_per_hour: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    test_interval_h: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="periodically tested: with rate_per_hour, unavailability since the last test"
    )
    first_test_h: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="time of the first test (default: test_interval_h)"
    )
    mismatch_means: str | None = None
    remedy: str | None = None


class FaultTree(Node):
    """Top event of one service, its gates and leaf events."""

    id: Annotated[Id, IdOf("fault tree")]
    service: Annotated[Id, RefTo("service")] | None = None
    top: Annotated[Id, RefTo("gate or event")] = Field(
        description="the gate (or event) that is the top event"
    )
    label: str | None = None
    mission_time_h: Annotated[float, Field(gt=0)] | None = Field(
        None, description="converts rate_per_hour into probability"
    )
    gates: list[Gate] = Field(default_factory=list)
    events: list[BasicEvent] = Field(default_factory=list)
    house_events: list[HouseEvent] = Field(default_factory=list)
    ccf_groups: list[CcfGroup] = Field(default_factory=list)
    limits: FaultTreeLimits = Field(default_factory=FaultTreeLimits)
    escalation: str | None = None
