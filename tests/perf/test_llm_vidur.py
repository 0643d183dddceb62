"""archkit's LLM model against Vidur (microsoft/vidur, MIT): its operator times and its scheduler.

Two checks, data and provenance in tests/data/vidur/ (README.md, LICENSE).

1. The step time against Vidur's measured operators (H100, Llama-2-7B, one GPU). The data is a subset of microsoft/vidur's `data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/
mlp.csv` (MIT; tests/data/vidur/LICENSE): per-layer medians of the linear-layer operators (QKV and
output projections, gated MLP, norms, rope, residual add) for 1 to 4,096 tokens. Summed over the
32 layers they are one iteration's non-attention time; archkit's is the roofline max of
2 x params x tokens / (peak x MFU) and weight bytes / (bandwidth x efficiency).

2. The whole simulation against Vidur's own simulator, run once offline (tests/data/vidur/
run_vidur.py; Vidur is not an archkit dependency, its recorded outputs are the peer): Llama-2-70B on
two A100s, 2,000 requests of 512 + 128 tokens, Poisson arrivals at 2 and 3 requests/s, under Vidur's
vLLM (V0, no chunked prefill) and Sarathi (chunked, 512 tokens) schedulers. archkit's step-time
efficiencies are fitted to Vidur's predicted iteration times (the issue's "given the same
per-operation times"), archkit replays Vidur's arrival times with Vidur's KV-cache size, and the
TTFT, inter-token latency, TPOT and throughput percentiles are compared.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archkit.perf.llm import sim
from archkit.perf.llm.model import Replica, replica
from archkit.spec.llm import LlmStage
from archkit.spec.llm_catalogue import ACCELERATORS

HERE = Path(__file__).parents[1] / "data" / "vidur"
DATA = HERE / "h100_llama2_7b_mlp_tp1.csv"
# fitted to Vidur's profile: 70 % of dense BF16 peak for large token counts, 72 % of HBM bandwidth
# for the weight read of a small batch (13.48 GB in 5.60 ms)
CALIBRATED = {"prefill_mfu": 0.70, "decode_bandwidth": 0.72}


def _vidur_ms() -> dict[int, float]:
    with DATA.open() as f:
        return {
            int(r["num_tokens"]): 32 * sum(float(v) for k, v in r.items() if k != "num_tokens")
            for r in csv.DictReader(f)
        }


def _linear_ms(tokens: int, efficiency: dict[str, float]) -> float:
    stage = LlmStage.model_validate(
        {
            "engine": {"name": "vllm"},
            "model": {"preset": "Llama-2-7B"},
            "workload": {"prompt_tokens": {"mean_tokens": 512}, "output_tokens": {"mean_tokens": 1}},
            "efficiency": efficiency,
        }
    )
    rep = replica(stage, ACCELERATORS["H100-SXM"])
    compute = 2 * rep.arch.parameters * tokens / (rep.peak_flops * rep.prefill_mfu)
    memory = rep.weight_bytes / (rep.bandwidth * rep.decode_bandwidth)
    return max(compute, memory) * 1000


@pytest.mark.parametrize("tokens", [1, 2, 8, 16, 32, 64, 1024, 2048, 4096])
def test_calibrated_roofline_within_15_percent_of_vidur(tokens: int) -> None:
    vidur = _vidur_ms()[tokens]
    assert _linear_ms(tokens, CALIBRATED) == pytest.approx(vidur, rel=0.15)


def test_default_efficiencies_stay_within_a_factor_of_vidur() -> None:
    """The cited defaults (MFU 0.5, bandwidth 0.8) give 0.59x to 1.38x of the measurement: too slow
    for large prefills, too fast around the roofline's knee (256 tokens), where real kernels are
    neither at peak FLOPs nor at peak bandwidth."""
    for tokens, vidur in _vidur_ms().items():
        ratio = _linear_ms(tokens, {}) / vidur
        assert 0.5 < ratio < 1.45, (tokens, ratio)


# ---------------------------------------------------------------- 2. Vidur's simulator as the peer

PROMPT, OUTPUT = 512, 128
VIDUR_KV_BLOCKS = 3_328  # Vidur's memory planner for this model and GPU (tests/data/vidur/README.md)
# Fitted to Vidur's predicted iteration times of the two runs at 2 requests/s (`_fit_error`, a 0.02 / 0.02 / 1 ms
# grid search, count-weighted relative squared error): 60 % of dense BF16 peak, 62 % of HBM bandwidth,
# 4 ms per iteration; the all-reduce keeps archkit's default (70 % of NVLink).
VIDUR_FIT = {"prefill_mfu": 0.60, "decode_bandwidth": 0.62, "step_overhead_ms": 4.0}
# (Vidur scheduler, rate): archkit's engine settings for the same policy. 2 requests/s is about 60 %
# of the replica's capacity (KV for ~83 sequences of 640 tokens: a 0.2 s prefill each plus 128 decode
# steps of ~75 ms shared by 83, ~3.2 requests/s), 2.5 about 75 %, 3 about 90 %. Vidur 0.0.26's vLLM
# scheduler fails an assertion at 3 requests/s (tests/data/vidur/README.md): its highest run is 2.5.
RUNS: dict[tuple[str, float], tuple[bool, int]] = {
    ("vllm", 2): (False, 4096),
    ("sarathi", 2): (True, 512),
    ("sarathi", 3): (True, 512),
    ("vllm", 2.5): (False, 4096),
}
FIT_RUNS = [("vllm", 2), ("sarathi", 2)]


def _llama2_70b(efficiency: dict[str, float], chunked: bool, budget: int) -> Replica:
    """Llama-2-70B (Vidur's model config: 80 layers, hidden 8192, 64/8 heads, 4,096 context) on two A100s."""
    stage = LlmStage.model_validate(
        {
            "engine": {
                "name": "vllm",
                "max_num_seqs": 128,
                "max_num_batched_tokens": budget,
                "chunked_prefill": chunked,
            },
            "model": {
                "name": "Llama-2-70B",
                "parameters": 68.98e9,
                "layers": 80,
                "hidden_size": 8192,
                "attention_heads": 64,
                "kv_heads": 8,
                "head_dim": 128,
                "max_context_tokens": 4096,
            },
            "parallelism": {"tensor": 2},
            "workload": {"prompt_tokens": {"mean_tokens": PROMPT}, "output_tokens": {"mean_tokens": OUTPUT}},
            "efficiency": efficiency,
        }
    )
    return replica(stage, ACCELERATORS["A100-80GB"])


def _rows(name: str, folder: Path = HERE) -> list[dict[str, str]]:
    with (folder / f"vidur_{name}.csv").open() as f:
        return list(csv.DictReader(f))


def _step_s(rep: Replica, size: int, tokens: int, prefill: int) -> float:
    """archkit's time for one of Vidur's batch shapes: decodes at the mean context (prompt + output / 2),
    prefills from an empty cache (every prompt fits one chunk of 512)."""
    decodes = tokens - prefill
    prompts = size - decodes
    ctx = PROMPT + OUTPUT // 2
    attn = decodes * rep.attn_flops(1, ctx)
    if prompts:
        attn += prompts * rep.attn_flops(prefill // prompts, 0)
    return rep.iteration_s(tokens, attn, decodes * ctx)


def _fit_error(efficiency: dict[str, float]) -> float:
    """Count-weighted RMS relative error of archkit's step time over Vidur's recorded batch shapes."""
    rep = _llama2_70b(efficiency, False, 4096)
    err = weight = 0.0
    for sched, rate in FIT_RUNS:
        for r in _rows(f"{sched}_qps{rate}_batches"):
            model = _step_s(rep, int(r["size"]), int(r["tokens"]), int(r["prefill_tokens"]))
            err += float(r["count"]) * (model / float(r["mean"]) - 1) ** 2
            weight += float(r["count"])
    return float(np.sqrt(err / weight))


def test_step_time_fitted_to_vidur_within_6_percent_rms() -> None:
    """The fit is the optimum of its grid: each coordinate moved one step either way is no better."""
    best = _fit_error(VIDUR_FIT)
    assert best < 0.06
    for key, step in (("prefill_mfu", 0.02), ("decode_bandwidth", 0.02), ("step_overhead_ms", 1.0)):
        for sign in (-1, 1):
            assert _fit_error({**VIDUR_FIT, key: VIDUR_FIT[key] + sign * step}) >= best


def _slow_share(hist: np.ndarray) -> float:
    """The share of tokens whose inter-token time is over 130 ms: those that waited for a prefill chunk."""
    edges = sim._HIST_LO * sim._HIST_RATIO ** np.arange(len(hist))
    return float(hist[edges > SLOW_S].sum() / max(hist.sum(), 1))


SLOW_S = 0.13  # between the two modes of the ITL: pure decode steps (~65 ms), steps with a chunk (~200 ms)


def compare(sched: str, rate: float, folder: Path = HERE) -> dict[str, tuple[float, float]]:
    """(archkit, Vidur) per metric, in ms or per second, on Vidur's own arrival times: those recorded
    in `folder` by tests/data/vidur/run_vidur.py (this folder's committed run, or a live one)."""
    chunked, budget = RUNS[(sched, rate)]
    name = f"{sched}_qps{rate}"
    rows = _rows(f"{name}_requests", folder)
    arrival = np.array([float(r["arrival_s"]) for r in rows])
    v_ttft = np.array([float(r["ttft_s"]) for r in rows])
    v_e2e = np.array([float(r["e2e_s"]) for r in rows])
    tbt = {
        round(float(r["cdf"]), 2): float(r["decode_token_execution_plus_preemption_time"])
        for r in _rows(f"{name}_tbt_cdf", folder)
    }
    n = len(arrival)
    rep = _llama2_70b(VIDUR_FIT, chunked, budget)
    req = sim.Requests.plain(arrival, np.full(n, PROMPT), np.full(n, OUTPUT))
    run = sim.simulate(rep, req, kv_blocks=VIDUR_KV_BLOCKS)
    ours = sim.summarise([run])
    v_span = float((arrival + v_e2e).max() - arrival.min())
    pct = lambda x, q: float(np.percentile(x, q)) * 1000  # noqa: E731
    return {
        "ttft_p50": (ours.ttft_ms["p50"], pct(v_ttft, 50)),
        "ttft_p99": (ours.ttft_ms["p99"], pct(v_ttft, 99)),
        "itl_p50": (ours.itl_ms["p50"], tbt[0.5] * 1000),
        "itl_p99": (ours.itl_ms["p99"], tbt[0.99] * 1000),
        "tpot_p50": (ours.tpot_ms["p50"], pct((v_e2e - v_ttft) / (OUTPUT - 1), 50)),
        "e2e_p50": (ours.e2e_ms["p50"], pct(v_e2e, 50)),
        "output_tokens_per_s": (ours.output_tokens_per_s, n * OUTPUT / v_span),
        "slow_token_share": (_slow_share(run.itl_hist), 1 - max(c for c, v in tbt.items() if v <= SLOW_S)),
        "preemptions": (float(ours.preemptions), float(sum(int(r["restarts"]) for r in rows))),
    }


# The bar: TTFT P50 and ITL (TBT) P50 within 15 % of Vidur's, which reports < 9 % error
# against real vLLM. Tails get 20 %: a P99 of 2,000 requests rests on 20 of them, and the two
# simulators differ in details that move only the tail (Vidur allocates a whole prompt's blocks at
# admission and keeps a 1 % watermark; its decode attention time is a function of the batch's
# tokens, archkit's of each sequence's context). Throughput is arrival-bound below capacity: 2 %.
TOLERANCE = {
    "ttft_p50": 0.15, "itl_p50": 0.15, "tpot_p50": 0.15, "e2e_p50": 0.15,
    "ttft_p99": 0.20, "itl_p99": 0.20, "output_tokens_per_s": 0.02,
}  # fmt: skip


def off(got: dict[str, tuple[float, float]], tolerance: dict[str, float]) -> dict[str, str]:
    """The metrics whose archkit/Vidur ratio is outside its tolerance, with both values."""
    return {
        k: f"archkit {got[k][0]:.1f} vs Vidur {got[k][1]:.1f}"
        for k, tol in tolerance.items()
        if abs(got[k][0] / got[k][1] - 1) > tol
    }


@pytest.mark.parametrize(("sched", "rate"), [("vllm", 2), ("sarathi", 2), ("vllm", 2.5)])
def test_simulation_matches_vidur(sched: str, rate: float) -> None:
    got = compare(sched, rate)
    assert not off(got, TOLERANCE)
    assert got["preemptions"] == (0.0, 0.0)  # the cache never fills at these rates, in either


def test_simulation_near_vidur_at_90_percent_load() -> None:
    """Sarathi at 3 requests/s: half the tokens wait for a prefill chunk (~200 ms), half do not (~65 ms),
    so the ITL P50 sits in the gap between the two modes (Vidur's 103 ms is an interpolation across
    it) and is not compared; the share of tokens in the slow mode is (archkit 0.40, Vidur 0.46: archkit's
    pure decode steps are ~7 % faster than Vidur's at this batch size, so it runs more of them)."""
    got = compare("sarathi", 3)
    assert not off(got, {k: v for k, v in TOLERANCE.items() if k != "itl_p50"})
    assert abs(got["slow_token_share"][0] - got["slow_token_share"][1]) < 0.10


def vidur_table() -> list[dict[str, Any]]:
    """The comparison as rows (for docs/benchmarks.md): `python -m tests.perf.test_llm_vidur`."""
    return [{"run": f"{s} {r} req/s", **compare(s, r)} for s, r in RUNS]


if __name__ == "__main__":  # pragma: no cover
    for row in vidur_table():
        print(
            row.pop("run"),
            {k: f"{a:.1f} / {b:.1f} ({a / b - 1:+.1%})" if b else (a, b) for k, (a, b) in row.items()},
        )
