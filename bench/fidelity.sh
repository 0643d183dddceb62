#!/usr/bin/env bash
# The prediction loop on the machine it runs on (issue 29): start the OCR reference service on
# 127.0.0.1, calibrate it here (into out/, the committed calibration stays as the documented
# reference), predict with `archkit capacity`, measure an open-model baseline long enough for the
# percentiles it judges (the level's 500 requests), and print the predicted-vs-measured table, end
# to end and per stage, then the knee and the shed share past it (a stress search). Then say whether the committed calibration would have been foreign here.
# `make demo` runs it (mk/fidelity.mk); the service is always stopped (trap).
#
#   BIN=.venv/bin REF_PY=reference_service/.venv/bin/python bench/fidelity.sh
#
# FIDELITY_OUT (out), FIDELITY_DURATION (the level's), FIDELITY_PORTS ("8080 8000 8001 8002":
# the spec's scrape ports, so the Triton metrics endpoint is the one the spec names),
# FIDELITY_KNEE (1: also the stress level's knee search and the shed share past it, ~2.5 min; 0: not).
set -u -o pipefail
BIN=${BIN:-.venv/bin}
REF_PY=${REF_PY:-reference_service/.venv/bin/python}
SPEC=${FIDELITY_SPEC:-specs/ocr-reference.yaml}
ENV=${FIDELITY_ENV:-cpu}
OUT=${FIDELITY_OUT:-out}
read -r HTTP TH TG TM <<<"${FIDELITY_PORTS:-8080 8000 8001 8002}"
WORK=$OUT/fidelity
CAL=$OUT/calibration/ocr-reference-$ENV.json
mkdir -p "$WORK" "$(dirname "$CAL")"
LOG=$WORK/reference-service.log
TOKEN=$WORK/triton-token
(umask 077 && head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TOKEN")

TRITON_ACCESS_TOKEN_FILE=$TOKEN "$REF_PY" -m reference_service serve --http-port "$HTTP" \
  --triton-http-port "$TH" --triton-grpc-port "$TG" --triton-metrics-port "$TM" >"$LOG" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 1 240); do
  grep -q '^ready:' "$LOG" && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
if ! grep -q '^ready:' "$LOG"; then echo "reference service did not start:"; tail -30 "$LOG"; exit 1; fi

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; $(uptime | sed 's/.*load/load/')"
echo "== 1. calibrate on this machine -> $CAL"
"$REF_PY" bench/calibration_inputs.py "$WORK/inputs" --triton "127.0.0.1:$TH" --token-file "$TOKEN" >/dev/null || exit 1
# 8 s per concurrency point (not 4): the model reads how the cores scale from them
# (calibrate.apply.effective_cores), and a 4 s point moved by a neighbour's burst
"$BIN/archkit" calibrate "$SPEC" --env "$ENV" --triton "http://127.0.0.1:$TH" --token-file "$TOKEN" \
  --inputs "$WORK/inputs" --service "http://127.0.0.1:$HTTP" --requests 30 --seconds 8 -o "$CAL" 2>/dev/null || exit 1

echo "== 2. predict: archkit capacity --env $ENV --calibration $CAL"
"$BIN/archkit" capacity "$SPEC" --env "$ENV" --calibration "$CAL" | sed -n '/^pipeline ceiling/,/^$/p'

echo "== 3. measure: open-model baseline (archkit loadtest --level baseline)"
rc=0
"$BIN/archkit" loadtest "$SPEC" --level baseline --env "$ENV" --calibration "$CAL" \
  --host "http://127.0.0.1:$HTTP" --report "$OUT/loadtest" ${FIDELITY_DURATION:+--duration "$FIDELITY_DURATION"} \
  >"$WORK/loadtest.txt" 2>&1 || rc=$?
grep -E '^(ocr-reference|open model|PASS|FAIL|INCONCLUSIVE|PASSED|FAILED)' "$WORK/loadtest.txt"

echo "== 4. predicted vs measured (from $OUT/loadtest/report.md)"
awk '/^## Predicted vs measured/{on=1; next} on && /^## /{exit} on' "$OUT/loadtest/report.md"

if [ "${FIDELITY_KNEE:-1}" != 0 ]; then
  # ~2.5 min more: the stress level's knee search (6 steps, 124 s, bench/fidelity_knee.py)
  echo "== 5. the knee and the shed share past it: archkit loadtest --level stress (search)"
  "$BIN/archkit" loadtest "$SPEC" --level stress --env "$ENV" --calibration "$CAL" \
    --host "http://127.0.0.1:$HTTP" --report "$OUT/stress" >"$WORK/stress.txt" 2>&1
  grep -E '^(ocr-reference|knee|Knee)' "$WORK/stress.txt"
  "$BIN/python" bench/fidelity_knee.py "$SPEC" --env "$ENV" --calibration "$CAL" --stress "$OUT/stress/result.json"
fi

echo "== 6. the committed calibration on this machine"
"$BIN/archkit" capacity "$SPEC" --env "$ENV" 2>&1 >/dev/null | grep AK230 \
  || echo "no AK230: specs/calibration/ocr-reference-$ENV.json was measured on a machine like this one"
echo "== load after: $(uptime | sed 's/.*load/load/')"
[ $rc -le 1 ]
