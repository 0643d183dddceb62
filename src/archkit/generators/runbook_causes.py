"""What a failed check means for its fault tree's top event, read from the minimal cut sets (the
tree runbooks' "cause" lines, `gen_runbooks`)."""

from __future__ import annotations

from archkit.faulttree import FaultTreeAnalysis
from archkit.generators.jinja import md_text


def check_anchor(event_id: str) -> str:
    return f"check-{event_id}"


def event_link(labels: dict[str, str | None], event_id: str) -> str:
    return f"[{md_text(labels.get(event_id) or event_id)}](#{check_anchor(event_id)})"


SHOWN_WAYS = 5  # combinations a cause names before "or N more"
# events a combination names beside the checked one before "and N more": a fuzzed AND of ~300
# events made each of 1,262 causes name 5 x ~250 events, 1.6 M links, 5.6 s and 473 MB in `render`
# (issue 28's bounds); the page's cut-set table still lists each set whole
SHOWN_PARTNERS = 8


def cut_sets_by_event(analysis: FaultTreeAnalysis) -> dict[str, tuple[int, list[frozenset[str]]]]:
    """Per event: how many listed cut sets hold it, and the first SHOWN_WAYS of them.

    One pass over the cut sets, which `analyse` lists smallest first (then by their sorted
    ids): das9701 lists a million, and a scan per event took minutes."""
    seen: dict[str, tuple[int, list[frozenset[str]]]] = {}
    for c in analysis.cut_sets:
        for x in c:
            n, first = seen.get(x, (0, []))
            if n < SHOWN_WAYS:
                first.append(c)
            seen[x] = (n + 1, first)
    return seen


def cause_text(
    labels: dict[str, str | None],
    event_id: str,
    analysis: FaultTreeAnalysis | None,
    by_event: dict[str, tuple[int, list[frozenset[str]]]],
) -> str:
    """What a failed check means for the top event, read from the minimal cut sets.

    An event in a cut set of order one causes the top event alone; an input of an AND gate
    causes it only when the other events of one of its cut sets have failed too, so the text
    names them (and the on-call engineer checks those before acting on this one).
    `labels` maps event ids to labels; `by_event` is `cut_sets_by_event(analysis)`.
    """
    if analysis is None:
        return "this event may be the cause; the tree could not be analysed, so read its gates by hand."
    count, sets = by_event.get(event_id, (0, []))
    if not sets:
        return "this event alone does not cause the top event (it is in no minimal cut set): look further."
    if len(sets[0]) == 1:
        return "this event is the cause."
    ways = []
    for c in sets:
        partners = sorted(c - {event_id})
        shown = " and ".join(event_link(labels, x) for x in partners[:SHOWN_PARTNERS])
        rest = len(partners) - SHOWN_PARTNERS
        ways.append(shown + (f" and {rest} more events of that cut set" if rest > 0 else ""))
    more = f" (or {count - len(sets)} more combinations, see the cut sets)" if count > len(sets) else ""
    return (
        "this event is the cause only together with "
        + "; or with ".join(ways)
        + more
        + ": it is one input of an AND gate, so check those too before acting on it."
    )
