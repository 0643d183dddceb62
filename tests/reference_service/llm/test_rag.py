"""The RAG variant's retrieval (reference_service/llm/rag.py) without servers: passages, search, prompt, cache."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from reference_service.llm import rag


def test_the_passage_set_is_the_same_on_every_call_and_names_each_town_once() -> None:
    a, b = rag.passages(1000), rag.passages(1000)
    assert a == b and len(set(a)) == 1000
    assert len(set(rag.towns(1000))) == 1000
    assert a[0] == (
        "Alfenal is a mining town whose lighthouse, built in 1807, is painted yellow; "
        "its market sells salt every Wednesday."
    )
    with pytest.raises(ValueError, match="between 0 and 8000"):
        rag.towns(8001)


def test_search_ranks_by_cosine_and_breaks_ties_by_passage_number() -> None:
    # rows (unit after scaling): e1, e2, (e1+e2)/√2, e1 again, -e1; query e1 + 0.5 e2 (cosines:
    # 2/√5 = 0.894, 1/√5 = 0.447, 3/√10 = 0.949, 0.894, -0.894)
    m = np.array([[2, 0], [0, 3], [1, 1], [5, 0], [-1, 0]], dtype=np.float32)
    index = rag.Index(m)
    q = np.array([1.0, 0.5])
    assert index.search(q, 3) == [2, 0, 3]
    assert index.search(q, 5) == [2, 0, 3, 1, 4]
    assert index.search(q, 9) == [2, 0, 3, 1, 4]
    assert index.search(q, 0) == []
    assert np.allclose(np.linalg.norm(index.matrix, axis=1), 1)


def test_the_passages_go_into_one_system_message_before_the_conversation() -> None:
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where?"},
        {"role": "assistant", "content": "Here."},
        {"role": "user", "content": "What colour?"},
    ]
    out = rag.with_passages(msgs, ["P one.", "P two."])
    assert out[0] == {"role": "system", "content": "Be brief.\n" + rag.SYSTEM + "[1] P one.\n[2] P two.\n"}
    assert out[1:] == msgs[1:]
    assert rag.question_of(msgs) == "What colour?"
    assert rag.question_of([{"role": "system", "content": "a"}]) == "a"


def test_the_index_is_built_once_and_then_read_from_its_cache(tmp_path) -> None:
    texts = ["alpha", "beta", "gamma"]
    calls: list[str] = []

    async def embed(text: str) -> np.ndarray:  # a deterministic embedding: letter counts a..z
        calls.append(text)
        return np.array([text.count(chr(c)) for c in range(97, 123)], dtype=np.float32)

    path = rag.cache_path("sha", texts, str(tmp_path))
    first = asyncio.run(rag.load_or_build(path, texts, embed))
    again = asyncio.run(rag.load_or_build(path, texts, embed))
    assert calls == texts  # the second load embedded nothing
    assert np.array_equal(first.matrix, again.matrix) and path.is_file()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left
    # "alpha": a=2, l=1, p=1, h=1 -> the query "aa" is nearest to it, then "gamma" (a=2, g, m=2)
    assert first.search(np.eye(26, dtype=np.float32)[0], 2) == [0, 2]
    # another model file or another passage set is another cache entry
    assert rag.cache_path("other", texts, str(tmp_path)) != path
    assert rag.cache_path("sha", [*texts, "delta"], str(tmp_path)) != path
