"""The compiled diagram: the Python side of `archkit.faulttree.kernel`'s compiled functions.

`CompiledBdd` holds a diagram's node arrays, hands them to the kernel's apply loop and grows them
when the kernel answers FULL (or the frame stack when it answers DEEP); `minimal_solutions` does the
same for the cut sets' ZBDD pass, and `into_zbdd` copies its result into the Python `Zbdd`. The
kernel module holds only what numba compiles, so its on-disk cache is keyed on that code alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from archkit.faulttree.bdd import TERMINAL, Bdd, DiagramLimitError, Zbdd
from archkit.faulttree.kernel import AND, DEEP, LIMIT, MAX_CACHE, NOT, OR, XOR, compiled_functions

__all__ = ["CompiledBdd", "into_zbdd", "minimal_solutions"]


def _grown(
    k: dict[str, Any], var: Any, lo: Any, hi: Any, table: Any, cache: Any, meta: Any
) -> tuple[Any, ...]:
    """After FULL: (var, lo, hi, table, cache) with the node arrays doubled once full, the
    cache grown with them, and the unique table at least twice the arrays, rehashed. Shared by
    the BDD (`CompiledBdd`) and the minimal-solutions ZBDD, whose `meta` agree on [0] the node
    count, [2] the table mask and [3] the cache mask."""
    n = int(meta[0])
    if n >= var.shape[0]:
        cap = 2 * var.shape[0]
        grown = []
        for old, fill in ((var, TERMINAL), (lo, 0), (hi, 0)):
            new = np.full(cap, fill, dtype=np.int32)
            new[: old.shape[0]] = old
            grown.append(new)
        var, lo, hi = grown
        if cache.shape[0] // 2 < min(cap // 4, MAX_CACHE):
            # a cache far smaller than the diagram misses on most large operations: on
            # das9701 (23M nodes held) 2^20 entries took 57 s, cap/4 = 2^23 took 34 s
            # and 2^25 no less; CUDD grows its cache with its unique table likewise
            size = min(cap // 4, MAX_CACHE)
            cache = np.full(2 * size, -1, dtype=np.int64)
            meta[3] = size - 1
    if 2 * (n + 1) > table.shape[0] or table.shape[0] < 2 * var.shape[0]:
        size = 2 * max(table.shape[0], var.shape[0])
        table = np.zeros(size, dtype=np.int64)
        meta[2] = size - 1
        k["rehash"](var, lo, hi, n, table)
    return var, lo, hi, table, cache


class CompiledBdd(Bdd):
    """`Bdd` whose construction runs in `archkit.faulttree.kernel`. `collect` frees garbage while building;
    `finish` keeps the finished diagram in arrays, where probability, gradient and minimal
    solutions (`minimal_solutions`) run compiled; `lists()` hands it to `Bdd`'s Python readers."""

    def __init__(
        self,
        nvars: int,
        max_nodes: int = 4_000_000,
        cache_bits: int = 20,
        capacity_bits: int = 16,
        stack_rows: int | None = None,
    ) -> None:
        super().__init__(nvars, max_nodes)
        k = compiled_functions()
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
        self._var, self._lo, self._hi, self._table, self._cache = _grown(
            self._k, self._var, self._lo, self._hi, self._table, self._cache, self._meta
        )
        self.var, self.lo, self.hi = self._var, self._lo, self._hi  # type: ignore[assignment]

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


# the minimal-solutions memo holds an int32 per diagram node and order still allowed
MAX_MEMO = 1 << 25
last_steps = [0]  # `without` steps of the last pass, for benchmarks


def minimal_solutions(
    bdd: CompiledBdd,
    root: int,
    order: int | None,
    budget: int,
    capacity_bits: int = 16,
    stack_rows: int | None = None,
) -> tuple[Any, Any, Any, int] | None:
    """The minimal solutions of a finished compiled diagram as ZBDD arrays (var, lo, hi) and
    the root's id: `Zbdd.minsol` compiled. `budget` bounds ZBDD nodes plus `without` steps
    (`DiagramLimitError` past it), as the Python ZBDD counts its nodes and memo. None when
    the diagram is not a finished compiled one, or its memo would pass MAX_MEMO entries.
    (`capacity_bits` and `stack_rows` start the arrays small in tests, to exercise growth.)"""
    k = compiled_functions()
    if k is None or bdd.building or not isinstance(bdd.var, np.ndarray):
        return None
    n = int(bdd.var.shape[0])
    cols = order + 1 if order is not None else 1
    if n * cols > MAX_MEMO:
        return None
    memo = np.full(n * cols, -1, dtype=np.int32)
    cap = 1 << capacity_bits
    zv = np.full(cap, TERMINAL, dtype=np.int32)
    zl = np.zeros(cap, dtype=np.int32)
    zh = np.zeros(cap, dtype=np.int32)
    zl[1] = zh[1] = 1
    table = np.zeros(2 * cap, dtype=np.int64)
    cache_bits = min(20, capacity_bits)
    wc = np.full(2 << cache_bits, -1, dtype=np.int64)
    meta = np.array([2, budget, 2 * cap - 1, (1 << cache_bits) - 1, 0], dtype=np.int64)
    levels = stack_rows or 2 * int(np.max(bdd.var[2:], initial=0)) + 16  # a frame a level
    stk = np.zeros((levels, 5), dtype=np.int64)
    wstk = np.zeros((2 * levels, 5), dtype=np.int64)
    while True:
        meta[1], meta[4] = budget, 0  # a retry repeats steps the cache lost: count them afresh
        r = int(
            k["minsol"](
                root,
                order if order is not None else -1,
                bdd.var,
                bdd.lo,
                bdd.hi,
                memo,
                zv,
                zl,
                zh,
                meta,
                table,
                wc,
                stk,
                wstk,
            )
        )
        if r >= 0:
            m = int(meta[0])
            last_steps[0] = int(meta[4])
            return zv[:m], zl[:m], zh[:m], r
        if r == LIMIT:
            raise DiagramLimitError("the cut-set ZBDD", budget)
        if r == DEEP:
            stk = np.zeros((2 * stk.shape[0], 5), dtype=np.int64)
            wstk = np.zeros((2 * wstk.shape[0], 5), dtype=np.int64)
            continue
        zv, zl, zh, table, wc = _grown(k, zv, zl, zh, table, wc, meta)  # FULL


def into_zbdd(z: Zbdd, out: tuple[Any, Any, Any, int]) -> int:
    """`minimal_solutions`' arrays copied into the Python ZBDD z (which expands modules,
    counts and lists); returns the root's id in z."""
    var, lo, hi = (a.tolist() for a in out[:3])
    new = [0, 1]
    for i in range(2, len(var)):  # children first: ids ascend upward
        new.append(z.mk(var[i], new[lo[i]], new[hi[i]]))
    return new[out[3]]
