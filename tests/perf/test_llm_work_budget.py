"""Issue 28: the LLM engine simulation does bounded work. Shared-prefix groups no request drew cost
nothing, a run stops at its work limit, the capacity analysis's runs share one budget drawn from
`--sim-budget`, and `archkit capacity` says where the spec asks for more, at file:line:col."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from archkit.perf.llm import analysis, sim, sim_kernel
from archkit.perf.llm.model import Replica, replica
from archkit.spec import load_text
from archkit.spec.llm import LlmStage
from archkit.spec.llm_catalogue import ACCELERATORS
from tests.conftest import ROOT

RAG = ROOT / "examples" / "rag-chat.yaml"


def _rep(**engine: object) -> Replica:
    stage = LlmStage.model_validate(
        {
            "engine": {"name": "vllm", "activation_reserve_gb": 2.0, **engine},
            "model": {"preset": "Llama-3.1-8B"},
            "workload": {"prompt_tokens": {"mean_tokens": 512}, "output_tokens": {"mean_tokens": 256}},
        }
    )
    return replica(stage, ACCELERATORS["H100-SXM"])


def test_groups_are_renumbered_in_order_and_unused_ones_dropped() -> None:
    group = np.array([5, -1, 2, 5, 7], dtype=np.int64)
    tokens = np.arange(10, dtype=np.int64) * 16
    dense, kept = sim.dense_groups(group, tokens)
    assert dense.tolist() == [1, -1, 0, 1, 2]
    assert kept.tolist() == [32, 80, 112]


def test_renumbering_leaves_the_run_unchanged(monkeypatch) -> None:
    """A KV cache small enough to evict cached prefixes: the run over 40 drawn groups of 100,000
    is the same as over the groups as drawn (the kernel evicts the lowest-numbered first)."""
    rep = _rep(max_num_seqs=32)
    rng = np.random.default_rng(5)
    n = 600
    req = sim.Requests(
        np.cumsum(rng.exponential(1 / 40, n)),
        rng.integers(300, 900, n),
        rng.integers(1, 64, n),
        np.where(rng.random(n) < 0.8, rng.choice(rng.integers(0, 100_000, 40), n), -1),
        np.full(100_000, 256, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
    )
    dense = sim.simulate(rep, req, seed=2, kv_blocks=400)
    monkeypatch.setattr(sim, "dense_groups", lambda g, t: (g, t))
    plain = sim.simulate(rep, req, seed=2, kv_blocks=400)
    assert dense.total_preemptions > 0  # the cache was full: evictions and preemptions happened
    for a, b in ((dense.ttft_s, plain.ttft_s), (dense.e2e_s, plain.e2e_s), (dense.itl_hist, plain.itl_hist)):
        assert np.array_equal(a, b, equal_nan=True)
    # the same iterations; the scans of 100,000 groups are gone from the work
    assert dense.iterations == plain.iterations and dense.work < plain.work


def test_a_run_counts_its_work_and_stops_at_the_limit() -> None:
    """One sequence at a time (max_num_seqs 1), 512-token prompts, 256-token answers: a request
    is 1 prefill + 255 decode iterations, each counting ITERATION_WORK (24) + its one running
    sequence, so 256 x 25 = 6,400 units; the loop checks before each iteration, so a limit of 10
    requests' work + 1 answers exactly 10 and stops after one more iteration."""
    rep = _rep(max_num_seqs=1)
    n = 40
    req = sim.Requests.plain(np.arange(n) * 0.001, np.full(n, 512), np.full(n, 256))
    full = sim.simulate(rep, req)
    assert sim_kernel.ITERATION_WORK == 24
    assert full.work == 6_400 * n and not full.truncated and np.isfinite(full.e2e_s).all()
    cut = sim.simulate(rep, req, max_work=6_400 * 10 + 1)
    assert cut.truncated and cut.work == 6_400 * 10 + 25
    assert int(np.isfinite(cut.e2e_s).sum()) == 10


def _rag(tmp_path, context: int | None = None, **workload) -> Path:
    doc = yaml.safe_load(RAG.read_text(encoding="utf-8"))
    stage = next(s for s in doc["dataflow"]["stages"] if s.get("llm"))
    stage["llm"]["workload"].update(workload)
    if context:
        stage["llm"]["model"]["max_context_tokens"] = context
    path = tmp_path / "rag.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _spent(path: Path, events: int | None = None) -> tuple[list[analysis.LlmAnalysis], int]:
    res = load_text(path.read_text(encoding="utf-8"), str(path))
    assert res.spec is not None
    work = analysis.WorkBudget(events or analysis.DEFAULT_EVENTS)
    stages = [st for st in res.spec.dataflow.stages if st.llm is not None]
    return [analysis.analyse(res.spec, st, work=work) for st in stages], work.spent


