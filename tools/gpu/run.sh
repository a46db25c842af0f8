#!/usr/bin/env bash
# Runs on the GPU machine (NVIDIA H200, no network), from the repo root, after tools/gpu/pack.sh here:
#   bash tools/gpu/run.sh [STAGE...]     stages: device cases variants tune bench autotune torch report ort breakdown chain sweep scaling ab
#                                        firstresult
#                                        (default: device cases variants tune bench torch report)
# Results go to $OUT (the device tool's output folder) or ./out. VARIANTS=a,b limits the variants stage.
# sweep: tunes VARIANT (forced) on every TIER case (or CASES=a,b) in DTYPE over its bench.json grid (or GRID,
# a JSON object), writing $OUT/sweep-$VARIANT-$DTYPE[-$LABEL].json: every candidate's median per case.
# ab: this tree against another version of some of its files, side by side in one call: ALT is a folder holding
# those files at their repository paths (e.g. `git show REV:PATH > ALT/PATH`); ROUNDS (2) rounds alternate this
# tree's (b) and ALT's (a) planner's choice over TIER's cases (or CASES=a,b), in DTYPES ("f32 f16"); the tree is put
# back after. Writes $OUT/ab.tgz (every run's bench JSON) and $OUT/ab.md (tools/gpu/ab_summary.py: medians, b / a).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}; mkdir -p "$OUT"
STAGES=${*:-device cases variants tune bench torch report}
REPEATS=${REPEATS:-20}  # back-to-back submissions per timed run: keeps the GPU at its working clocks
TIER=${TIER:-full}      # the bench.json tier the bench, torch and report stages run (large: against cuDNN)
ALL=${ALL:-1}           # bench stage: also every covering variant forced (0: the planner's choice only)

