// One visit of the exported package in Node for tests/test_calibration.py: each layer of LAYERS (JSON: [{x, w,
// attributes}], shapes; seeded data) called CALLS times, 20 ms apart, until its adaptation trial is over; prints one
// JSON line: per layer the variant and reason of each call, the trials, and what the kernel plans with of the
// calibration.
//   node tests/calibration_probe.mjs KERNEL_DIR STORE ADAPT(true|false) CALLS LAYERS_JSON [WITHIN]
// WITHIN: adapt.mjs's ADAPT.within for the visit (0: no candidate passes the bound, so a trial times none).
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";

const [kernelDir, store, adapt, calls, layers, within] = process.argv.slice(2);
process.env.CONVTRANSPOSE_PLANS = store;
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
if (within !== undefined) (await import(pathToFileURL(`${kernelDir}/web/runtime/adapt.mjs`).href)).ADAPT.within = Number(within);
const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, adapt: adapt === "true" });
const data = (shape, seed) => Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(seed + i * 0.618));
const out = [];
for (const layer of JSON.parse(layers)) {
  const call = { x: { data: data(layer.x, 1), shape: layer.x }, w: { data: data(layer.w, 2), shape: layer.w, constant: true },
                 ...layer.attributes };
  const before = kernel.adaptations().length;
  const rows = [];
  for (let i = 0; i < Number(calls); i++) {
    const { meta } = await kernel(call);
    rows.push({ variant: meta.variant, reason: meta.reason });
    const trial = kernel.adaptations()[before];
    if (trial?.done) break;
    await new Promise((r) => setTimeout(r, 20));  // Python plans the candidates between calls, as an app's gaps allow
  }
  out.push({ rows, trial: kernel.adaptations()[before] ?? null });
}
// what the last call set off has ended (a trial's settling is written; exiting under a compile crashes Dawn:
// docs/npm.md#node)
await kernel.idle();
await kernel.ready;
console.log(JSON.stringify({ layers: out, calibration: await kernel.calibration(), device: kernel.device() }));
process.exit(0);
