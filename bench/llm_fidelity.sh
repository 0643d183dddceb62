#!/usr/bin/env bash
# The LLM fidelity run end to end (issue 31; bench/llm_fidelity.py says what each phase does):
# calibrate + predict, then one streaming load test per fraction of the predicted knee, each phase
# one quiet-machine measurement when MEASURE names the wrapper (on a shared machine: a lock that runs it alone),
# then the comparison table. Usage: bench/llm_fidelity.sh [OUT_DIR] (default out/llm-fidelity).
# LEVELS: fractions of the predicted knee, each F or F:N (N requests; default REQUESTS, 20). The
# default offers the issue's 30/60/85 % and brackets the knee at 130/170 %, with more requests at
# the higher rates (same time a level, and a P99 that rests on more than the one largest value).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/llm-fidelity}
PY=${PYTHON:-.venv/bin/python}
MEASURE=${MEASURE:-}
LEVELS=${LEVELS:-${FRACTIONS:-0.3:20 0.6:24 0.85:30 1.3:40 1.7:50}}
fractions=$(for l in $LEVELS; do echo "${l%%:*}"; done | paste -sd, -)
$MEASURE "$PY" bench/llm_fidelity.py predict --out "$OUT" --fractions "$fractions"
for l in $LEVELS; do
  n=${REQUESTS:-20}
  [[ $l == *:* ]] && n=${l##*:}
  $MEASURE "$PY" bench/llm_fidelity.py level --out "$OUT" --fraction "${l%%:*}" --requests "$n"
done
"$PY" bench/llm_fidelity.py report --out "$OUT"
