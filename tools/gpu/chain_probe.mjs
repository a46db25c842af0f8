// Where a chain's end-to-end call goes (issue 26's --chain number): round by round, ours end to end (y in a
// new array, and y into the array each side reuses: model-run.mjs e2eInto) and resident, each layer's stage
// marks (ms from its call's start) and the kernel's write counters, with
// onnxruntime-web's sessions of the same chain run between our rounds or not (does their work delay ours?),
// and each side's GPU-timed run too or not (`python -m app model --against ort` runs both builds and times all).
//   node tools/gpu/chain_probe.mjs BUILD_DIR CHAIN.onnx [rounds] [none|jsep|webgpu|webgpu,jsep] [gpu]
//   node tools/gpu/chain_probe.mjs BUILD_DIR CHAIN.onnx [rounds] model      (runModel itself, as `app model` runs it)
// Garbage collections (perf_hooks "gc" entries) inside our end-to-end runs are summed per round.
// CHAIN.onnx: a chain model cut by app/onnx_model.py chain_model (ConvTranspose nodes only).
import { readFile } from "node:fs/promises";
import { PerformanceObserver } from "node:perf_hooks";
import { bootNode } from "../../web/views/dawn-node.mjs";
import { modelNodes, readModel } from "../../web/views/onnx-convtranspose.mjs";
import { ours, requests, runModel, toBase64 } from "../../web/views/model-run.mjs";
import { ortModel } from "../../web/views/ort-bench.mjs";

await bootNode(process.argv[2]);
const gcs = [];
new PerformanceObserver((list) => gcs.push(...list.getEntries().map((e) => [e.startTime, e.duration]))).observe({ entryTypes: ["gc"] });
const gcIn = (from, to) => gcs.filter(([t]) => t >= from && t <= to).reduce((a, [, d]) => a + d, 0);
const bytes = new Uint8Array(await readFile(process.argv[3]));
const rounds = Number(process.argv[4] ?? 8), peers = (process.argv[5] ?? "none").split(",").filter((p) => p !== "none");
const timed = process.argv[6] === "gpu";
const cut = modelNodes(readModel(bytes));
const layers = requests(cut.nodes, cut.dtype);
const xData = new Float32Array(cut.x_shape.reduce((a, b) => a * b, 1)).map((_, i) => Math.sin(i) * 0.5);
if (process.argv[5] === "model") {
  const start = performance.now();
  const result = await runModel({ model: { bytes }, x: toBase64(xData), runs: rounds, warmup: 1, against: true });
  await new Promise((r) => setTimeout(r, 100));  // gc entries arrive asynchronously
  delete result.y;
  console.log(JSON.stringify({ ...result, gc_ms: gcIn(start, performance.now()), gcs: gcs.length }));
  process.exit(0);
}
const impl = await ours(layers, cut.x_shape, xData, cut.dtype);
const orts = [];
for (const ep of peers) orts.push(await ortModel(ep, bytes, { input: cut.input, output: cut.output, dims: cut.x_shape, dtype: cut.dtype, data: xData }));
const now = () => performance.now();
const relative = (m) => Object.fromEntries(Object.entries(m).filter(([k]) => k !== "start").map(([k, v]) => [k, +(v - m.start).toFixed(3)]));
for (let r = 0; r < rounds; r++) {
  const m0 = impl.memory();
  let start = now(); await impl.e2e(); const e2e = now() - start;
  const window = [start, now()];
  const calls = impl.marks().map(relative);
  const m1 = impl.memory();
  start = now(); await impl.e2eInto(); const e2eInto = now() - start;
  const intoCalls = impl.marks().map(relative);
  start = now(); await impl.resident(); const resident = now() - start;
  if (timed) await impl.gpu();
  let peerMs = null, peerIntoMs = null;
  for (const ort of orts) {
    start = now(); await ort.e2e(); peerMs = Math.min(peerMs ?? Infinity, now() - start);
    start = now(); await ort.e2eInto(); peerIntoMs = Math.min(peerIntoMs ?? Infinity, now() - start);
    await ort.resident();
    if (timed) await ort.gpu();
  }
  const d = (k) => m1[k] - m0[k];
  await new Promise((r) => setTimeout(r, 0));
  console.log(JSON.stringify({ round: r, e2e_ms: +e2e.toFixed(3), e2e_into_ms: +e2eInto.toFixed(3), resident_ms: +resident.toFixed(3),
    peer_e2e_ms: peerMs && +peerMs.toFixed(3), peer_e2e_into_ms: peerIntoMs && +peerIntoMs.toFixed(3), gc_in_e2e_ms: +gcIn(...window).toFixed(3),
    e2e_bytes_written: d("bytes_written"), e2e_weight_bytes_written: d("weight_bytes_written"), e2e_preparations: d("weight_preparations"),
    calls, into_calls: intoCalls }));
}
process.exit(0);