# Vulkan loader (unpacked over /, as the machine's notes say) and the NVIDIA driver's ICD; unpacked once per
# machine, so that one device call can run this script several times (sweeps with different settings).
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
export NODE=/tmp/gpu/node
if [ ! -x /tmp/gpu/node ] || [ ! -f build/pyodide/pyodide.mjs ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  mkdir -p /tmp/gpu node_modules/webgpu/dist/linux-x64 build
  xz -dc .gpu/node.xz >/tmp/gpu/node.tmp && chmod +x /tmp/gpu/node.tmp && mv /tmp/gpu/node.tmp /tmp/gpu/node
  cp .gpu/webgpu/* node_modules/webgpu/
  xz -dc .gpu/dawn.node.xz >node_modules/webgpu/dist/linux-x64/dawn.node
  tar -C build -xJf .gpu/pyodide.tar.xz
  mkdir -p node_modules/onnxruntime-web && tar -C node_modules/onnxruntime-web -xJf .gpu/ort.tar.xz
  mkdir -p node_modules/protobufjs/dist && cp .gpu/protobufjs/package.json node_modules/protobufjs/ \
    && cp .gpu/protobufjs/protobuf.min.js node_modules/protobufjs/dist/
fi
[ -f test.json ] || gzip -dc .gpu/test.json.gz >test.json  # written at set-up here, carried by tools/gpu/pack.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/nvidia-smi.txt"

status=0
for stage in $STAGES; do
  echo "== $stage ($(date -u +%T))"
  case $stage in
    device) python3 -m app device --host node | tee "$OUT/device.json" ;;
    cases) python3 -m app cases test.json --host node >/tmp/gpu/cases.txt; s=$?; tail -1 /tmp/gpu/cases.txt
           grep -E '^FAIL' /tmp/gpu/cases.txt | head -20; [ $s = 0 ] || status=$s ;;
    variants) python3 -m app cases test.json --host node --variant "${VARIANTS:-all}" >/tmp/gpu/variants.txt; s=$?
              grep -E '^variant |^FAIL' /tmp/gpu/variants.txt | head -60; tail -1 /tmp/gpu/variants.txt
              [ $s = 0 ] || status=$s ;;
    tune) python3 -m app tune --tier full --host node --runs 5 --repeats "$REPEATS" --choose-variants || status=1
          cp tuning/nvidia*.json "$OUT/" ;;
    bench) python3 tools/gpu/as_dtype.py float16 >/tmp/gpu/bench-f16.json
           runs=("bench-$TIER" "bench-$TIER-f16 --bench /tmp/gpu/bench-f16.json")
           [ "$ALL" = 1 ] && runs+=("bench-$TIER-all --variants all" "bench-$TIER-f16-all --variants all --bench /tmp/gpu/bench-f16.json")
           for run in "${runs[@]}"; do
             set -- $run
             name=$1; shift
             python3 -m app bench --tier "$TIER" --host node --runs 10 --repeats "$REPEATS" --out "$OUT/$name.json" "$@" \
               || status=1
           done ;;
    autotune) python3 tools/gpu/as_dtype.py float16 >/tmp/gpu/bench-f16.json
              python3 -m app bench --tier "$TIER" --host node --runs 10 --repeats "$REPEATS" --autotune \
                --bench /tmp/gpu/bench-f16.json --out "$OUT/bench-$TIER-f16-autotune.json" || status=1 ;;
    scaling) python3 tools/gpu/scaling.py cases >/tmp/gpu/scaling.json
             python3 tools/gpu/as_dtype.py float16 --bench /tmp/gpu/scaling.json >/tmp/gpu/scaling-f16.json
             for b in "scaling.json:bench-scaling" "scaling-f16.json:bench-scaling-f16"; do
               echo "  ${b##*:} ($(date -u +%T))"
               python3 -m app bench --tier scaling --host node --runs 5 --repeats 10 --bench "/tmp/gpu/${b%%:*}" \
                 --out "/tmp/gpu/${b##*:}.json" >"/tmp/gpu/${b##*:}.txt" 2>&1 || status=1
             done
             echo "  torch ($(date -u +%T))"
             python3 tools/gpu/torch_bench.py --tier scaling --bench /tmp/gpu/scaling.json --runs 5 --repeats 10 \
               --out /tmp/gpu/torch-scaling.json >/tmp/gpu/torch-scaling.txt 2>&1 || status=1
             echo "  ort ($(date -u +%T))"
             python3 tools/gpu/scaling.py cases --ort >/tmp/gpu/scaling-ort.json
             python3 -m app bench --tier scaling --host node --against ort --bench /tmp/gpu/scaling-ort.json --runs 3 \
               --warmup 1 --out /tmp/gpu/ort-scaling.json >/tmp/gpu/ort-scaling.txt 2>&1 || status=1
             python3 tools/gpu/scaling.py plot /tmp/gpu "$OUT/scaling.svg" | tee "$OUT/scaling.md"
             tar -C /tmp/gpu -czf "$OUT/scaling-runs.tgz" bench-scaling.json bench-scaling-f16.json torch-scaling.json \
               ort-scaling.json ;;
    torch) python3 tools/gpu/torch_bench.py --tier "$TIER" --repeats "$REPEATS" --skip "${TORCH_SKIP:-}" \
             --out "$OUT/torch-$TIER.json" || status=1 ;;
    report) python3 tools/gpu/report.py "$OUT" "$TIER" | tee "$OUT/report-$TIER.md" ;;
    ort) python3 -m app bench --tier full --host node --against ort --runs "${RUNS:-20}" --warmup 3 \
           --out "$OUT/ort-full.json" | tee "$OUT/ort-full.txt" || status=1 ;;
    breakdown) python3 -m app bench --tier full --host node --breakdown --runs "${RUNS:-20}" \
                 --out "$OUT/breakdown.json" | tee "$OUT/breakdown.txt" || status=1
               # the resident repeat call alone, 300 calls a case (the breakdown's medians are of RUNS calls);
               # the probe boots from build/ itself: the bundle there, as for the chain stage
               python3 -c "from app.host.assets import BUILD; from app.host.server import bundle_bytes; \
(BUILD / 'bundle.zip').write_bytes(bundle_bytes())"
               "$NODE" tools/gpu/host_probe.mjs "$PWD" "$PWD/build" full "${PROBE_CALLS:-300}" 2>/dev/null \
                 | grep '^{' | tee "$OUT/host-probe.jsonl" || status=1 ;;
    chain) python3 tools/gpu/decoder_model.py /tmp/gpu/decoder.onnx
           python3 -m app model /tmp/gpu/decoder.onnx --host node --against ort --chain --runs "${RUNS:-20}" \
             | tee "$OUT/model-chain.txt" || status=1
           python3 -c "import sys; from app import onnx_model as m; ml = m.read(sys.argv[1]); \
open(sys.argv[2], 'wb').write(m.chain_model(ml, m.chain(ml)).SerializeToString())" /tmp/gpu/decoder.onnx /tmp/gpu/chain.onnx
           # the probe boots from build/ itself (Node hosts make an assets folder of their own): the bundle there
           python3 -c "from app.host.assets import BUILD; from app.host.server import bundle_bytes; \
(BUILD / 'bundle.zip').write_bytes(bundle_bytes())"
           for probe in "none x" "none gpu" "webgpu,jsep x" "webgpu,jsep gpu"; do
             set -- $probe
             "$NODE" tools/gpu/chain_probe.mjs "$PWD/build" /tmp/gpu/chain.onnx 12 "$1" "$2" >"/tmp/gpu/chain-probe-${1/,/+}-$2.txt" 2>&1
             tail -2 "/tmp/gpu/chain-probe-${1/,/+}-$2.txt" | cut -c1-300
           done ;;
    sweep) dtype=${DTYPE:-float32}; name="sweep-$VARIANT-$dtype${LABEL:+-$LABEL}"
           python3 tools/gpu/as_dtype.py "$dtype" --variant "$VARIANT" ${GRID:+--grid "$GRID"} >/tmp/gpu/sweep.json
           python3 -m app tune --tier "$TIER" --host node --bench /tmp/gpu/sweep.json --runs "${RUNS:-5}" --repeats "$REPEATS" \
             ${CASES:+--cases "$CASES"} --out "$OUT/$name.json" | tee "/tmp/gpu/$name.txt" || status=1 ;;
    ab) if [ ! -d "${ALT:-}" ]; then echo "ab needs ALT, a folder of the other version's files" >&2; status=2; continue; fi
        keep=/tmp/gpu/ab-keep; runs=/tmp/gpu/ab; rm -rf "$keep" "$runs"; mkdir -p "$keep" "$runs"
        (cd "$ALT" && find . -type f) | while read -r f; do mkdir -p "$keep/$(dirname "$f")"; cp "$f" "$keep/$f"; done
        python3 tools/gpu/as_dtype.py float32 ${CASES:+--cases "$CASES"} >/tmp/gpu/ab-f32.json
        python3 tools/gpu/as_dtype.py float16 ${CASES:+--cases "$CASES"} >/tmp/gpu/ab-f16.json
        for i in $(seq "${ROUNDS:-2}"); do
          for v in b a; do
            if [ $v = a ]; then cp -r "$ALT"/. .; else cp -r "$keep"/. .; fi
            for d in ${DTYPES:-f32 f16}; do
              python3 -m app bench --tier "$TIER" --host node --runs 10 --repeats "$REPEATS" --bench "/tmp/gpu/ab-$d.json" \
                --out "$runs/$v$i-$d.json" >/dev/null || status=1
            done
            echo "  $v$i ($(date -u +%T))"
          done
        done
        cp -r "$keep"/. .
        tar -C "$runs" -czf "$OUT/ab.tgz" .
        python3 tools/gpu/ab_summary.py "$runs" | tee "$OUT/ab.md" ;;
    firstresult) # process start to a first result on one layer (tools/first_result.mjs), each run a new Node process:
                 # ours on a first visit (no plan store), a revisit (the store the first left) and a new signature on
                 # a revisit (the layer at the next scale), onnxruntime-web's
                 # session + first run beside it; ROUNDS (3) alternated rounds. $OUT/firstresult.jsonl and .md
                 fr=/tmp/gpu/firstresult; rm -rf "$fr"; mkdir -p "$fr"
                 python3 -m app export "$fr/kernel" >/dev/null || status=1
                 "$NODE" tools/gpu/first_result.mjs model "$fr/layer.onnx" || status=1
                 for i in $(seq "${ROUNDS:-3}"); do
                   for run in "first ours" "revisit ours" "new ours" "first ort"; do
                     set -- $run
                     visit=$1; [ "$1" = new ] && visit="new signature"
                     [ "$1" = first ] && rm -f "$fr/plans.json"
                     if [ "$2" = ours ]; then args=(ours "$fr/kernel" "$fr/plans.json" "$1")
                     else args=(ort "$fr/layer.onnx" "$PWD/node_modules/onnxruntime-web/dist"); fi
                     # its status is SIGKILL's (web/views/json-lines.mjs exitNow): a row is what says it ran
                     "$NODE" tools/gpu/first_result.mjs "${args[@]}" 2>>"$fr/stderr.txt" >"$fr/row.txt"
                     grep '^{' "$fr/row.txt" | sed "s/^{/{\"visit\":\"$visit\",\"round\":$i,/" \
                       | tee -a "$OUT/firstresult.jsonl" | cut -c1-200 || status=1
                   done
                 done
                 python3 tools/first_result.py summary "$OUT/firstresult.jsonl" | tee "$OUT/firstresult.md" ;;
    *) echo "unknown stage $stage" >&2; status=2 ;;
  esac
done
# The device tool returns at most 8 files: the case logs travel as one archive.
ls /tmp/gpu/*.txt >/dev/null 2>&1 && tar -C /tmp/gpu -czf "$OUT/case-logs.tgz" $(cd /tmp/gpu && ls *.txt)
exit $status
