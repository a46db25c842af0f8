// One visit of the exported package in Node (each visit a new process, as a revisit is), for
// tests/test_stored_plans.py: Dawn on this machine's adapter, the plan store at STORE, one layer called before
// Python is up (from the store, on a revisit) and once after; prints one JSON line.
//   node tests/stored_plans_probe.mjs KERNEL_DIR STORE [hanging]
// hanging: getKernel's planStore is a caller's store whose get and set never settle.
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";

const [kernelDir, store, mode = "file"] = process.argv.slice(2);
process.env.CONVTRANSPOSE_PLANS = store;
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const warnings = [];
const warn = console.warn;
console.warn = (...args) => { warnings.push(args.join(" ")); warn(...args); };

const x = Float32Array.from({ length: 2 * 3 * 5 * 4 }, (_, i) => Math.sin(i) * 2);
const w = Float32Array.from({ length: 3 * 2 * 3 * 3 }, (_, i) => Math.cos(i * 0.7));
const call = { x: { data: x, shape: [2, 3, 5, 4] }, w: { data: w, shape: [3, 2, 3, 3] }, strides: [2, 2], pads: [1, 0, 0, 1] };

const started = performance.now();
const module = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const options = { version: 1 };
if (mode === "hanging") {
  class Hanging { get() { return new Promise(() => {}); } set() { return new Promise(() => {}); } }
  options.planStore = new Hanging();
}
const kernel = await module.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", options);
const kernelMs = performance.now() - started;
const first = await kernel(call);
const fromStore = module.bootPhases().some((p) => p.phase === "compile a stored plan");
const firstMs = performance.now() - started;
await kernel.ready;
const after = await kernel(call);
const reference = kernel.reference(call);
const out = (r) => ({ y: Array.from(r.y.data), shape: r.y.shape, dtype: r.y.dtype, variant: r.meta.variant });
console.log(JSON.stringify({ kernelMs, firstMs, fromStore, first: out(first), after: out(after),
                             reference: { y: Array.from(reference.data), shape: reference.shape }, warnings }));
await kernel.idle();  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.exit(0);
