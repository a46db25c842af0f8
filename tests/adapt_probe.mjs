// One visit of the exported package in Node for tests/test_adapt.py: a layer called until its adaptation trial
// is over (or CALLS calls), each result checked against the float64 reference; prints one JSON line.
//   node tests/adapt_probe.mjs KERNEL_DIR STORE [adapt=true|false] [CALLS]
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";

const [kernelDir, store, adapt = "true", calls = "1000"] = process.argv.slice(2);
process.env.CONVTRANSPOSE_PLANS = store;
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, adapt: adapt === "true" });
const x = Float32Array.from({ length: 1 * 16 * 12 * 12 }, (_, i) => Math.sin(i));
const w = Float32Array.from({ length: 16 * 8 * 4 * 4 }, (_, i) => Math.cos(i * 0.3));
const call = { x: { data: x, shape: [1, 16, 12, 12] }, w: { data: w, shape: [16, 8, 4, 4], constant: true },
               strides: [2, 2], pads: [1, 1, 1, 1] };
await kernel.ready;
const reference = kernel.reference(call).data;
let worst = 0;
const rows = [];
for (let i = 0; i < Number(calls); i++) {
  const { y, meta } = await kernel(call);
  for (let j = 0; j < y.data.length; j++) worst = Math.max(worst, Math.abs(y.data[j] - reference[j]) / (1e-4 + 1e-4 * Math.abs(reference[j])));
  rows.push({ variant: meta.variant, reason: meta.reason });
  const trial = kernel.adaptations()[0];
  if (trial?.done && rows.length > trial.calls + 1) break;  // a call after the trial settled
  if (!trial && i >= 9) break;
  await new Promise((r) => setTimeout(r, 20));  // calls spaced as an app's are: Python plans the candidates between
}
// what the calls set off has ended (a trial's planning, a starter weighed and let go; exiting under a compile
// crashes Dawn: docs/npm.md#node)
await kernel.idle();
const { launches } = kernel.memory();  // the executor's: the first pick's, and each candidate planned
console.log(JSON.stringify({ rows, adaptations: kernel.adaptations(), worst, launches }));
process.exit(0);
