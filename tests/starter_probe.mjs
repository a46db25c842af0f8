// One visit of the exported package in Node, for tests/test_starter.py: the plan store at STORE, a decoder layer
// whose plan compiles slowly on SwiftShader (tools/first_result.mjs LAYER), called until MODE's condition holds:
//   first:   once, then until the store holds the layer's starter (or 60 s: in the whole suite, two workers on two
//            cores, the starter's weighing has run past 20 s)
//   revisit: until a call runs the stored plan, not the starter (or 60 s)
//   new:     as revisit, on the layer at the next scale (NEW_LAYER: a signature no stored plan holds)
//   node tests/starter_probe.mjs KERNEL_DIR STORE MODE [adapt]     (adapt "false": getKernel's adapt: false)
// Prints one JSON line: each call's variant and reason, the first and last calls' error against the reference.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";
import { LAYER, NEW_LAYER, layerData } from "../tools/first_result.mjs";

const [kernelDir, store, mode, adapt = "true"] = process.argv.slice(2);
process.env.CONVTRANSPOSE_PLANS = store;
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const warnings = [];
console.warn = (...args) => { warnings.push(args.join(" ")); };

const layer = mode === "new" ? NEW_LAYER : LAYER;
const data = layerData(7, layer);
const call = { x: { data: data.x, shape: layer.x }, w: { data: data.w, shape: layer.w, constant: true }, ...layer.attributes };
const module = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const kernel = await module.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, adapt: adapt === "true" });
const calls = [];
const results = [];
const stored = () => {
  try {
    const record = JSON.parse(Object.values(JSON.parse(readFileSync(store, "utf8")))[0]);
    return Object.values(record.adapters).some((c) => Object.values(c.entries).some((e) => e.starter));
  } catch { return false; }
};
const started = performance.now();
for (;;) {
  const { y, meta } = await kernel(call);
  calls.push({ variant: meta.variant, reason: meta.reason });
  results.push(y.data);
  const done = mode === "first" ? stored() : !meta.reason.startsWith("the quick first kernel");
  if (done || performance.now() - started > 60000) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await kernel.ready;
const reference = kernel.reference(call).data;
// the largest error of a result against the float64 reference, relative to the reference's largest value
const scale = reference.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
const err = (y) => y.reduce((m, v, i) => Math.max(m, Math.abs(v - reference[i])), 0) / scale;
const line = JSON.stringify({ calls, firstErr: err(results[0]), lastErr: err(results.at(-1)), starterStored: stored(), warnings });
await kernel.idle();  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.stdout.write(`${line}\n`, () => process.exit(0));
