"""LLM calibration: the step-time fits, KV capacity readers, efficiencies, and folding into a spec.

Hand-computed cases: points generated from known coefficients must give those coefficients
back; the vLLM info line is in the shape vLLM's metrics print (labels of `CacheConfig`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from archkit.calibrate.apply import with_calibration
from archkit.calibrate.llm import (
    arrival_gaps,
    arrivals_step,
    efficiency,
    fit_decode,
    fit_prefill,
    kv_capacity_llamacpp,
    kv_capacity_vllm,
    per_request,
)
from archkit.calibrate.sweep import CalibrationError
from archkit.spec import load_file
from tests.conftest import ROOT

SPEC = ROOT / "specs" / "llm-reference.yaml"


def _load(path):  # type: ignore[no-untyped-def]
    spec = load_file(path).spec
    assert spec is not None
    return spec


def test_prefill_fit_recovers_fixed_and_per_token_cost() -> None:
    pts = [(n, 3.0 + 0.8 * n) for n in (32, 128, 256, 512)]
    fit = fit_prefill(pts)
    assert fit["fixed_ms"] == pytest.approx(3.0, abs=1e-3)
    assert fit["ms_per_token"] == pytest.approx(0.8, abs=1e-4)
    assert fit["tokens_per_s"] == 1250.0 and fit["max_relative_error"] < 1e-6


def test_decode_fit_separates_sequences_from_context() -> None:
    pts = [(c, ctx, 20.0 + 4.0 * (c - 1) + 0.01 * ctx) for c in (1, 2) for ctx in (56.0, 280.0, 664.0)]
    fit = fit_decode(pts)
    assert (fit["base_ms"], fit["per_sequence_ms"], fit["per_context_token_ms"]) == pytest.approx(
        (20.0, 4.0, 0.01), abs=1e-4
    )


def test_llamacpp_kv_capacity_is_every_slots_context() -> None:
    kv = kv_capacity_llamacpp({"total_slots": 2}, [{"id": 0, "n_ctx": 1024}, {"id": 1, "n_ctx": 1024}])
    assert kv == {"source": "llama.cpp /slots n_ctx", "slots": 2, "tokens_per_slot": 1024, "tokens": 2048}


def test_vllm_kv_capacity_is_blocks_times_block_size() -> None:
    text = (
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
        "# TYPE vllm:cache_config_info gauge\n"
        'vllm:cache_config_info{block_size="16",cache_dtype="auto",gpu_memory_utilization="0.9",'
        'num_cpu_blocks="None",num_gpu_blocks="27910",prefix_caching_hash_algo="builtin"} 1.0\n'
    )
    assert kv_capacity_vllm(text)["tokens"] == 27910 * 16
    with pytest.raises(CalibrationError, match="no vllm:cache_config_info"):
        kv_capacity_vllm("vllm:num_requests_running 0\n")


def test_efficiency_from_measured_rates() -> None:
    llm = _load(SPEC).stage("generate").llm
    decode = {"base_ms": 11.0, "per_context_token_ms": 0.01}
    eff = efficiency(llm, {"ms_per_token": 2.0, "fixed_ms": 1.0}, decode, 98_362_432)
    # 2 x 134.5e6 FLOPs per token in 2 ms = 134.5 GFLOPS of the catalogue's 144: 0.934
    assert eff["prefill_mfu"] == pytest.approx(2 * 134.5e6 / (0.002 * 0.144e12), abs=1e-4)
    # the model's weights (134.5e6 x q4_1's 20/32 B = 84.1 MB) streamed in the step at the mean
    # context (67 + 16 / 2 = 75 tokens: 11 + 0.75 ms) less the 1 ms overhead = 10.75 ms, of 13 GB/s
    assert eff["weight_bytes"] == int(134.5e6 * 20 / 32) and eff["decode_context_tokens"] == 75
    assert eff["decode_bandwidth"] == pytest.approx(134.5e6 * 20 / 32 / (0.01075 * 13e9), abs=1e-4)
    assert eff["step_overhead_ms"] == 1.0 and eff["file_bytes"] == 98_362_432


def test_the_calibrated_model_reproduces_the_measured_decode_step() -> None:
    """Folded back into the spec, the efficiency makes the model's one-sequence step at the mean
    context the measured one (what the fidelity run's ITL rests on)."""
    from archkit.perf.llm.model import replica

    llm = _load(SPEC).stage("generate").llm
    decode = {"base_ms": 6.83, "per_context_token_ms": 0.0088}
    eff = efficiency(llm, {"ms_per_token": 4.14, "fixed_ms": -8.3}, decode, 96_576_768)
    assert eff["step_overhead_ms"] == 0.0  # a negative fixed part: no overhead measured
    tuned = llm.model_copy(deep=True)
    tuned.efficiency.decode_bandwidth = eff["decode_bandwidth"]
    tuned.efficiency.step_overhead_ms = 0.0
    tuned.efficiency.prefill_mfu = eff["prefill_mfu"]
    step = replica(tuned, llm.accelerator.resolve(None)).decode_step_s(1, 0) * 1000
    # 6.83 + 0.0088 x 75 = 7.49 ms; the model adds the KV bytes of one token only (23 KB: ~2 us)
    assert step == pytest.approx(6.83 + 0.0088 * 75, rel=1e-3)


def test_a_calibration_replaces_the_llm_stages_declared_efficiency(tmp_path) -> None:
    spec_file = tmp_path / "llm.yaml"
    probe = "environments:\n  - id: probe\n    calibration: llm.cpu.json\n"
    spec_file.write_text(SPEC.read_text().replace("environments:\n", probe, 1))
    eff = {
        "prefill_mfu": 0.3,
        "decode_bandwidth": 0.6,
        "step_overhead_ms": 1.5,
        "request_overhead_ms": 0.0,  # measured as none: kept as a measurement
        "client_overhead_ms": 4.25,
    }
    doc = {"kind": "calibration", "models": {}, "llm": {"generate": {"efficiency": eff}}}
    (tmp_path / "llm.cpu.json").write_text(json.dumps(doc))
    spec = _load(spec_file)
    out = with_calibration(spec, str(spec_file), "probe").stage("generate").llm.efficiency
    assert (out.prefill_mfu, out.decode_bandwidth, out.step_overhead_ms) == (0.3, 0.6, 1.5)
    assert (out.request_overhead_ms, out.client_overhead_ms) == (0.0, 4.25)
    assert spec.stage("generate").llm.efficiency.prefill_mfu == 0.5  # the loaded spec is untouched


def test_a_calibration_gives_the_capacity_model_the_engines_kv_and_slots(tmp_path) -> None:
    """The measured KV capacity and slot count replace the declared ones, so that the predicted
    concurrency before requests queue is the engine's (llama-server: 2 slots x 1,024 tokens)."""
    from archkit.perf.llm.analysis import analyse

    spec_file = tmp_path / "llm.yaml"
    probe = "environments:\n  - id: probe\n    calibration: llm.cpu.json\n"
    text = SPEC.read_text().replace("environments:\n", probe, 1)
    # declare more slots and no fixed cache: only the calibration can bring them back to the engine's
    text = text.replace("max_num_seqs: 2  #", "max_num_seqs: 8  #").replace(
        "          kv_capacity_tokens: 2048\n", ""
    )
    spec_file.write_text(text)
    doc = {
        "kind": "calibration",
        "models": {},
        "llm": {
            "generate": {"kv_capacity": {"source": "llama.cpp /slots n_ctx", "slots": 2, "tokens_per_slot": 1024,
                                         "tokens": 2048}}
        },
    }  # fmt: skip
    (tmp_path / "llm.cpu.json").write_text(json.dumps(doc))
    spec = _load(spec_file)
    before = analyse(spec, spec.stage("generate"), search=False)
    assert before.rep is not None and before.rep.kv_tokens > 800_000 and before.concurrency == 8
    calibrated = with_calibration(spec, str(spec_file), "probe")
    after = analyse(calibrated, calibrated.stage("generate"), search=False)
    assert after.rep is not None and after.rep.kv_tokens == 2048
    assert (after.concurrency, after.concurrency_binds) == (2, "max_num_seqs")
    assert spec.stage("generate").llm.engine.max_num_seqs == 8  # the loaded spec is untouched


def test_per_request_costs_from_cached_prompts() -> None:
    """Three streamed requests whose slot held 58 of their 59 prompt tokens, by hand: one decode step
    at context 59 is 6.8 + 0.0088 x 59 = 7.3192 ms, so the engine's per-request set-up is prompt_ms -
    7.3192 (4.2498, 3.6428, 5.0358; median 4.2498) and the client's share is TTFT - prompt_ms (11.411,
    5.138, 10.935; median 10.935). A request with 3 uncached tokens also pays 2 x 4 ms of prefill."""
    timings = [
        (22.98, {"prompt_n": 1, "cache_n": 58, "prompt_ms": 11.569}),
        (16.1, {"prompt_n": 1, "cache_n": 58, "prompt_ms": 10.962}),
        (31.29, {"prompt_n": 3, "cache_n": 56, "prompt_ms": 12.355 + 8.0}),
    ]
    got = per_request(timings, {"ms_per_token": 4.0}, {"base_ms": 6.8, "per_context_token_ms": 0.0088})
    assert got["request_overhead_ms"] == pytest.approx(4.2498, abs=1e-3)
    assert got["client_overhead_ms"] == pytest.approx(10.935, abs=1e-3)
    assert got["points"] == 3
    fast = per_request([(5.0, {"prompt_n": 1, "cache_n": 0, "prompt_ms": 6.0})], {"ms_per_token": 4.0},
                       {"base_ms": 7.0})  # fmt: skip
    assert (fast["request_overhead_ms"], fast["client_overhead_ms"]) == (0.0, 0.0)  # never below 0


def test_efficiency_carries_the_per_request_costs() -> None:
    llm = _load(SPEC).stage("generate").llm
    per = {"request_overhead_ms": 2.5, "client_overhead_ms": 4.5}
    eff = efficiency(llm, {"ms_per_token": 2.0, "fixed_ms": 1.0}, {"base_ms": 11.0}, None, per)
    assert (eff["request_overhead_ms"], eff["client_overhead_ms"]) == (2.5, 4.5)
    assert (
        efficiency(llm, {"ms_per_token": 2.0, "fixed_ms": 1.0}, {"base_ms": 11.0}, None)["client_overhead_ms"]
        is None
    )


def test_a_large_prefill_intercept_leaves_the_measured_decode_step_intact() -> None:
    """The 10:28 fidelity calibration: prefill 22.9 ms + 4.87 ms per token, decode 8.2585 ms + 0.0128169
    ms per context token. Half the decode base (4.129 ms) as overhead left 5.09 ms at the mean context
    (75 tokens: 9.220 ms step) for the 84.1 MB of weights, more than 13 GB/s allows (6.47 ms); the
    overhead is cut to 9.220 - 6.47 = 2.75 ms, the bandwidth share is 1 and the step is the measured one."""
    from archkit.perf.llm.model import replica

    llm = _load(SPEC).stage("generate").llm
    decode = {"base_ms": 8.2585, "per_context_token_ms": 0.0128169}
    eff = efficiency(llm, {"ms_per_token": 4.86949, "fixed_ms": 22.8891}, decode, 96_576_768)
    step = 8.2585 + 0.0128169 * 75
    floor = 134.5e6 * 20 / 32 / 13e9 * 1000
    assert eff["step_overhead_ms"] == pytest.approx(step - floor, abs=1e-3)
    assert eff["decode_bandwidth"] == pytest.approx(1.0, abs=1e-3)
    tuned = llm.model_copy(deep=True)
    for key in ("decode_bandwidth", "step_overhead_ms", "prefill_mfu"):
        setattr(tuned.efficiency, key, eff[key])
    assert replica(tuned, llm.accelerator.resolve(None)).decode_step_s(1, 0) * 1000 == pytest.approx(
        step, rel=2e-3
    )


def test_per_request_set_up_against_the_measured_one_sequence_step() -> None:
    """With the probe's own one-sequence step (7.52 ms at context 56) moved to context 59 along the
    fit's slope (7.52 + 3 x 0.0128169 = 7.55845 ms), a cached prompt answered in 7.9 ms leaves
    0.34155 ms of set-up, where the fit's straight line (8.2585 + 59 x 0.0128169 = 9.0147 ms) would say none."""
    decode = {"base_ms": 8.2585, "per_context_token_ms": 0.0128169}
    sample = [(11.2, {"prompt_n": 1, "cache_n": 58, "prompt_ms": 7.9})]
    got = per_request(sample, {"ms_per_token": 4.87}, decode, (7.52, 56.0))
    assert got["request_overhead_ms"] == pytest.approx(0.34155, abs=1e-3)
    assert got["client_overhead_ms"] == pytest.approx(3.3, abs=1e-3)
    assert per_request(sample, {"ms_per_token": 4.87}, decode)["request_overhead_ms"] == 0.0


def test_the_per_request_probe_idles_as_the_workload_arrives() -> None:
    """The reference workload arrives Poisson at 0.2 req/s: 16 gaps of mean 5 s would take 80 s, over
    the probe's 45 s, so they are drawn at 16 / 45 req/s (mean 2.8125 s): exactly the exponential
    draws of numpy's generator for that seed. With a 200 s budget the spec's own rate holds."""
    llm = _load(SPEC).stage("generate").llm
    assert (llm.workload.arrivals.process, llm.workload.arrivals.rate_rps) == ("poisson", 0.2)
    gaps = arrival_gaps(llm, 16, 45.0, seed=1)
    want = np.random.default_rng(1).exponential(45.0 / 16, size=16)
    assert gaps == pytest.approx(list(want), abs=1e-4)
    slow = arrival_gaps(llm, 16, 200.0, seed=1)
    assert slow == pytest.approx(list(np.random.default_rng(1).exponential(5.0, size=16)), abs=1e-4)
    bursty = llm.model_copy(deep=True)
    bursty.workload.arrivals.process, bursty.workload.arrivals.burstiness = "gamma", 0.5
    got = arrival_gaps(bursty, 8, 200.0, seed=3)  # gamma(k = 0.5, scale 1 / (0.5 x 0.2) = 10 s)
    assert got == pytest.approx(list(np.random.default_rng(3).gamma(0.5, 10.0, size=8)), abs=1e-4)


def test_the_arrivals_step_is_the_median_decode_step_at_its_context() -> None:
    """Three requests decoded 16 tokens at 10.2, 11.0 and 9.6 ms a step after 1 uncached + 96 cached
    prompt tokens: the median 10.2 ms at context 1 + 96 + 16 / 2 = 105; without timings, none."""
    t = {"prompt_n": 1, "cache_n": 96, "predicted_n": 16}
    got = arrivals_step([(15.0, t | {"predicted_per_token_ms": ms}) for ms in (10.2, 11.0, 9.6)])
    assert got == (10.2, 105.0)
    assert arrivals_step([(15.0, {"prompt_ms": 9.0})]) is None


def test_the_decode_step_measured_as_the_workload_arrives_sets_the_bandwidth() -> None:
    """The back-to-back fit says 6.68 + 0.0126 x 75 = 7.625 ms at the workload's mean context (75);
    the probe measured 10.2 ms at context 105 after idle gaps, which is 10.2 - 30 x 0.0126 = 9.822 ms
    at 75. The efficiency takes that step: the model's one-sequence step comes out 9.822 ms, and the
    per-request set-up is prompt_ms less the same step at the request's context (97: 12.0 -
    (10.2 - 8 x 0.0126) = 1.9008 ms)."""
    from archkit.perf.llm.model import replica

    llm = _load(SPEC).stage("generate").llm
    decode = {"base_ms": 6.68, "per_context_token_ms": 0.0126}
    sample = [(16.0, {"prompt_n": 1, "cache_n": 96, "prompt_ms": 12.0})]
    per = per_request(sample, {"ms_per_token": 4.39}, decode, (10.2, 105.0))
    assert per["request_overhead_ms"] == pytest.approx(1.9008, abs=1e-3)
    assert per["client_overhead_ms"] == pytest.approx(4.0, abs=1e-3) and per["step"] == [10.2, 105.0]
    eff = efficiency(llm, {"ms_per_token": 4.39, "fixed_ms": -29.2}, decode, 96_576_768, per)
    assert eff["step_overhead_ms"] == 0.0
    tuned = llm.model_copy(deep=True)
    for key in ("decode_bandwidth", "step_overhead_ms", "prefill_mfu"):
        setattr(tuned.efficiency, key, eff[key])
    step = replica(tuned, llm.accelerator.resolve(None)).decode_step_s(1, 0) * 1000
    assert step == pytest.approx(10.2 - 30 * 0.0126, rel=1e-3)
    back_to_back = efficiency(llm, {"ms_per_token": 4.39, "fixed_ms": -29.2}, decode, 96_576_768)
    assert back_to_back["decode_bandwidth"] > eff["decode_bandwidth"] * 1.25


def test_the_second_sequence_costs_what_the_roofline_leaves_of_the_measured_increment() -> None:
    """Prefill 4 ms a token: MFU 2 x 134.5e6 / (0.004 x 144e9) = 0.467; a 7 ms step at every context:
    bandwidth share 84,062,500 / (0.007 x 13e9) = 0.9238. At the mean context 75 the roofline's one-
    sequence step is memory-bound, (84,062,500 + 76 x 23,040) B / (13e9 x 0.9238) = 7.1456 ms, and its
    two-sequence step compute-bound, (2 x 2 x 134.5e6 + 2 x 2 x 30 x 576 x 151) FLOPs / (144e9 x 0.467)
    = 8.1554 ms: of the measured 14 ms per further sequence, 14 - 1.0099 = 12.990 ms is the engine's."""
    llm = _load(SPEC).stage("generate").llm
    decode = {"base_ms": 7.0, "per_context_token_ms": 0.0, "per_sequence_ms": 14.0}
    eff = efficiency(llm, {"ms_per_token": 4.0, "fixed_ms": -1.0}, decode, None)
    assert (eff["prefill_mfu"], eff["decode_bandwidth"], eff["step_overhead_ms"]) == (0.467, 0.9238, 0.0)
    one = (84_062_500 + 76 * 23_040) / (13e9 * 0.9238) * 1000
    two = (2 * 2 * 134.5e6 + 2 * 2 * 30 * 576 * 151) / (144e9 * 0.467) * 1000
    assert (one, two) == (pytest.approx(7.1456, abs=1e-4), pytest.approx(8.1554, abs=1e-4))
    assert eff["sequence_overhead_ms"] == pytest.approx(14.0 - (two - one), abs=1e-3)
    assert (
        efficiency(llm, {"ms_per_token": 4.0, "fixed_ms": -1.0}, {"base_ms": 7.0}, None)[
            "sequence_overhead_ms"
        ]
        is None
    )  # no per-sequence cost measured
