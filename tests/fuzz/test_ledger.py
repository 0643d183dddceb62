"""The long fuzz run's ledger adds batches up, each batch number once."""

from __future__ import annotations

from pathlib import Path

from tests.fuzz import ledger


def _summary(batch: int, specs: int, over: int = 0) -> dict:
    return {
        "batch": batch,
        "specs": specs,
        "stages": {"check": specs, "capacity": specs, "faulttree": specs, "render": specs // 16},
        "tracebacks": 0,
        "over_bounds": over,
        "cpu_s": 2.5 * specs,
        "load_at_start": [1.0, 1.0, 1.0],
        "load_at_end": [2.0, 2.0, 2.0],
        "reproducers": ["valid-x.yaml"] if over else [],
    }


def test_batches_accumulate_and_a_rerun_counts_once(tmp_path: Path) -> None:
    book = tmp_path / ledger.LEDGER
    assert ledger.next_batch(book) == 1
    assert ledger.totals(book)["specs"] == 0
    ledger.append(book, _summary(1, 100, over=2))
    ledger.append(book, _summary(2, 48))
    ledger.append(book, _summary(1, 100))  # the same seed again: the same specs, not new ones
    assert ledger.next_batch(book) == 3
    assert ledger.totals(book) == {
        "batches": 2,
        "specs": 148,
        "renders": 6 + 3,
        "tracebacks": 0,
        "over_bounds": 2,
        "cpu_s": 370.0,
    }
    first = ledger.read(book)[0]
    assert first["load"] == [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]] and first["reproducers"] == ["valid-x.yaml"]
