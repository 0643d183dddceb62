"""Decision diagrams for fault trees: a reduced ordered BDD and a ZBDD of minimal solutions.

Pure Python, built for trees of thousands of gates on a shared machine:
- nodes are integers into parallel lists (`var`, `lo`, `hi`), hash-consed through one unique
  table; node 0 is FALSE (for a ZBDD: the empty family), node 1 is TRUE (the family {∅});
- every operation is memoised in its own table keyed by one integer;
- a node is created only after its children, so ids ascend bottom-up and a probability is a
  single pass over the reachable ids (Shannon expansion, Bryant 1986);
- minimal solutions follow Rauzy's construction ("New algorithms for fault trees analysis",
  RESS 40, 1993): minsol(ite(x, f1, f0)) = x·(minsol(f1) ∖ minsol(f0)) + minsol(f0), where
  P ∖ Q ("without") drops the sets of P that contain a set of Q. Counting sets by order walks
  the ZBDD once; nothing is listed unless asked.

The node budget turns a blow-up into a `DiagramLimitError` that names the limit.
`compiled.CompiledBdd` is this `Bdd` with its construction (`mk`, `conj`, `disj`, `xor`,
`neg`) compiled by numba; it creates the same nodes with the same ids, and everything that
reads a diagram here serves both.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence

from archkit.errors import ArchkitError

__all__ = ["Bdd", "DiagramLimitError", "Zbdd"]

TERMINAL = 1 << 30  # the terminals' variable: after every real variable
_SHIFT = 32


class DiagramLimitError(ArchkitError, RuntimeError):
    """A diagram grew past its node budget."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} needs more than {limit:,} nodes")
        self.what = what
        self.limit = limit


@contextlib.contextmanager
def recursion_room(nvars: int) -> Iterator[None]:
    """Python's recursion limit raised for diagrams over `nvars` variables, and put back.

    Apply recursion is as deep as the variables on a path (indices reach 2·nvars + 1, so
    4·nvars covers both kinds of diagram). Python 3.11+ keeps pure-Python frames off the C
    stack, so a higher limit is safe here; it must not outlive the analysis, though: every
    reader that bounds nesting by catching RecursionError (JSON, YAML) counts on the
    default limit, and the json C scanner does use the C stack.
    """
    was = sys.getrecursionlimit()
    if was < 4 * nvars + 2000:
        sys.setrecursionlimit(4 * nvars + 2000)
    try:
        yield
    finally:
        sys.setrecursionlimit(was)