def test_a_million_prefix_groups_cost_about_what_one_does(tmp_path) -> None:
    """The fuzz reproducer (tests/fuzz/reproducers/ had it: rag-chat with `shared_prefix.groups:
    1000000` and nothing else changed; `capacity` took 5.8 CPU s, most of it in the LLM analysis):
    each run scans at most the groups its requests drew (<= 8,000), so the work is within a small
    factor of one group's and inside the default budget, with no budget note."""
    one = _rag(tmp_path)
    base_rows, base = _spent(one)
    many = _rag(tmp_path, shared_prefix={"groups": 1_000_000, "tokens": 400, "share": 1.0})
    rows, spent = _spent(many)
    assert spent <= analysis.WorkBudget().total
    assert spent <= 2 * base, (spent, base)
    assert rows[0].budget_note is None and base_rows[0].budget_note is None
    assert rows[0].knee_rps is not None and rows[0].summary is not None


def test_long_answers_stop_at_the_budget_with_a_located_warning(tmp_path) -> None:
    """100,000-token answers (schema-valid; the KV cache holds a few of them): one run at the design
    rate alone would be ~10^9 units. The analysis stops at its budget, says what it cut, and
    `archkit capacity` names the stage's workload line and the flag that raises it."""
    path = _rag(tmp_path, 131_072, output_tokens={"distribution": "fixed", "mean_tokens": 100_000})
    rows, spent = _spent(path)
    budget = analysis.WorkBudget()
    # every run is given at most what is left and stops within one iteration's work of it
    assert budget.total <= spent <= budget.total * 1.01
    note = rows[0].budget_note
    assert note is not None and "--sim-budget 16000000" in note and "80,000,000 units" in note
    assert rows[0].summary is not None and rows[0].summary.finished < rows[0].summary.requests
    assert any("cut short by the work budget" in n for n in rows[0].summary.notes)

    _load_commands()
    res = CliRunner().invoke(app, ["capacity", str(path), "-f", "json"])
    assert res.exit_code in (0, 1), res.output
    text = path.read_text(encoding="utf-8").splitlines()
    warn = [ln for ln in res.stderr.splitlines() if "stage generate" in ln]
    assert len(warn) == 1, res.stderr
    line = int(warn[0].split(":")[1])
    assert text[line - 1].strip().startswith(("workload:", "prompt_tokens:")), text[line - 1]
    assert "--sim-budget 16000000" in warn[0]


REPRODUCERS = ROOT / "tests" / "fuzz" / "reproducers"


def test_a_two_token_chunk_spends_the_budget_and_says_where(tmp_path) -> None:
    """The fuzz reproducer `valid-rag-chat-chunk-2-tokens.yaml` (rag-chat with
    `max_num_batched_tokens: 2`: a 1,800-token prompt takes 900 iterations of 1-2 running
    sequences). Counted as 1 + its sequences an iteration, its analysis's ~24M iterations fitted the
    budget as ~48M units while costing ~25 times that; counted as ITERATION_WORK + its sequences it
    reaches the budget, stops within one iteration of it and says so at the workload's line."""
    path = REPRODUCERS / "valid-rag-chat-chunk-2-tokens.yaml"
    rows, spent = _spent(path)
    total = analysis.WorkBudget().total
    assert total == 80_000_000 and total <= spent <= total + 2 * (sim_kernel.ITERATION_WORK + 2)
    note = rows[0].budget_note
    assert note is not None and "80,000,000 units" in note and "--sim-budget 16000000" in note


def test_an_ordinary_spec_stays_within_the_budget() -> None:
    """examples/rag-chat.yaml and specs/llm-reference.yaml (whose engine runs mostly 1-3 sequences
    an iteration, so the iterations' own cost is most of its work): no budget note, and each spends
    at most 3/4 of the default budget, so their results are those of an unlimited run."""
    for path in (RAG, ROOT / "specs" / "llm-reference.yaml"):
        rows, spent = _spent(path)
        assert spent <= 0.75 * analysis.WorkBudget().total, (path, spent)
        assert all(r.budget_note is None for r in rows)
