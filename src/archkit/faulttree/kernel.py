"""The BDD's apply loop and the cut sets' minimal-solutions pass on plain arrays, compiled by
numba: the fault-tree engine's hot paths.

`ft_bdd.Bdd` spends ~4 µs of Python per node it creates (edf9204: 2.9 million nodes, 12 s).
The same algorithm — hash-consed nodes in a unique table, Shannon expansion, memoised
operations — on integer arrays runs as machine code here. Written in the subset of Python that
numba compiles (like `pipesim_kernel`): compiled on first use and cached on disk.

Layout: nodes are int32 triples in `var`, `lo`, `hi` (0 is FALSE, 1 is TRUE, their variable is
`TERMINAL`). `table` is an open-addressing unique table, at most half full: an int64 entry holds
31 more bits of the node's hash above its id (0: empty slot), so a probe that meets another
node's entry moves on without reading that node's three fields. The operation cache is
direct-mapped and lossy (a newer entry overwrites an older one, as in CUDD): `cache[2s]` holds
a key packed from (op, a, b), `cache[2s + 1]` its result, side by side in one cache line. On
das9701 (14.1 million nodes made) the tags and the paired cache took the build from 7.8–8.0 s
to 6.8 s. `meta` holds [node count, node budget, table mask, cache mask].

Every function returns a node id >= 0, or `LIMIT` (-1) when the node budget is spent, or
`FULL` (-2) when the arrays or the table must grow first (or `DEEP`, -3, the frame stack);
`archkit.faulttree.compiled.CompiledBdd` (the Python side that holds the arrays) grows them and
asks again (nodes already made are found again through the
table, and results through the cache, so a retry repeats little work).

Garbage: between gates the engine hands `collect` the diagrams still needed; every other node
is dropped and the live ones slide down, keeping their order (children before parents), as a
mark-and-compact collector does. The node budget still counts every node ever made.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from archkit.faulttree.bdd import TERMINAL

__all__ = ["available", "compiled_functions"]

AND, OR, XOR, NOT = 0, 1, 2, 3
LIMIT, FULL, DEEP = -1, -2, -3  # node budget spent; arrays or table full; frame stack full
NONTERMINAL, NEG_A, NEG_B = -1, -2, -3  # `_terminal`'s answers besides a node id
# The frame stack is as deep as a diagram is tall: 4 rows of 80 bytes per variable (module
# variables sit between events) keep it under 64 MB up to here; a taller tree uses Python.
MAX_VARS = 200_000
# The operation cache grows to a quarter of the node arrays, up to 2^23 entries (128 MiB: a
# key and a result of 8 bytes each).
MAX_CACHE = 1 << 23


def _hash(x: int, y: int, z: int) -> int:
    """A 64-bit hash of three ids (multiplicative, as in Knuth's scheme). For a node (v, lo,
    hi) its low bits index the unique table and bits 32–62 are the entry's tag."""
    return (int(x) * 0x9E3779B1) ^ (int(y) * 0x85EBCA77) ^ (int(z) * 0xC2B2AE3D)


def _slot(x: int, y: int, z: int, mask: int) -> int:
    """`_hash` masked to a table index (the operation cache's slot)."""
    return _hash(x, y, z) & int(mask)


def _mk(v: int, lo: int, hi: int, var: Any, low: Any, high: Any, meta: Any, table: Any) -> int:
    if lo == hi:
        return lo
    return _insert(v, lo, hi, var, low, high, meta, table)


def _insert(v: int, lo: int, hi: int, var: Any, low: Any, high: Any, meta: Any, table: Any) -> int:
    """Node (v, lo, hi) found in, or added to, the unique table; FULL or LIMIT (meta[1])."""
    n = int(meta[0])
    if n >= var.shape[0] or 2 * (n + 1) > table.shape[0]:
        return FULL
    mask = meta[2]
    h = _hash(v, lo, hi)
    i = h & mask
    tag = ((h >> 32) & 0x7FFFFFFF) << 32
    while True:
        e = table[i]
        if e == 0:
            if n >= meta[1]:
                return LIMIT
            var[n] = v
            low[n] = lo
            high[n] = hi
            table[i] = tag | n
            meta[0] = n + 1
            return n
        if (e & ~0xFFFFFFFF) == tag:
            node = int(e & 0xFFFFFFFF)
            if var[node] == v and low[node] == lo and high[node] == hi:
                return node
        i = (i + 1) & mask


