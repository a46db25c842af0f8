#!/usr/bin/env bash
# The choice check on the GPU machine, in one device call: every covering variant of TIERS (tuned tiers, which a
# calibration may use), of a fresh tier drawn from SEED (app/fresh.py) and of the holdout, in float32 and float16, with cuDNN timed on the same cases in the
# same call; then tools/choice_report.py reads $OUT/choice-runs.tgz here. Steps run in order while DEADLINE
# seconds (from the start) leave room, so that whatever finished comes back:
#   SEED=2026 COUNT=60 TIERS="large" DEADLINE=560 bash tools/gpu/choice_run.sh
# STEPS (default "all torch adapt"): which runs each tier gets: every covering variant forced (all), cuDNN
# (torch), and adaptation on repeated calls through getKernel (adapt: tools/adapt_bench.mjs, CALLS calls a layer,
# BUSY_MS (default 20) of other work queued before each call, as a model's other layers; idle: the same with the GPU
# idle between calls, into idle-*.jsonl, which `tools/choice_report.py --adapt 'idle-*.jsonl'` reads);
# SETS (default "fresh holdout"): the never-tuned sets that get them after TIERS. BENCH_VARIANTS=candidates: the
# `all` step times every (variant, tiles) the planner ranks, the pool the trials draw from (about twice the rows),
# so that a trial's choice in other tiles has a bench time of its own.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --all ]; then  # one `bench --variants all` run: NAME TIER BENCH DTYPE [CASES]
  shift
  python3 tools/gpu/as_dtype.py "$4" --bench "$3" ${5:+--cases "$5"} >"/tmp/gpu/$1.json"
  python3 -m app bench --tier "$2" --host node --runs "${RUNS:-3}" --repeats "${REPEATS:-10}" --variants "${BENCH_VARIANTS:-all}" \
    --bench "/tmp/gpu/$1.json" --out "/tmp/gpu/runs/all-$1.json" >"/tmp/gpu/runs/all-$1.txt" 2>&1
  echo "  all-$1: $(grep -c ' ok ' "/tmp/gpu/runs/all-$1.txt") rows ($(date -u +%T))"
  exit 0
fi
if [ "${1:-}" = --adapt ] || [ "${1:-}" = --idle ]; then  # one adaptation run: NAME TIER BENCH DTYPE [CASES]
  busy=${BUSY_MS:-20} name=adapt
  if [ "$1" = --idle ]; then busy=0 name=idle; fi
  shift
  "$NODE" tools/adapt_bench.mjs /tmp/gpu/kernel "$3" "$2" "$4" "${5:-}" "${CALLS:-20}" "${GAP_MS:-2}" "$busy" \
    >"/tmp/gpu/runs/$name-$1.jsonl" 2>"/tmp/gpu/runs/$name-$1.txt"
  echo "  $name-$1: $(grep -c '"done":true' "/tmp/gpu/runs/$name-$1.jsonl") settled of $(grep -c '"tier"' "/tmp/gpu/runs/$name-$1.jsonl") ($(date -u +%T))"
  exit 0
fi
STEPS=${STEPS:-all torch adapt}
has() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
OUT=${OUT:-out}; mkdir -p "$OUT" /tmp/gpu/runs
start=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - start) )); }
step() {  # step SECONDS_NEEDED COMMAND...: runs it under the time left, or says it was skipped
  local need=$1; shift
  if [ "$(left)" -lt "$need" ]; then echo "skipped (time): $*"; return; fi
  timeout "$(( $(left) - 15 ))" "$@" || echo "failed or cut: $*"
}
bash tools/gpu/run.sh device >/dev/null 2>&1; cp "$OUT/device.json" /tmp/gpu/runs/ 2>/dev/null
# what run.sh sets for itself: the Node it unpacked and the NVIDIA driver's Vulkan ICD, for the bench runs below
export NODE=/tmp/gpu/node VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
{ has adapt || has idle; } && python3 -m app export /tmp/gpu/kernel >/dev/null
python3 -m app.fresh "${SEED:?SEED: the seed of the fresh tier}" --count "${COUNT:-60}" >/tmp/gpu/runs/fresh.json
names=$(python3 -c "import json; print(' '.join(c['name'] for c in json.load(open('/tmp/gpu/runs/fresh.json'))['cases']))")
set -- $names; third=$(( ($# + 2) / 3 ))
chunks=("$(echo "$names" | tr ' ' '\n' | sed -n "1,${third}p" | paste -sd,)"
        "$(echo "$names" | tr ' ' '\n' | sed -n "$((third + 1)),$((2 * third))p" | paste -sd,)"
        "$(echo "$names" | tr ' ' '\n' | sed -n "$((2 * third + 1)),\$p" | paste -sd,)")
holdout=$(python3 -c "import json; print(','.join(c['name'] for c in json.load(open('bench.json'))['cases'] if c['tier'] == 'holdout' and c['name'] != 'istft_n4096_h1024'))")

for tier in ${TIERS:-}; do  # tuned tiers first: the calibration may use them
  has all && for d in float32 float16; do step 60 bash "$0" --all "$tier-$d" "$tier" bench.json "$d"; done
  has torch && step 40 python3 tools/gpu/torch_bench.py --tier "$tier" --runs 5 --repeats 20 \
    --out "/tmp/gpu/runs/torch-$tier.json" >"/tmp/gpu/runs/torch-$tier.txt" 2>&1
  has adapt && for d in float32 float16; do step 40 bash "$0" --adapt "$tier-$d" "$tier" bench.json "$d"; done
  has idle && for d in float32 float16; do step 40 bash "$0" --idle "$tier-$d" "$tier" bench.json "$d"; done
done
sets=" ${SETS:-fresh holdout} "
[[ $sets == *" fresh "* ]] || STEPS_FRESH=none
fresh_has() { [ "${STEPS_FRESH:-}" != none ] && has "$1"; }
fresh_has all && for d in float32 float16; do
  for i in 0 1 2; do step 60 bash "$0" --all "fresh$i-$d" fresh /tmp/gpu/runs/fresh.json "$d" "${chunks[$i]}"; done
done
fresh_has torch && step 90 python3 tools/gpu/torch_bench.py --tier fresh --bench /tmp/gpu/runs/fresh.json --runs 5 \
  --repeats 20 --out /tmp/gpu/runs/torch-fresh.json >/tmp/gpu/runs/torch-fresh.txt 2>&1
fresh_has adapt && for d in float32 float16; do step 60 bash "$0" --adapt "fresh-$d" fresh /tmp/gpu/runs/fresh.json "$d"; done
fresh_has idle && for d in float32 float16; do step 60 bash "$0" --idle "fresh-$d" fresh /tmp/gpu/runs/fresh.json "$d"; done
[[ $sets == *" holdout "* ]] || STEPS=none
has all && for d in float32 float16; do step 60 bash "$0" --all "holdout-$d" holdout bench.json "$d" "$holdout"; done
has torch && step 40 python3 tools/gpu/torch_bench.py --tier holdout --skip istft_n4096_h1024 --runs 5 --repeats 20 \
  --out /tmp/gpu/runs/torch-holdout.json >/tmp/gpu/runs/torch-holdout.txt 2>&1
has adapt && for d in float32 float16; do step 40 bash "$0" --adapt "holdout-$d" holdout bench.json "$d" "$holdout"; done
has idle && for d in float32 float16; do step 40 bash "$0" --idle "holdout-$d" holdout bench.json "$d" "$holdout"; done
tar -C /tmp/gpu/runs -czf "$OUT/choice-runs.tgz" .
echo "done at $(( $(date +%s) - start )) s"
