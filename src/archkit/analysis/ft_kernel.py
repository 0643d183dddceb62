"""The BDD's apply loop on plain arrays, compiled by numba: the fault-tree engine's hot path.

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
`CompiledBdd` grows them and asks again (nodes already made are found again through the
table, and results through the cache, so a retry repeats little work).

Garbage: between gates the engine hands `collect` the diagrams still needed; every other node
is dropped and the live ones slide down, keeping their order (children before parents), as a
mark-and-compact collector does. The node budget still counts every node ever made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from archkit.analysis.ft_bdd import TERMINAL, Bdd, DiagramLimitError

__all__ = ["CompiledBdd", "available"]

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


_compiled: dict[str, Any] = {}


def _kernel() -> dict[str, Any] | None:
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
            "mk",
            "terminal",
            "apply",
            "rehash",
            "collect",
            "probability",
            "gradient",
        ):
            g["_" + name] = numba.njit(cache=True)(g["_" + name])
            _compiled[name] = g["_" + name]
    return _compiled


def available(nvars: int) -> bool:
    """Whether the compiled kernel can build a diagram over `nvars` variables here."""
    return nvars <= MAX_VARS and _kernel() is not None


class CompiledBdd(Bdd):
    """`Bdd` whose construction runs in `ft_kernel`. `collect` frees garbage while building;
    `finish` keeps the finished diagram in arrays, where probability and gradient run compiled;
    minimal solutions are `Bdd`'s own code over the lists that `lists()` makes."""

    def __init__(
        self,
        nvars: int,
        max_nodes: int = 4_000_000,
        cache_bits: int = 20,
        capacity_bits: int = 16,
        stack_rows: int | None = None,
    ) -> None:
        super().__init__(nvars, max_nodes)
        k = _kernel()
        assert k is not None  # callers ask `available` first
        self._k = k
        cap = 1 << capacity_bits  # doubled as needed (tests start small to exercise growth)
        self._var = np.full(cap, TERMINAL, dtype=np.int32)
        self._lo = np.zeros(cap, dtype=np.int32)
        self._hi = np.zeros(cap, dtype=np.int32)
        self._lo[1] = self._hi[1] = 1
        self._table = np.zeros(2 * cap, dtype=np.int64)
        self._cache = np.full(2 << cache_bits, -1, dtype=np.int64)
        self._meta = np.array([2, max_nodes, 2 * cap - 1, (1 << cache_bits) - 1], dtype=np.int64)
        # variable indices run to 2·nvars + 1 (module variables between events): frames for
        # every level, and room for a NOT pushed beneath an XOR
        self._stk = np.zeros((stack_rows or 4 * nvars + 16, 10), dtype=np.int64)
        # arrays while building (and after `finish`), lists after `lists()`
        self.var, self.lo, self.hi = self._var, self._lo, self._hi  # type: ignore[assignment]
        self.building = True
        self.collected = 0  # nodes freed by `collect`

    def __len__(self) -> int:
        return int(self._meta[0]) if self.building else len(self.var)

    def _grow(self) -> None:
        n = int(self._meta[0])
        if n >= self._var.shape[0]:
            cap = 2 * self._var.shape[0]
            for name, fill in (("_var", TERMINAL), ("_lo", 0), ("_hi", 0)):
                old = getattr(self, name)
                new = np.full(cap, fill, dtype=np.int32)
                new[: old.shape[0]] = old
                setattr(self, name, new)
            self.var, self.lo, self.hi = self._var, self._lo, self._hi  # type: ignore[assignment]
            if self._cache.shape[0] // 2 < min(cap // 4, MAX_CACHE):
                # a cache far smaller than the diagram misses on most large operations: on
                # das9701 (23M nodes held) 2^20 entries took 57 s, cap/4 = 2^23 took 34 s
                # and 2^25 no less; CUDD grows its cache with its unique table likewise
                size = min(cap // 4, MAX_CACHE)
                self._cache = np.full(2 * size, -1, dtype=np.int64)
                self._meta[3] = size - 1
        if 2 * (n + 1) > self._table.shape[0] or self._table.shape[0] < 2 * self._var.shape[0]:
            size = 2 * max(self._table.shape[0], self._var.shape[0])
            self._table = np.zeros(size, dtype=np.int64)
            self._meta[2] = size - 1
            self._k["rehash"](self._var, self._lo, self._hi, n, self._table)

    def _run(self, op: int, a: int, b: int) -> int:
        while True:
            r = int(
                self._k["apply"](
                    op,
                    a,
                    b,
                    self._var,
                    self._lo,
                    self._hi,
                    self._meta,
                    self._table,
                    self._cache,
                    self._stk,
                )
            )
            if r >= 0:
                return r
            if r == LIMIT:
                raise DiagramLimitError("the BDD", self.max_nodes)
            if r == DEEP:
                self._stk = np.zeros((2 * self._stk.shape[0], 10), dtype=np.int64)
            else:
                self._grow()

    def mk(self, v: int, lo: int, hi: int) -> int:
        while True:
            r = int(self._k["mk"](v, lo, hi, self._var, self._lo, self._hi, self._meta, self._table))
            if r >= 0:
                return r
            if r == LIMIT:
                raise DiagramLimitError("the BDD", self.max_nodes)
            self._grow()

    def neg(self, a: int) -> int:
        return self._run(NOT, a, 0)

    def conj(self, a: int, b: int) -> int:
        return self._run(AND, a, b)

    def disj(self, a: int, b: int) -> int:
        return self._run(OR, a, b)

    def xor(self, a: int, b: int) -> int:
        return self._run(XOR, a, b)

    collects = True

    def collect(self, roots: list[int]) -> list[int]:
        """Free every node not reachable from `roots` and renumber the rest: the new ids of
        `roots`. Every other id held outside is void afterwards; the operation cache is
        cleared (its entries name old ids)."""
        n = int(self._meta[0])
        newid = np.zeros(n, dtype=np.int32)
        stack = np.empty(n, dtype=np.int32)
        k = int(
            self._k["collect"](
                np.asarray(roots, dtype=np.int64), self._var, self._lo, self._hi, n, newid, stack
            )
        )
        self.collected += n - k
        self._meta[0] = k
        # the budget counts nodes made, freed ones too: it bounds the work, not just memory
        self._meta[1] = self.max_nodes - self.collected
        self._table[:] = 0
        self._k["rehash"](self._var, self._lo, self._hi, k, self._table)
        self._cache[:] = -1
        return [int(newid[r]) for r in roots]

    @property
    def created(self) -> int:
        """Nodes made since the start, the collected ones included."""
        return len(self) + self.collected

    def finish(self, root: int) -> int:
        """Keep only `root`'s diagram and free the tables; returns root's new id. The diagram
        stays in arrays: `probability` and `gradient` run compiled, and `lists()` hands it to
        `Bdd`'s Python readers (minimal solutions) when they are asked for."""
        if not self.building:
            return root
        (root,) = self.collect([root])
        n = int(self._meta[0])
        self._var, self._lo, self._hi = (a[:n].copy() for a in (self._var, self._lo, self._hi))
        self.var, self.lo, self.hi = self._var, self._lo, self._hi  # type: ignore[assignment]
        self.building = False
        del self._table, self._cache, self._stk
        return root

    def lists(self) -> None:
        """The diagram as Python lists, which `Bdd`'s readers index fastest."""
        if isinstance(self.var, np.ndarray):
            self.var = self._var.tolist()
            self.lo = self._lo.tolist()
            self.hi = self._hi.tolist()

    def reachable(self, root: int) -> Sequence[int]:  # type: ignore[override]
        if isinstance(self.var, np.ndarray) and root == len(self) - 1:
            return range(2, root + 1)  # a finished diagram is exactly root's
        return super().reachable(root)

    def variables(self, nodes: Sequence[int]) -> set[int]:
        if isinstance(self.var, np.ndarray) and isinstance(nodes, range):
            return set(np.unique(self._var[nodes.start : nodes.stop]).tolist())
        return super().variables(nodes)

    def _q(self, p: dict[int, float]) -> Any:
        q = np.zeros(max(p, default=0) + 2, dtype=np.float64)
        for v, x in p.items():
            q[v] = x
        return q

    def probability(self, root: int, p: dict[int, float], nodes: Sequence[int] | None = None) -> Any:
        if not isinstance(self.var, np.ndarray) or root != len(self) - 1:
            return super().probability(root, p, nodes)
        return self._k["probability"](self._var, self._lo, self._hi, root + 1, self._q(p))

    def gradient(self, root: int, p: dict[int, float], val: Any, nodes: Sequence[int]) -> dict[int, float]:
        if not isinstance(self.var, np.ndarray) or root != len(self) - 1:
            return super().gradient(root, p, val, nodes)
        g = self._k["gradient"](self._var, self._lo, self._hi, root, self._q(p), val)
        return {v: float(g[v]) for v in p}