def _terminal(op: int, a: int, b: int) -> int:
    """The result when (op, a, b) needs no expansion; NONTERMINAL, or NEG_A/NEG_B for an XOR
    with TRUE (the negation of the other operand)."""
    if op == AND:
        if a == 0 or b == 0:
            return 0
        if a == 1 or a == b:
            return b
        if b == 1:
            return a
    elif op == OR:
        if a == 1 or b == 1:
            return 1
        if a == 0 or a == b:
            return b
        if b == 0:
            return a
    elif op == XOR:
        if a == 0:
            return b
        if b == 0:
            return a
        if a == b:
            return 0
        if a == 1:
            return NEG_B
        if b == 1:
            return NEG_A
    elif a < 2:  # NOT of a terminal
        return 1 - a
    return NONTERMINAL


def _apply(
    op: int,
    a: int,
    b: int,
    var: Any,
    low: Any,
    high: Any,
    meta: Any,
    table: Any,
    cache: Any,
    stk: Any,
) -> int:
    """op(a, b) by Shannon expansion, depth-first on an explicit stack (numba's on-disk cache
    does not hold recursive functions safely: a cached recursive version crashed here).

    A frame is a row of `stk`: 0 op, 1 a, 2 b, 3 top variable, 4-5 the high operands, 6 the
    low result, 7 cache slot, 8 phase (1: low child pending, 2: high child pending), 9 key.
    """
    sp = 0
    stk[0, 0], stk[0, 1], stk[0, 2] = op, a, b
    while True:
        op, a, b = stk[sp, 0], stk[sp, 1], stk[sp, 2]
        ret = _terminal(op, a, b)
        if ret < NONTERMINAL:  # NEG_A or NEG_B
            stk[sp, 1] = a if ret == NEG_A else b
            stk[sp, 0], stk[sp, 2] = NOT, 0
            continue
        if ret == NONTERMINAL:
            if op == NOT:
                b = 0
            elif a > b:
                a, b = b, a
            key = (int(a) << 34) | (int(b) << 2) | op
            slot = 2 * _slot(op, a, b, meta[3])
            if cache[slot] == key:
                ret = cache[slot + 1]
            else:
                va = var[a]
                vb = var[b] if op != NOT else TERMINAL
                if op == NOT:
                    v, a0, b0, a1, b1 = va, low[a], 0, high[a], 0
                elif va == vb:
                    v, a0, b0, a1, b1 = va, low[a], low[b], high[a], high[b]
                elif va < vb:
                    v, a0, b0, a1, b1 = va, low[a], b, high[a], b
                else:
                    v, a0, b0, a1, b1 = vb, a, low[b], a, high[b]
                stk[sp, 3], stk[sp, 4], stk[sp, 5] = v, a1, b1
                stk[sp, 7], stk[sp, 8], stk[sp, 9] = slot, 1, key
                sp += 1
                if sp >= stk.shape[0]:
                    return DEEP
                stk[sp, 0], stk[sp, 1], stk[sp, 2] = op, a0, b0
                continue
        # `ret` answers frame sp: hand it to the frames above until one has a child left
        while True:
            sp -= 1
            if sp < 0:
                return ret
            if stk[sp, 8] == 1:
                stk[sp, 6], stk[sp, 8] = ret, 2
                sp += 1
                stk[sp, 0], stk[sp, 1], stk[sp, 2] = stk[sp - 1, 0], stk[sp - 1, 4], stk[sp - 1, 5]
                break
            r = _mk(stk[sp, 3], stk[sp, 6], ret, var, low, high, meta, table)
            if r < 0:
                return r
            cache[stk[sp, 7]] = stk[sp, 9]
            cache[stk[sp, 7] + 1] = r
            ret = r


def _rehash(var: Any, low: Any, high: Any, n: int, table: Any) -> None:
    mask = table.shape[0] - 1
    for node in range(2, n):
        h = _hash(var[node], low[node], high[node])
        i = h & mask
        while table[i] != 0:
            i = (i + 1) & mask
        table[i] = (((h >> 32) & 0x7FFFFFFF) << 32) | node


