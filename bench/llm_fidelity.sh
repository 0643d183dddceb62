#!/usr/bin/env bash
# The LLM fidelity run end to end (issue 31; bench/llm_fidelity.py says what each phase does):
# calibrate + predict, then one streaming load test per fraction of the predicted knee, each phase
# one quiet-machine measurement when MEASURE names the wrapper (this session: /work/helpers/measure),
# then the comparison table. Usage: bench/llm_fidelity.sh [OUT_DIR] (default out/llm-fidelity).
# REQUESTS (default 20) per level; FRACTIONS (default 0.3 0.6 0.85 1.3) of the predicted knee.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/llm-fidelity}
PY=${PYTHON:-.venv/bin/python}
MEASURE=${MEASURE:-}
FRACTIONS=${FRACTIONS:-0.3 0.6 0.85 1.3}
$MEASURE "$PY" bench/llm_fidelity.py predict --out "$OUT" --fractions "$(echo $FRACTIONS | tr ' ' ,)"
for f in $FRACTIONS; do
  $MEASURE "$PY" bench/llm_fidelity.py level --out "$OUT" --fraction "$f" --requests "${REQUESTS:-20}"
done
"$PY" bench/llm_fidelity.py report --out "$OUT"
