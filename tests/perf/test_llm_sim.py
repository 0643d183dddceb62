"""The continuous-batching simulation against closed forms and its own invariants."""

from __future__ import annotations

import numpy as np
import pytest

from archkit.perf.llm import sim
from archkit.perf.llm.model import Replica, replica
from archkit.spec.llm import LlmStage
from archkit.spec.llm_catalogue import ACCELERATORS


def _rep(**engine: object) -> Replica:
    stage = LlmStage.model_validate(
        {
            "engine": {"name": "vllm", "activation_reserve_gb": 2.0, **engine},
            "model": {"preset": "Llama-3.1-8B"},
            "workload": {"prompt_tokens": {"mean_tokens": 512}, "output_tokens": {"mean_tokens": 256}},
        }
    )
    return replica(stage, ACCELERATORS["H100-SXM"])


def _poisson(rate: float, n: int, prompt: int, output: int, seed: int = 0) -> sim.Requests:
    arr = np.cumsum(np.random.default_rng(seed).exponential(1 / rate, n))
    return sim.Requests.plain(arr, np.full(n, prompt), np.full(n, output))


def test_single_sequence_engine_is_md1() -> None:
    """max_num_seqs = 1 and fixed lengths: each request is one deterministic service, so TTFT = M/D/1 wait + prefill."""
    rep = _rep(max_num_seqs=1)
    prefill = rep.iteration_s(512, rep.attn_flops(512, 0), 0)
    service = prefill + sum(rep.iteration_s(1, rep.attn_flops(1, 511 + g), 511 + g) for g in range(1, 256))
    rate = 0.5 / service  # utilisation 0.5
    run = sim.simulate(rep, _poisson(rate, 40_000, 512, 256))
    wait = rate * service**2 / (2 * (1 - 0.5))  # Pollaczek-Khinchine, deterministic service
    assert np.isfinite(run.e2e_s).all()
    assert float(np.mean(run.ttft_s)) == pytest.approx(wait + prefill, rel=0.05)
    # every request's time in service is exactly the deterministic service time
    assert float(np.min(run.e2e_s)) == pytest.approx(service, rel=1e-9)
    assert run.total_preemptions == 0 and run.max_running == 1


def test_a_never_full_kv_cache_never_preempts() -> None:
    rep = _rep(max_num_seqs=64)
    assert rep.kv_blocks >= 64 * rep.blocks_for(512 + 256)
    rng = np.random.default_rng(3)
    n = 5_000
    req = sim.Requests.plain(
        np.cumsum(rng.exponential(1 / 30, n)), rng.integers(16, 512, n), rng.integers(1, 256, n)
    )
    run = sim.simulate(rep, req, seed=1)
    assert run.total_preemptions == 0 and np.isfinite(run.e2e_s).all()
    assert run.output_tokens == int(req.output.sum())


def test_a_small_kv_cache_preempts_by_recompute_and_still_answers_everyone() -> None:
    rep = _rep(max_num_seqs=64)
    n = 2_000
    run = sim.simulate(rep, _poisson(40, n, 512, 256), kv_blocks=600)  # ~12 sequences of 48 blocks
    assert run.total_preemptions > 0 and int(run.preemptions.sum()) == run.total_preemptions
    assert np.isfinite(run.e2e_s).all() and run.output_tokens == 256 * n


def test_deterministic_per_seed() -> None:
    rep = _rep(speculative={"draft_tokens": 3, "acceptance_rate": 0.7})
    req = _poisson(20, 3_000, 256, 128)
    a, b = sim.simulate(rep, req, seed=5), sim.simulate(rep, req, seed=5)
    assert np.array_equal(a.ttft_s, b.ttft_s) and np.array_equal(a.e2e_s, b.e2e_s)
    assert np.array_equal(a.itl_hist, b.itl_hist)


def test_speculative_decoding_emits_the_expected_tokens_per_step() -> None:
    rep = _rep(max_num_seqs=1, speculative={"draft_tokens": 4, "acceptance_rate": 0.8})
    n, out = 200, 2_001
    run = sim.simulate(rep, _poisson(0.001, n, 16, out), seed=2)  # requests never overlap
    decode_steps = run.iterations - n  # one prefill iteration each
    per_step = n * (out - 1) / decode_steps
    # (1 - 0.8^5) / (1 - 0.8) = 3.36, less a little for the truncated last step of each request
    assert per_step == pytest.approx(rep.tokens_per_step, rel=0.02)


def test_chunked_prefill_bounds_tokens_per_iteration() -> None:
    rep = _rep(max_num_batched_tokens=512)
    run = sim.simulate(rep, _poisson(0.01, 10, 2_048, 4))
    # alone, each 2,048-token prompt takes 4 chunks, then 3 decodes
    assert run.iterations == 10 * (4 + 3)


