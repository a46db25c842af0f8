#!/usr/bin/env bash
# Times every covering variant of every case (`bench --variants all`) in float32 and float16, for the cost
# model's calibration and for checking the planner against the fastest covering variant (tools/choice_report.py).
# On the GPU machine, after `bash tools/gpu/run.sh device` (which unpacks Node, Dawn and Pyodide):
#   bash tools/gpu/variants_all.sh NAME:TIER[:BENCH_FILE] ...   -> $OUT/all-NAME-f32.json, $OUT/all-NAME-f16.json
# PLANNED=1 also times the planner's choice (all-NAME-f32-planned.json ...).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/gpu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
export NODE=/tmp/gpu/node
status=0
for spec in "$@"; do
  IFS=: read -r name tier bench <<<"$spec"
  bench=${bench:-bench.json}
  python3 tools/gpu/as_dtype.py float32 --bench "$bench" >"/tmp/gpu/$name-f32.json"
  python3 tools/gpu/as_dtype.py float16 --bench "$bench" >"/tmp/gpu/$name-f16.json"
  for d in f32 f16; do
    echo "== $name $d ($(date -u +%T))"
    python3 -m app bench --tier "$tier" --host node --runs "${RUNS:-5}" --repeats "${REPEATS:-10}" --variants all \
      --bench "/tmp/gpu/$name-$d.json" --out "$OUT/all-$name-$d.json" >"/tmp/gpu/all-$name-$d.txt" 2>&1 || status=1
    tail -2 "/tmp/gpu/all-$name-$d.txt"
    if [ "${PLANNED:-0}" = 1 ]; then
      python3 -m app bench --tier "$tier" --host node --runs "${RUNS:-5}" --repeats "${REPEATS:-10}" \
        --bench "/tmp/gpu/$name-$d.json" --out "$OUT/all-$name-$d-planned.json" >/dev/null 2>&1 || status=1
    fi
  done
done
exit $status