class Bdd:
    """A reduced ordered BDD without complement edges; variables are 0..n-1 in order."""

    def __init__(self, nvars: int, max_nodes: int = 4_000_000) -> None:
        self.var: list[int] = [TERMINAL, TERMINAL]
        self.lo: list[int] = [0, 1]
        self.hi: list[int] = [0, 1]
        self.unique: dict[int, int] = {}
        self.max_nodes = max_nodes
        self._and: dict[int, int] = {}
        self._or: dict[int, int] = {}
        self._xor: dict[int, int] = {}
        self._not: dict[int, int] = {0: 1, 1: 0}

    def __len__(self) -> int:
        return len(self.var)

    def mk(self, v: int, lo: int, hi: int) -> int:
        if lo == hi:
            return lo
        key = (v << (2 * _SHIFT)) | (lo << _SHIFT) | hi
        node = self.unique.get(key)
        if node is None:
            node = len(self.var)
            if node >= self.max_nodes:
                raise DiagramLimitError("the BDD", self.max_nodes)
            self.var.append(v)
            self.lo.append(lo)
            self.hi.append(hi)
            self.unique[key] = node
        return node

    def variable(self, v: int) -> int:
        return self.mk(v, 0, 1)

    def neg(self, a: int) -> int:
        hit = self._not.get(a)
        if hit is not None:
            return hit
        r = self.mk(self.var[a], self.neg(self.lo[a]), self.neg(self.hi[a]))
        self._not[a] = r
        self._not[r] = a
        return r

    def conj(self, a: int, b: int) -> int:
        if a == 0 or b == 0:
            return 0
        if a == 1 or a == b:
            return b
        if b == 1:
            return a
        if a > b:
            a, b = b, a
        key = (a << _SHIFT) | b
        r = self._and.get(key)
        if r is not None:
            return r
        var, lo, hi = self.var, self.lo, self.hi
        va, vb = var[a], var[b]
        if va == vb:
            r = self.mk(va, self.conj(lo[a], lo[b]), self.conj(hi[a], hi[b]))
        elif va < vb:
            r = self.mk(va, self.conj(lo[a], b), self.conj(hi[a], b))
        else:
            r = self.mk(vb, self.conj(a, lo[b]), self.conj(a, hi[b]))
        self._and[key] = r
        return r

    def disj(self, a: int, b: int) -> int:
        if a == 1 or b == 1:
            return 1
        if a == 0 or a == b:
            return b
        if b == 0:
            return a
        if a > b:
            a, b = b, a
        key = (a << _SHIFT) | b
        r = self._or.get(key)
        if r is not None:
            return r
        var, lo, hi = self.var, self.lo, self.hi
        va, vb = var[a], var[b]
        if va == vb:
            r = self.mk(va, self.disj(lo[a], lo[b]), self.disj(hi[a], hi[b]))
        elif va < vb:
            r = self.mk(va, self.disj(lo[a], b), self.disj(hi[a], b))
        else:
            r = self.mk(vb, self.disj(a, lo[b]), self.disj(a, hi[b]))
        self._or[key] = r
        return r

    def xor(self, a: int, b: int) -> int:
        if a == 0:
            return b
        if b == 0:
            return a
        if a == b:
            return 0
        if a == 1:
            return self.neg(b)
        if b == 1:
            return self.neg(a)
        if a > b:
            a, b = b, a
        key = (a << _SHIFT) | b
        r = self._xor.get(key)
        if r is not None:
            return r
        var, lo, hi = self.var, self.lo, self.hi
        va, vb = var[a], var[b]
        if va == vb:
            r = self.mk(va, self.xor(lo[a], lo[b]), self.xor(hi[a], hi[b]))
        elif va < vb:
            r = self.mk(va, self.xor(lo[a], b), self.xor(hi[a], b))
        else:
            r = self.mk(vb, self.xor(a, lo[b]), self.xor(a, hi[b]))
        self._xor[key] = r
        return r

    def reachable(self, root: int) -> list[int]:
        """Non-terminal nodes under `root`, in ascending id order (children before parents)."""
        seen = {0, 1}
        stack = [root]
        out: list[int] = []
        lo, hi = self.lo, self.hi
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            out.append(n)
            stack.append(lo[n])
            stack.append(hi[n])
        out.sort()
        return out

    def probability(
        self, root: int, p: dict[int, float], nodes: Sequence[int] | None = None
    ) -> dict[int, float]:
        """P(node) for every node under `root` (independent variables, Shannon expansion)."""
        val = {0: 0.0, 1: 1.0}
        var, lo, hi = self.var, self.lo, self.hi
        for n in nodes if nodes is not None else self.reachable(root):
            q = p[var[n]]
            val[n] = q * val[hi[n]] + (1.0 - q) * val[lo[n]]
        return val

    def gradient(
        self, root: int, p: dict[int, float], val: dict[int, float], nodes: Sequence[int]
    ) -> dict[int, float]:
        """∂P(root)/∂p(v) for every variable v: Birnbaum importance, all variables in one pass.

        A BDD's paths are disjoint and meet each variable at most once, so the derivative is
        Σ over v's nodes of P(reaching the node) · (P(high) - P(low)).
        """
        reach = dict.fromkeys(nodes, 0.0)
        reach[root] = 1.0
        reach[0] = reach[1] = 0.0
        grad = dict.fromkeys(p, 0.0)
        var, lo, hi = self.var, self.lo, self.hi
        for n in reversed(nodes):
            r = reach[n]
            if r == 0.0:
                continue
            v = var[n]
            q = p[v]
            grad[v] += r * (val[hi[n]] - val[lo[n]])
            reach[hi[n]] += r * q
            reach[lo[n]] += r * (1.0 - q)
        return grad

    def drop_caches(self) -> None:
        """Free the operation caches once the diagram is built."""
        self._and.clear()
        self._or.clear()
        self._xor.clear()

    # Garbage collection: only the compiled diagram (`compiled.CompiledBdd`) frees nodes.
    collects = False

    @property
    def created(self) -> int:
        """Nodes made since the start (this diagram frees none)."""
        return len(self.var)

    def collect(self, roots: list[int]) -> list[int]:
        """Free what `roots` do not reach; their new ids (here: the same, nothing is freed)."""
        return roots

    def finish(self, root: int) -> int:
        """The diagram is built: free what only building needs; returns root's (new) id."""
        self.drop_caches()
        return root

    def lists(self) -> None:
        """Make `var`, `lo`, `hi` Python lists (they are: a compiled diagram converts)."""

    def variables(self, nodes: Sequence[int]) -> set[int]:
        """The variable indices that `nodes` test."""
        var = self.var
        return {var[n] for n in nodes}