def test_shared_prefix_hits_skip_compute() -> None:
    rep = _rep()
    n = 500
    base = _poisson(5, n, 1_024, 8)
    grouped = sim.Requests(
        base.arrival_s,
        base.prompt,
        base.output,
        np.zeros(n, dtype=np.int64),
        np.array([960]),
        base.private_hit,
    )
    cold = sim.summarise([sim.simulate(rep, base)])
    warm = sim.summarise([sim.simulate(rep, grouped)])
    assert warm.ttft_ms["p50"] < 0.5 * cold.ttft_ms["p50"]


def test_summary_goodput_and_attainment() -> None:
    rep = _rep()
    run = sim.simulate(rep, _poisson(10, 4_000, 512, 64))
    s = sim.summarise([run], slo_ttft_ms=1e9, slo_tpot_ms=1e9)
    assert s.slo_attainment == 1.0 and s.goodput_rps == pytest.approx(s.requests_per_s)
    tight = sim.summarise([run], slo_ttft_ms=s.ttft_ms["p50"])
    assert tight.slo_attainment == pytest.approx(0.5, abs=0.02)
    assert s.itl_ms["p50"] <= s.itl_ms["p99"]


def test_per_request_costs_add_to_ttft_end_to_end_and_engine_time() -> None:
    """A request alone: the engine's per-request set-up lengthens the iteration that admits it and the
    share outside the engine is added to TTFT and end to end, so both grow by their sum (3 + 5 ms)
    and the engine is busy 3 ms longer per request; the gaps between tokens do not change."""
    from dataclasses import replace

    base = _rep(max_num_seqs=1)
    costly = replace(base, request_overhead_s=0.003, client_overhead_s=0.005)
    req = sim.Requests.plain(np.array([0.0, 100.0, 200.0]), np.full(3, 512), np.full(3, 8))
    a, b = sim.simulate(base, req), sim.simulate(costly, req)
    assert a.ttft_s[0] == pytest.approx(base.iteration_s(512, base.attn_flops(512, 0), 0), rel=1e-12)
    assert b.ttft_s - a.ttft_s == pytest.approx(np.full(3, 0.008), abs=1e-12)
    assert b.e2e_s - a.e2e_s == pytest.approx(np.full(3, 0.008), abs=1e-12)
    assert b.busy_s - a.busy_s == pytest.approx(3 * 0.003, abs=1e-12)
    assert np.array_equal(a.itl_hist, b.itl_hist)


def test_an_admission_holds_up_the_running_sequences_decode() -> None:
    """Two slots: B arrives while A decodes. B's admission lengthens the one iteration that admits it,
    so A's end to end grows by its own admission (3 ms) + B's (3 ms) + the client share (5 ms)."""
    from dataclasses import replace

    base = _rep(max_num_seqs=2)
    costly = replace(base, request_overhead_s=0.003, client_overhead_s=0.005)
    req = sim.Requests.plain(np.array([0.0, 0.05]), np.array([16, 16]), np.array([200, 2]))
    a, b = sim.simulate(base, req), sim.simulate(costly, req)
    # B joins a later iteration of A's by up to one step: A's contexts shift by a token (~40 ns a step)
    assert b.e2e_s[0] - a.e2e_s[0] == pytest.approx(0.011, abs=1e-5)
    assert b.busy_s - a.busy_s == pytest.approx(0.006, abs=1e-5)


def test_each_further_sequence_in_an_iteration_costs_its_overhead() -> None:
    """Two 512-token prompts at t = 0 share every iteration (one prefill, then 7 decodes of 2), so a
    4 ms cost per further sequence adds 4 ms to both TTFTs and 8 x 4 = 32 ms to both end-to-end
    times and the engine's busy time; a third request alone at t = 100 s pays nothing. The
    replica's own step: decode_step_s(3, c) grows by 2 x 4 ms, iteration_s of one sequence not at all."""
    from dataclasses import replace

    base = _rep(max_num_seqs=2)
    costly = replace(base, sequence_overhead_s=0.004)
    req = sim.Requests.plain(np.array([0.0, 0.0, 100.0]), np.full(3, 512), np.full(3, 8))
    a, b = sim.simulate(base, req), sim.simulate(costly, req)
    assert b.ttft_s - a.ttft_s == pytest.approx([0.004, 0.004, 0.0], abs=1e-12)
    assert b.e2e_s - a.e2e_s == pytest.approx([0.032, 0.032, 0.0], abs=1e-12)
    assert b.busy_s - a.busy_s == pytest.approx(0.032, abs=1e-12)
    assert costly.decode_step_s(3, 600) - base.decode_step_s(3, 600) == pytest.approx(0.008, abs=1e-12)
    assert costly.iteration_s(512, 0.0, 0) == base.iteration_s(512, 0.0, 0)
    assert costly.prefill_s(512) == base.prefill_s(512)
