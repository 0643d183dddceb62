"""Run Vidur (microsoft/vidur, MIT) once on the cross-check workload and keep its request metrics.

The recorded outputs in this folder are what `tests/perf/test_llm_vidur.py` compares archkit's
simulator with offline; `tests/perf/test_llm_vidur_live.py` runs this script in the same test run
and compares with what it records (RECORD_DIR, default this folder). Vidur is not an archkit
dependency; it runs from its own virtual environment (mk/vidur.mk, pins in requirements.txt):

    $ARCHKIT_VIDUR_PYTHON tests/data/vidur/run_vidur.py OUT_DIR vllm 2 [RECORD_DIR]
    $ARCHKIT_VIDUR_PYTHON tests/data/vidur/run_vidur.py OUT_DIR sarathi 2 [RECORD_DIR]

Runs that share OUT_DIR share Vidur's cache of trained predictors (OUT_DIR/cache): the second run
skips the training, most of the ~20 s of CPU.

Vidur 0.0.26 downloads its profiles from Hugging Face datasets; nothing outside this machine is
reachable here, so its two input hooks are pointed at the profile files in this folder (the
operator medians of its repository's A100 profiles, see README.md). Everything else - the
random-forest predictors trained on those profiles, the memory planner, the replica scheduler and
the event loop - is Vidur's own code, unchanged.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "meta-llama/Llama-2-70b-hf"
# the workload: fixed lengths, Poisson arrivals (issue 30's "Checked against")
PROMPT, OUTPUT, REQUESTS, SEED = 512, 128, 2000, 42
TP, BATCH_CAP, TOKENS_IN_BATCH, CHUNK = 2, 128, 4096, 512


def main() -> None:
    out, scheduler, qps = sys.argv[1], sys.argv[2], float(sys.argv[3])
    record = Path(sys.argv[4]) if len(sys.argv) > 4 else HERE
    os.environ["HF_HUB_OFFLINE"] = "1"
    from vidur.execution_time_predictor import sklearn_execution_time_predictor as skl

    def offline(_self: object) -> None:
        raise RuntimeError("offline: predictions are trained from the local profiles")

    def local_files(_self: object) -> tuple[str, str, str, str]:
        return (
            str(HERE / "a100_llama2_70b_mlp_tp2.csv"),
            str(HERE / "a100_llama2_70b_attention_tp2.csv"),
            str(HERE / "a100_pairwise_nvlink_all_reduce_2.csv"),
            str(HERE / "a100_pairwise_nvlink_all_reduce_2.csv"),  # no pipeline stages: never read
        )

    skl.SklearnExecutionTimePredictor._load_predictions_from_hf = offline  # type: ignore[method-assign]
    skl.SklearnExecutionTimePredictor._get_input_files = local_files  # type: ignore[method-assign]

    rf = "--random_forrest_execution_time_predictor_config_"
    sched = {
        "vllm": [
            "--replica_scheduler_config_type", "vllm",
            "--vllm_scheduler_config_batch_size_cap", str(BATCH_CAP),
            "--vllm_scheduler_config_max_tokens_in_batch", str(TOKENS_IN_BATCH),
        ],
        "sarathi": [
            "--replica_scheduler_config_type", "sarathi",
            "--sarathi_scheduler_config_batch_size_cap", str(BATCH_CAP),
            "--sarathi_scheduler_config_chunk_size", str(CHUNK),
        ],
    }[scheduler]  # fmt: skip
    sys.argv = [
        "vidur",
        "--seed", str(SEED),
        "--replica_config_model_name", MODEL,
        "--replica_config_device", "a100",
        "--replica_config_network_device", "a100_pairwise_nvlink",
        "--replica_config_tensor_parallel_size", str(TP),
        "--replica_config_num_pipeline_stages", "1",
        "--cluster_config_num_replicas", "1",
        *sched,
        "--request_generator_config_type", "synthetic",
        "--synthetic_request_generator_config_num_requests", str(REQUESTS),
        "--synthetic_request_generator_config_seed", str(SEED),
        "--length_generator_config_type", "fixed",
        "--fixed_request_length_generator_config_prefill_tokens", str(PROMPT),
        "--fixed_request_length_generator_config_decode_tokens", str(OUTPUT),
        "--interval_generator_config_type", "poisson",
        "--poisson_request_interval_generator_config_qps", str(qps),
        "--execution_time_predictor_config_type", "random_forrest",
        # one point of Vidur's default grid (it searches 27 with 10-fold CV), to fit on two shared cores
        f"{rf}num_estimators", "250",
        f"{rf}max_depth", "16",
        f"{rf}min_samples_split", "2",
        f"{rf}k_fold_cv_splits", "2",
        f"{rf}num_training_job_threads", "1",
        f"{rf}prediction_max_tokens_per_request", "4096",
        f"{rf}prediction_max_batch_size", str(BATCH_CAP),
        f"{rf}cache_dir", str(Path(out) / "cache"),
        "--metrics_config_output_dir", out,
        "--no-metrics_config_store_plots",
        "--no-metrics_config_enable_chrome_trace",
        "--metrics_config_store_batch_metrics",
        "--metrics_config_keep_individual_batch_metrics",
        "--metrics_config_store_token_completion_metrics",
    ]  # fmt: skip
    from vidur.main import main as vidur_main

    vidur_main()
    _record(Path(out), f"{scheduler}_qps{qps:g}", record)


def _record(out: Path, name: str, record: Path) -> None:
    """Keep what the cross-check reads, small: per request, the per-token TBT CDF, per batch."""
    import pandas as pd

    # Vidur names its run folder by the clock; the newest is this run's (OUT_DIR may hold earlier ones)
    run = max((p for p in out.iterdir() if p.is_dir() and p.name != "cache"), key=lambda p: p.name)
    plots = run / "plots"
    req = pd.read_csv(run / "request_metrics.csv").sort_values("Request Id")
    arr = pd.read_csv(plots / "request_arrival_time_series.csv", index_col=0)
    pd.DataFrame(
        {
            "arrival_s": arr["Time (sec)"].to_numpy(),
            "ttft_s": req["prefill_e2e_time"].to_numpy(),
            "e2e_s": req["request_e2e_time"].to_numpy(),
            "restarts": req["request_num_restarts"].to_numpy(),
        }
    ).to_csv(record / f"vidur_{name}_requests.csv", index=False, float_format="%.6f")
    tbt = pd.read_csv(plots / "decode_token_execution_plus_preemption_time.csv", index_col=0)
    tbt.to_csv(record / f"vidur_{name}_tbt_cdf.csv", index=False, float_format="%.6f")
    cols = {
        "batch_execution_time": "time_s",
        "batch_size": "size",
        "batch_num_tokens": "tokens",
        "batch_num_prefill_tokens": "prefill_tokens",
    }
    parts = [pd.read_csv(plots / f"{c}_per_batch.csv", index_col=0).set_index("Batch Id")[c] for c in cols]
    batches = pd.concat(parts, axis=1).rename(columns=cols)
    # one row per distinct batch shape: the step-time table archkit's efficiencies are fitted to
    table = batches.groupby(["size", "tokens", "prefill_tokens"]).time_s.agg(["mean", "count"])
    table.reset_index().to_csv(record / f"vidur_{name}_batches.csv", index=False, float_format="%.6f")


if __name__ == "__main__":
    main()