def _collect(roots: Any, var: Any, low: Any, high: Any, n: int, newid: Any, stack: Any) -> int:
    """Keep only the nodes reachable from `roots`, renumbered in place; returns the new count.

    Mark from the roots, then slide every live node down to its rank among the live ones.
    Children are always created before their parents, so ids ascend upward and a node's
    children have their new ids before the node itself moves. `newid[old]` gives the new id
    (undefined for a dead node).
    """
    mark = np.zeros(n, dtype=np.uint8)
    mark[0] = mark[1] = 1
    sp = 0
    for r in roots:
        if not mark[r]:
            stack[sp] = r
            sp += 1
            mark[r] = 1
    while sp > 0:
        sp -= 1
        x = stack[sp]
        for c in (low[x], high[x]):
            if not mark[c]:
                mark[c] = 1
                stack[sp] = c
                sp += 1
    newid[0], newid[1] = 0, 1
    k = 2
    for i in range(2, n):
        if mark[i]:
            newid[i] = k
            var[k] = var[i]
            low[k] = newid[low[i]]
            high[k] = newid[high[i]]
            k += 1
    return k


def _probability(var: Any, low: Any, high: Any, n: int, q: Any) -> Any:
    """P(node) for every node 0..n-1 (ids ascend upward); `q[v]` is variable v's probability."""
    val = np.empty(n, dtype=np.float64)
    val[0], val[1] = 0.0, 1.0
    for i in range(2, n):
        p = q[var[i]]
        val[i] = p * val[high[i]] + (1.0 - p) * val[low[i]]
    return val


def _gradient(var: Any, low: Any, high: Any, root: int, q: Any, val: Any) -> Any:
    """∂P(root)/∂q[v] per variable index: `Bdd.gradient` over arrays, parents first."""
    reach = np.zeros(root + 1, dtype=np.float64)
    reach[root] = 1.0
    grad = np.zeros(q.shape[0], dtype=np.float64)
    for i in range(root, 1, -1):
        r = reach[i]
        if r == 0.0:
            continue
        v = var[i]
        p = q[v]
        grad[v] += r * (val[high[i]] - val[low[i]])
        reach[high[i]] += r * p
        reach[low[i]] += r * (1.0 - p)
    return grad


# ---- minimal solutions into a ZBDD (Rauzy 1993), the cut-set pass of `Engine.cut_sets`
#
# `ft_bdd.Zbdd.minsol` over arrays: the Python pass took 11.8 s on das9701's
# 2.8-million-node diagram (0.8 million ZBDD nodes, 7.6 million `without` steps). ZBDD nodes are
# int32 triples like the BDD's; `zmeta` holds [node count, node budget, table mask, cache mask,
# steps taken]. The budget counts nodes plus `without` steps, as `Zbdd` counts its memo, but a
# step here weighs 1/STEP_WEIGHT: it takes a tenth of the Python step's time (das9701's whole
# pass: 1.15 s against 11.8 s) and no memory (the step cache is fixed), while a node is 12 bytes.
STEP_WEIGHT = 8


def _zmk(v: int, lo: int, hi: int, var: Any, low: Any, high: Any, meta: Any, table: Any) -> int:
    """A ZBDD node: (v, lo, 0) is lo (zero suppression); otherwise as `_mk`, whose node budget
    `meta[1]` `_without` lowers as it takes steps."""
    if hi == 0:
        return lo
    return _insert(v, lo, hi, var, low, high, meta, table)


def _without(p: int, q: int, var: Any, low: Any, high: Any, meta: Any, table: Any, wc: Any, stk: Any) -> int:
    """The sets of family p that contain no set of family q (`Zbdd.without`), on a frame stack.

    A frame is a row of `stk`: 0 p, 1 q, 2 phase, 3 cache slot, 4 a kept result. Phases: 0 new;
    1/2 vp < vq, low then high done; 4 vp > vq; 5/6/7 vp == vq: without(lo p, lo q), then
    b = without(hi p, lo q), then without(b, hi q).
    """
    sp = 0
    stk[0, 0], stk[0, 1], stk[0, 2] = p, q, 0
    while True:
        p, q = stk[sp, 0], stk[sp, 1]
        if q == 0 or p == 0:
            ret = p
        elif q == 1 or p == q:
            ret = 0
        elif p == 1:
            ret = 1
        else:
            slot = 2 * _slot(p, q, 7, meta[3])
            key = (int(p) << 32) | int(q)
            if wc[slot] == key:
                ret = wc[slot + 1]
            else:
                meta[4] += 1
                if meta[4] % STEP_WEIGHT == 0:  # the nodes may take what the steps left
                    meta[1] -= 1
                    if meta[0] > meta[1]:
                        return LIMIT
                stk[sp, 3] = slot
                vp, vq = var[p], var[q]
                if vp < vq:
                    stk[sp, 2] = 1
                    a, b = low[p], q
                elif vp > vq:
                    stk[sp, 2] = 4
                    a, b = p, low[q]
                else:
                    stk[sp, 2] = 5
                    a, b = low[p], low[q]
                sp += 1
                if sp >= stk.shape[0]:
                    return DEEP
                stk[sp, 0], stk[sp, 1], stk[sp, 2] = a, b, 0
                continue
        # `ret` answers frame sp: resume the frames above until one needs another child
        while True:
            sp -= 1
            if sp < 0:
                return ret
            p, q, ph = stk[sp, 0], stk[sp, 1], stk[sp, 2]
            if ph == 1:
                stk[sp, 4], stk[sp, 2] = ret, 2
                a, b = high[p], q
            elif ph == 5:
                stk[sp, 4], stk[sp, 2] = ret, 6
                a, b = high[p], low[q]
            elif ph == 6:
                stk[sp, 2] = 7
                a, b = ret, high[q]
            else:
                if ph == 2 or ph == 7:
                    r = _zmk(var[p], stk[sp, 4], ret, var, low, high, meta, table)
                    if r < 0:
                        return r
                else:  # 4
                    r = ret
                wc[stk[sp, 3]] = (int(p) << 32) | int(q)
                wc[stk[sp, 3] + 1] = r
                ret = r
                continue
            sp += 1
            stk[sp, 0], stk[sp, 1], stk[sp, 2] = a, b, 0
            break


