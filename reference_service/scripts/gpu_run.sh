#!/usr/bin/env bash
# The reference service's gpu profile on a lent GPU machine, in two calls of the device tool.
#
# That machine has Python 3.12 with PyTorch (CUDA), onnx, onnxruntime (CPU), OpenCV, numpy,
# Pillow and grpcio, no network, and each call carries at most 64 MiB. The service's other
# wheels (cp312) are downloaded here by `prepare` into two ignored folders that fit one call
# each with the work tree: part1 holds PyTriton (55 MB), part2 everything else.
#
#   here:     reference_service/scripts/gpu_run.sh prepare
#   call 1:   reference_service/scripts/gpu_run.sh install part1         (carry reference_service/.gpu-wheels/part1)
#   call 2:   reference_service/scripts/gpu_run.sh install part2 run     (carry reference_service/.gpu-wheels/part2)
#   here:     reference_service/scripts/gpu_run.sh --cpu run             (the same steps on this CPU: torch fp32)
#   any:      add --dry-run to print the commands instead of running them
#
# `run` starts the service with the gpu profile (torch backend: onnx2torch on CUDA, fp16),
# compares the torch path's text and probabilities with ONNX Runtime on the golden set,
# runs bench/bench_ocr.py's served measurement, samples GPU utilisation, runs
# `archkit loadtest --level stress` when archkit runs there, and writes it all to $OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
WHEELS=${OCR_GPU_WHEELS:-$ROOT/reference_service/.gpu-wheels}
SITE=${OCR_GPU_SITE:-/tmp/ocr-gpu-site} # outlives a call while the machine stays warm
OUT=${OUT:-$ROOT/.gpu-out}
PY=${PYTHON:-python3}
DRY=0
CPU=0
PAGES=60
# Budget per call: 64 MiB minus the work tree (~6 MiB) and some room.
PART_LIMIT_BYTES=$((56 * 1024 * 1024))

# cp312 wheels the machine lacks, pinned as in reference_service/requirements.txt. numpy<2
# because PyTriton 0.7 requires it; it goes first on PYTHONPATH, ahead of the machine's own.
PART1="nvidia-pytriton==0.7.0 pyzmq==27.3.0 sh==2.4.0 typing-inspect==0.9.0 mypy_extensions==1.2.0
wrapt==2.5.2 importlib_metadata==10.2.0 zipp==4.1.2"
PART2="numpy==1.26.4 tritonclient==2.73.0 python-rapidjson==1.25 ml_dtypes==0.5.4 urllib3==2.8.0
fastapi==0.165.0 starlette==1.10.0 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0
typing-inspection==0.4.5 typing_extensions==4.16.0 annotated-doc==0.0.7 uvicorn==0.54.0 h11==0.16.0
anyio==4.16.0 idna==3.20 prometheus_client==0.26.0 rapidocr-onnxruntime==1.4.4 pyclipper==1.4.0
shapely==2.2.0 PyYAML==6.0.4 six==1.17.0 tqdm==4.70.1 onnx2torch==1.5.15 typer==0.29.2 click==8.5.1
rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 Pygments==2.21.0 shellingham==1.5.4 protobuf==6.33.6"
PLATFORMS="manylinux2014_x86_64 manylinux_2_17_x86_64 manylinux_2_28_x86_64 manylinux_2_35_x86_64 manylinux_2_5_x86_64 linux_x86_64 any"

exec 3>&2 # the terminal's stderr, for the trace of commands whose output goes to $OUT
say() { echo "gpu_run: $*" >&3; }
run() {
    echo "+ $*" >&3
    if [ "$DRY" = 0 ]; then "$@"; fi
}

prepare() {
    local pip="$ROOT/reference_service/.venv/bin/pip" plat=() part size
    for p in $PLATFORMS; do plat+=(--platform "$p"); done
    for part in part1 part2; do
        local list=$PART1
        [ "$part" = part2 ] && list=$PART2
        run mkdir -p "$WHEELS/$part"
        # shellcheck disable=SC2086 # the lists are word lists on purpose
        run "$pip" download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            "${plat[@]}" -d "$WHEELS/$part" $list
        if [ "$DRY" = 0 ]; then
            size=$(du -cb "$WHEELS/$part" | tail -1 | cut -f1)
            say "$part: $((size / 1024 / 1024)) MiB"
            if [ "$size" -gt "$PART_LIMIT_BYTES" ]; then
                say "$part is over $((PART_LIMIT_BYTES / 1024 / 1024)) MiB: it would not travel with the tree"
                exit 1
            fi
        fi
    done
}