class Zbdd:
    """A zero-suppressed BDD of families of sets: node (v, lo, hi) = lo ∪ {s ∪ {v} : s ∈ hi}.

    `max_nodes` bounds its nodes and the memoised steps of `without` together."""

    def __init__(self, max_nodes: int = 4_000_000) -> None:
        self.var: list[int] = [TERMINAL, TERMINAL]
        self.lo: list[int] = [0, 1]
        self.hi: list[int] = [0, 1]
        self.unique: dict[int, int] = {}
        self.max_nodes = max_nodes
        self._without: dict[int, int] = {}
        self._union: dict[int, int] = {}
        self._concat: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.var)

    def mk(self, v: int, lo: int, hi: int) -> int:
        if hi == 0:
            return lo
        key = (v << (2 * _SHIFT)) | (lo << _SHIFT) | hi
        node = self.unique.get(key)
        if node is None:
            node = len(self.var)
            if node >= self.max_nodes:
                raise DiagramLimitError("the cut-set ZBDD", self.max_nodes)
            self.var.append(v)
            self.lo.append(lo)
            self.hi.append(hi)
            self.unique[key] = node
        return node

    def without(self, p: int, q: int) -> int:
        """The sets of family p that contain no set of family q."""
        if q == 0 or p == 0:
            return p
        if q == 1 or p == q:
            return 0  # every set contains ∅; every set of p contains itself
        if p == 1:
            return 1  # ∅ contains a set of q only if ∅ ∈ q, and q has a root variable here
        key = (p << _SHIFT) | q
        r = self._without.get(key)
        if r is not None:
            return r
        var, lo, hi = self.var, self.lo, self.hi
        vp, vq = var[p], var[q]
        if vp < vq:
            r = self.mk(vp, self.without(lo[p], q), self.without(hi[p], q))
        elif vp > vq:
            r = self.without(p, lo[q])
        else:
            lq = lo[q]
            r = self.mk(vp, self.without(lo[p], lq), self.without(self.without(hi[p], lq), hi[q]))
        self._without[key] = r
        # the memo is most of the work and memory (das9701: 7.6 million steps for 0.8 million
        # nodes), so the budget counts both
        if len(self._without) + len(var) > self.max_nodes:
            raise DiagramLimitError("the cut-set ZBDD", self.max_nodes)
        return r

    def minsol(self, bdd: Bdd, f: int, order: int | None, memo: dict[int, int]) -> int:
        """Minimal solutions of BDD node f (minimal cut sets), of at most `order` events.

        `memo` belongs to one BDD: node ids of different diagrams must not meet in it."""
        if order is None:
            return self._minsol_all(bdd, f, memo)
        return self._minsol_k(bdd, f, order, memo)

    def _minsol_all(self, bdd: Bdd, f: int, memo: dict[int, int]) -> int:
        if f < 2:
            return f
        r = memo.get(f)
        if r is None:
            m0 = self._minsol_all(bdd, bdd.lo[f], memo)
            m1 = self._minsol_all(bdd, bdd.hi[f], memo)
            r = self.mk(bdd.var[f], m0, self.without(m1, m0))
            memo[f] = r
        return r

    def _minsol_k(self, bdd: Bdd, f: int, k: int, memo: dict[int, int]) -> int:
        if f < 2:
            return f
        if k == 0:  # only the empty set can remain: does f hold with every variable false?
            while f > 1:
                f = bdd.lo[f]
            return f
        key = (f << 12) | min(k, 4095)
        r = memo.get(key)
        if r is None:
            m0 = self._minsol_k(bdd, bdd.lo[f], k, memo)
            m1 = self._minsol_k(bdd, bdd.hi[f], k - 1, memo)
            r = self.mk(bdd.var[f], m0, self.without(m1, m0))
            memo[key] = r
        return r

    def union(self, p: int, q: int) -> int:
        if p == 0 or p == q:
            return q
        if q == 0:
            return p
        if p > q:
            p, q = q, p
        key = (p << _SHIFT) | q
        r = self._union.get(key)
        if r is not None:
            return r
        var, lo, hi = self.var, self.lo, self.hi
        vp, vq = var[p], var[q]
        if vp < vq:
            r = self.mk(vp, self.union(lo[p], q), hi[p])
        elif vp > vq:
            r = self.mk(vq, self.union(p, lo[q]), hi[q])
        else:
            r = self.mk(vp, self.union(lo[p], lo[q]), self.union(hi[p], hi[q]))
        self._union[key] = r
        return r

    def concat(self, p: int, h: int) -> int:
        """{s ∪ t : s ∈ p, t ∈ h} when every variable of p comes before every variable of h."""
        if p < 2:
            return h if p == 1 else 0
        key = (p << _SHIFT) | h
        r = self._concat.get(key)
        if r is None:
            r = self.mk(self.var[p], self.concat(self.lo[p], h), self.concat(self.hi[p], h))
            self._concat[key] = r
        return r

    def restrict_order(self, root: int, k: int) -> int:
        """The sets of at most k elements."""
        memo: dict[int, int] = {}

        def go(n: int, k: int) -> int:
            if n < 2:
                return n
            if k == 0:
                while n > 1:
                    n = self.lo[n]
                return n
            key = (n << 12) | min(k, 4095)
            r = memo.get(key)
            if r is None:
                r = self.mk(self.var[n], go(self.lo[n], k), go(self.hi[n], k - 1))
                memo[key] = r
            return r

        return go(root, k)

    def count_by_order(self, root: int) -> list[int]:
        """How many sets of each size the family holds (index = size), without listing them."""
        memo: dict[int, list[int]] = {0: [], 1: [1]}
        for n in self._postorder(root):
            a, b = memo[self.lo[n]], memo[self.hi[n]]
            out = list(a) + [0] * max(0, len(b) + 1 - len(a))
            for i, c in enumerate(b):
                out[i + 1] += c
            memo[n] = out
        return memo[root]

    def _postorder(self, root: int) -> list[int]:
        seen = {0, 1}
        stack = [root]
        out: list[int] = []
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            out.append(n)
            stack.append(self.lo[n])
            stack.append(self.hi[n])
        out.sort()  # children have smaller ids
        return out

    def sets(
        self, root: int, p: dict[int, float] | None = None, cutoff: float | None = None
    ) -> Iterator[tuple[list[int], float]]:
        """Every set (its variables, ascending) with its probability product; sets whose product
        falls below `cutoff` are pruned as they are built (a product only shrinks)."""
        stack: list[tuple[int, list[int], float]] = [(root, [], 1.0)]
        while stack:
            n, acc, prob = stack.pop()
            if n == 0:
                continue
            if n == 1:
                yield acc, prob
                continue
            v = self.var[n]
            stack.append((self.lo[n], acc, prob))
            q = prob * (p[v] if p is not None else 1.0)
            if cutoff is None or q >= cutoff:
                stack.append((self.hi[n], acc + [v], q))
