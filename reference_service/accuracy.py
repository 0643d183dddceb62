"""Character accuracy of OCR output against the golden set's ground truth."""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def normalise(text: str) -> str:
    """Collapse whitespace (line breaks included) to single spaces."""
    return " ".join(text.split())


def levenshtein(a: str, b: str) -> int:
    """Edit distance between two strings (insertions, deletions, substitutions)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def char_accuracy(predicted: str, truth: str) -> float:
    """1 - CER over whitespace-normalised text, floored at 0."""
    p, t = normalise(predicted), normalise(truth)
    if not t:
        return 1.0 if not p else 0.0
    return max(0.0, 1.0 - levenshtein(p, t) / len(t))


def load_manifest(golden_dir: Path = GOLDEN_DIR) -> dict:
    """The golden set's manifest: {relative image path: {lines: [{text, bbox}], ...}}."""
    return json.loads((golden_dir / "manifest.json").read_text())


def truth_text(doc: dict) -> str:
    """Ground-truth text of one document, lines joined by newlines."""
    return "\n".join(line["text"] for line in doc["lines"])


def corpus_accuracy(
    predictions: dict[str, str], golden_dir: Path = GOLDEN_DIR, only: list[str] | None = None
) -> float:
    """Character accuracy over all documents, or ``only`` these (1 - total edits / total chars)."""
    docs = load_manifest(golden_dir)["documents"]
    edits = chars = 0
    for name, doc in docs.items():
        if only is not None and name not in only:
            continue
        t = normalise(truth_text(doc))
        p = normalise(predictions.get(name, ""))
        edits += min(levenshtein(p, t), len(t))
        chars += len(t)
    return 1.0 - edits / max(chars, 1)