def _minsol(
    f: int,
    k: int,
    bvar: Any,
    blo: Any,
    bhi: Any,
    memo: Any,
    var: Any,
    low: Any,
    high: Any,
    meta: Any,
    table: Any,
    wc: Any,
    stk: Any,
    wstk: Any,
) -> int:
    """Minimal solutions of BDD node f with at most k events (k < 0: all), `Zbdd.minsol`:
    minsol(ite(x, f1, f0)) = x·(minsol(f1) ∖ minsol(f0)) + minsol(f0). `memo[f·(k+1) + k']`
    (k' the events still allowed; one column when k < 0) keeps each answer, -1 unknown.
    Frames: 0 f, 1 k', 2 phase (0 new, 1 low done, 2 high done), 3 the low answer."""
    cols = k + 1 if k >= 0 else 1
    sp = 0
    stk[0, 0], stk[0, 1], stk[0, 2] = f, k, 0
    while True:
        f, kk = stk[sp, 0], stk[sp, 1]
        if f < 2:
            ret = f
        elif kk == 0:  # only the empty set may remain: f with every variable false
            while f > 1:
                f = blo[f]
            ret = f
        else:
            m = memo[f * cols + (kk if k >= 0 else 0)]
            if m >= 0:
                ret = m
            else:
                stk[sp, 2] = 1
                sp += 1
                if sp >= stk.shape[0]:
                    return DEEP
                stk[sp, 0], stk[sp, 1], stk[sp, 2] = blo[f], kk, 0
                continue
        while True:
            sp -= 1
            if sp < 0:
                return ret
            f, kk = stk[sp, 0], stk[sp, 1]
            if stk[sp, 2] == 1:
                stk[sp, 3], stk[sp, 2] = ret, 2
                sp += 1
                stk[sp, 0], stk[sp, 1], stk[sp, 2] = bhi[f], kk - 1 if kk > 0 else kk, 0
                break
            w = _without(ret, stk[sp, 3], var, low, high, meta, table, wc, wstk)
            if w < 0:
                return w
            r = _zmk(bvar[f], stk[sp, 3], w, var, low, high, meta, table)
            if r < 0:
                return r
            memo[f * cols + (kk if k >= 0 else 0)] = r
            ret = r


_compiled: dict[str, Any] = {}


def compiled_functions() -> dict[str, Any] | None:
    """The compiled functions (numba on first use, cached on disk), or None without numba."""
    if not _compiled:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency; a stripped install still works
            return None
        g = globals()
        # the functions resolve each other as globals: compile the callees first
        for name in (
            "hash",
            "slot",
            "insert",
            "mk",
            "terminal",
            "apply",
            "rehash",
            "collect",
            "probability",
            "gradient",
            "zmk",
            "without",
            "minsol",
        ):
            g["_" + name] = numba.njit(cache=True)(g["_" + name])
            _compiled[name] = g["_" + name]
    return _compiled


def available(nvars: int) -> bool:
    """Whether the compiled kernel can build a diagram over `nvars` variables here."""
    return nvars <= MAX_VARS and compiled_functions() is not None