install_part() {
    local part=$1
    if [ "$DRY" = 0 ] && ! compgen -G "$WHEELS/$part/*.whl" >/dev/null; then
        say "no wheels in $WHEELS/$part: run 'prepare' here and carry that folder"
        exit 1
    fi
    run mkdir -p "$SITE"
    run "$PY" -m pip install --quiet --no-index --no-deps --upgrade --target "$SITE" "$WHEELS/$part"/*.whl
}

wait_ready() { # URL SECONDS PID
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        if curl -sf -o /dev/null --max-time 2 "$1/readyz"; then return 0; fi
        kill -0 "$3" 2>/dev/null || return 1
        sleep 1
    done
    return 1
}

run_all() {
    mkdir -p "$OUT" # also in a dry run: the redirections below write there
    if [ "$CPU" = 1 ]; then
        PY="$ROOT/reference_service/.venv/bin/python"
        # The torch backend where torch is installed here, else the same steps on ONNX Runtime.
        if "$PY" -c "from reference_service.runtimes import available as a; raise SystemExit(not a('torch'))"; then
            BACKEND=torch
        else
            BACKEND=onnxruntime
        fi
    else
        export PYTHONPATH="$SITE:$ROOT:$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
        BACKEND=torch
    fi
    export OCR_BACKEND=$BACKEND PYTHONUNBUFFERED=1
    say "python $PY, backend $BACKEND, output $OUT"
    {
        date -u +%FT%TZ
        uname -a
        nproc
        uptime
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
        "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>/dev/null || echo "no torch"
    } >"$OUT/machine.txt" 2>&1 || true

    # GPU utilisation every 500 ms for the whole run (stopped at exit).
    local smi=""
    if [ "$DRY" = 0 ] && command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -lms 500 >"$OUT/gpu_util.csv" &
        smi=$!
        trap '[ -n "$smi" ] && kill "$smi" 2>/dev/null || true' EXIT
    fi

    # 1. The torch path against ONNX Runtime on the golden set: text, accuracy, probabilities.
    run "$PY" "$ROOT/reference_service/scripts/compare_backends.py" --backends "torch,onnxruntime" \
        --pages "$PAGES" >"$OUT/backends.json" || say "backend comparison failed (see $OUT/backends.json)"
    # 2. bench_ocr's served measurement on the gpu profile (8 requests in flight: max_inflight).
    run "$PY" "$ROOT/bench/bench_ocr.py" --served-only --profile gpu --cores 2 --clients 4 \
        --latency-images 30 --json "$OUT/bench.json" >"$OUT/bench.log" 2>&1 || say "bench failed (see $OUT/bench.log)"
    # 3. Stress against the service on the default ports (judged against $OCR_STRESS_ENV's
    # budgets when set, e.g. h200 once the spec has it). Here archkit is the project's venv.
    local archkit=("$PY" -m archkit) envopt=()
    [ "$CPU" = 1 ] && archkit=("$ROOT/.venv/bin/archkit")
    [ -n "${OCR_STRESS_ENV:-}" ] && envopt=(--env "$OCR_STRESS_ENV")
    if [ "$DRY" = 1 ] || "${archkit[@]}" --version >/dev/null 2>&1; then
        # $OCR_PORT_BASE moves the four ports off the defaults (a shared development machine).
        local base=${OCR_PORT_BASE:-} ports=() url=http://127.0.0.1:8080
        if [ -n "$base" ]; then
            ports=(--http-port "$((base + 80))" --triton-http-port "$base" --triton-grpc-port "$((base + 1))"
                --triton-metrics-port "$((base + 2))")
            url=http://127.0.0.1:$((base + 80))
        fi
        # Started directly, not through run(): a backgrounded function is a subshell, and
        # stopping that would leave the service running.
        local svc=""
        if [ "$DRY" = 1 ]; then
            echo "+ $PY -m reference_service serve --profile gpu ${ports[*]}" >&3
        else
            "$PY" -m reference_service serve --profile gpu "${ports[@]}" >"$OUT/serve.log" 2>&1 &
            svc=$!
        fi
        if [ "$DRY" = 1 ] || wait_ready "$url" 180 "$svc"; then
            run "${archkit[@]}" loadtest "$ROOT/specs/ocr-reference.yaml" --level stress --host "$url" "${envopt[@]}" \
                --no-prometheus -o "$OUT/stress" >"$OUT/stress.txt" 2>&1 || say "stress: a budget was missed (see $OUT/stress.txt)"
        else
            say "service not ready; see $OUT/serve.log"
        fi
        [ "$DRY" = 1 ] || { kill -TERM "$svc" 2>/dev/null || true; wait "$svc" || true; }
    else
        say "archkit does not run here: stress skipped (bench.json has the served numbers)"
    fi
    if [ "$DRY" = 0 ]; then
        "$PY" - "$OUT" <<'EOF' || true
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
summary = {}
for name in ("backends.json", "bench.json"):
    p = out / name
    if p.exists() and p.stat().st_size:
        summary[name] = json.loads(p.read_text())
b = summary.get("bench.json", {})
print(json.dumps({k: b.get(k) for k in ("throughput_ips", "cpu_ms_per_image", "latency_ms", "accuracy", "hard")}, indent=1))
util = out / "gpu_util.csv"
if util.exists():
    vals = [int(l.split(",")[1].split()[0]) for l in util.read_text().splitlines()[1:] if "%" in l]
    print("gpu utilisation % (mean, max):", round(sum(vals) / max(len(vals), 1), 1), max(vals, default=0))
EOF
    fi
}

[ $# -gt 0 ] || { sed -n '2,18p' "$0"; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --dry-run) DRY=1 ;;
    --cpu) CPU=1; PAGES=${OCR_GPU_PAGES:-6} ;;
    prepare) prepare ;;
    install) shift; install_part "${1:?install needs part1 or part2}" ;;
    run) run_all ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) say "unknown argument $1"; exit 2 ;;
    esac
    shift
done
