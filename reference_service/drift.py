"""Drift golden signal: two-sample Kolmogorov-Smirnov test of recent per-page confidence
against the golden set's (seed 004 §3.4: drift must be measured to be acted on)."""

from __future__ import annotations

import json
import math
from collections import deque
from pathlib import Path

EXPECTED = Path(__file__).resolve().parent / "golden" / "expected_outputs.json"


def ks_statistic(a: list[float], b: list[float]) -> float:
    """Largest distance between the two empirical CDFs."""
    xs, ys = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(xs) and j < len(ys):
        x = min(xs[i], ys[j])
        while i < len(xs) and xs[i] <= x:
            i += 1
        while j < len(ys) and ys[j] <= x:
            j += 1
        d = max(d, abs(i / len(xs) - j / len(ys)))
    return d


def ks_p_value(a: list[float], b: list[float]) -> float:
    """Asymptotic p-value that both samples come from one distribution (Numerical Recipes)."""
    if not a or not b:
        return 1.0
    d = ks_statistic(a, b)
    en = math.sqrt(len(a) * len(b) / (len(a) + len(b)))
    lam = (en + 0.12 + 0.11 / en) * d
    if lam < 1e-3:
        return 1.0
    total, sign = 0.0, 1.0
    for k in range(1, 101):
        term = sign * math.exp(-2.0 * k * k * lam * lam)
        total += term
        if abs(term) < 1e-10:
            break
        sign = -sign
    return min(1.0, max(0.0, 2.0 * total))


def reference_confidences(path: Path = EXPECTED) -> list[float]:
    """Mean line confidence of each golden page, as the service recorded it at every precision.

    The outputs are kept per precision (verify_rollback); each set is a healthy service's, so
    the reference pools them rather than asking the Triton worker which one it runs.
    """
    by_precision = json.loads(path.read_text())["outputs"]
    out = []
    for o in (o for outputs in by_precision.values() for o in outputs.values()):
        confs = [line["confidence"] for line in o["lines"]]
        if confs:
            out.append(sum(confs) / len(confs))
    return out


class DriftMonitor:
    """Keeps the last ``window`` page confidences; p-value recomputed every ``every`` pages."""

    def __init__(self, reference: list[float], window: int = 200, min_samples: int = 30, every: int = 10):
        self.reference, self.min_samples, self.every = reference, min_samples, every
        self.recent: deque[float] = deque(maxlen=window)
        self.p_value = 1.0
        self._seen = 0

    def observe(self, confidence: float) -> float:
        self.recent.append(confidence)
        self._seen += 1
        if len(self.recent) >= self.min_samples and self._seen % self.every == 0:
            self.p_value = ks_p_value(list(self.recent), self.reference)
        return self.p_value
