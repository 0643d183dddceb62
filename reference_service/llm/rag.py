"""Retrieval of the RAG variant: a generated passage set, its vector index, top-k search, the prompt.

The passages are generated, not shipped: `passages(n)` makes n short facts about invented towns
from a seeded RNG (the same n gives the same texts on every machine and Python version, since
`random.Random` with an int seed is stable), so no corpus has to be downloaded or kept in the
repository. Each passage is one sentence of ~25 tokens with a fact that only it states, so a
question about a town has one right passage.

The index is an n x 576 float32 matrix of unit-length embeddings (576: SmolLM2-135M's hidden size)
made by the embedding llama-server, one passage per request (the same request shape as a question,
so a question embedded alone scores exactly as its passage would). Built once per model file and
passage set and cached as .npy outside the clone (`cache_path`); searching it is one
matrix-vector product and a partial sort.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np

PASSAGE_SEED = 31  # issue 31
_SYLLABLES = (
    "al", "bar", "cor", "dun", "el", "fen", "gal", "hol", "ir", "jor",
    "kel", "lor", "mar", "nor", "ost", "pel", "quin", "ros", "sel", "tor",
)  # fmt: skip
_KINDS = ("fishing", "mining", "market", "river", "hill", "border", "mill", "harbour")
_COLOURS = ("red", "blue", "green", "yellow", "white", "black", "orange", "purple", "grey", "brown")
_GOODS = ("copper", "wool", "salt", "honey", "timber", "glass", "cheese", "linen", "amber", "pepper")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SYSTEM = "Answer the question from the passages below. If they do not say, answer that you do not know.\n"


def towns(n: int, seed: int = PASSAGE_SEED) -> list[str]:
    """n distinct town names of three syllables (8,000 possible), in a seeded order."""
    if not 0 <= n <= len(_SYLLABLES) ** 3:
        raise ValueError(f"between 0 and {len(_SYLLABLES) ** 3} passages, not {n}")
    rng = random.Random(seed)
    picks = rng.sample(range(len(_SYLLABLES) ** 3), n)
    k = len(_SYLLABLES)
    return [(_SYLLABLES[p // k // k] + _SYLLABLES[p // k % k] + _SYLLABLES[p % k]).title() for p in picks]


def passages(n: int, seed: int = PASSAGE_SEED) -> list[str]:
    """The passage set: one sentence per town, with its lighthouse colour, market good and day."""
    rng = random.Random(seed + 1)
    out = []
    for town in towns(n, seed):
        kind, colour = rng.choice(_KINDS), rng.choice(_COLOURS)
        good, day, year = rng.choice(_GOODS), rng.choice(_DAYS), rng.randrange(1450, 1950)
        out.append(
            f"{town} is a {kind} town whose lighthouse, built in {year}, is painted {colour}; "
            f"its market sells {good} every {day}."
        )
    return out


def question_of(messages: list[dict]) -> str:
    """The text retrieval searches for: the last user message (the whole conversation otherwise)."""
    for m in reversed(messages):
        if m.get("role") == "user":
            return str(m["content"])
    return "\n".join(str(m["content"]) for m in messages)


def with_passages(messages: list[dict], found: list[str]) -> list[dict]:
    """The engine's messages: a system message with the numbered passages, then the client's."""
    context = "".join(f"[{i}] {p}\n" for i, p in enumerate(found, 1))
    rest = [m for m in messages if m.get("role") != "system"]
    own = "".join(str(m["content"]) + "\n" for m in messages if m.get("role") == "system")
    return [{"role": "system", "content": own + SYSTEM + context}, *rest]


def unit(v: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (cosine similarity is then a dot product); zero rows stay zero."""
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.where(norm == 0, 1, norm)).astype(np.float32)


class Index:
    """Unit-length passage embeddings; `search` gives the k best passage numbers, best first."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = unit(np.asarray(matrix, dtype=np.float32))

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def search(self, query: np.ndarray, k: int) -> list[int]:
        """Top k by cosine similarity; equal scores in passage order (deterministic)."""
        scores = self.matrix @ unit(np.asarray(query, dtype=np.float32))
        k = min(k, len(scores))
        if k <= 0:
            return []
        part = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        return sorted((int(i) for i in part), key=lambda i: (-float(scores[i]), i))


def cache_path(model_sha256: str, texts: list[str], cache_dir: str | None = None) -> Path:
    """Where the index of these passages under this model file is kept (outside the clone)."""
    base = Path(
        cache_dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "archkit" / "llm-rag"
    )
    h = hashlib.sha256(model_sha256.encode())
    for t in texts:
        h.update(t.encode() + b"\0")
    return base / f"index-{len(texts)}-{h.hexdigest()[:16]}.npy"


async def load_or_build(path: Path, texts: list[str], embed: Callable[[str], Awaitable[np.ndarray]]) -> Index:
    """The cached index at `path`, else embed every passage (one request each) and cache it atomically."""
    if path.is_file():
        m = np.load(path)
        if m.shape[0] == len(texts):
            return Index(m)
    rows = [await embed(t) for t in texts]
    m = unit(np.stack(rows)) if rows else np.zeros((0, 576), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as f:
        np.save(f, m)
    tmp.replace(path)
    return Index(m)
