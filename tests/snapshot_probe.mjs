// One first visit of an exported package in Node for tests/test_snapshot.py: getKernel, one call (no stored plans),
// then what the call left: the boot's phases, warnings, whether it imported numpy or any module the snapshot
// lacked; then kernel.ready, validate and the float64 reference. Prints one JSON line.
//   node tests/snapshot_probe.mjs KERNEL_DIR [autotune]
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";

const [kernelDir, autotune = ""] = process.argv.slice(2);
process.env.CONVTRANSPOSE_PLANS = `${kernelDir}/../plans.json`;  // a store of this visit's own: a first visit
const warnings = [];
console.warn = (...args) => warnings.push(args.join(" "));
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const boot = await import(pathToFileURL(`${kernelDir}/web/runtime/boot.mjs`).href);
const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose",
                                 { version: 1, adapt: false, autotune: autotune === "autotune" });
const kernelMs = performance.now();
const x = Float32Array.from({ length: 1 * 8 * 9 * 9 }, (_, i) => Math.sin(i));
const w = Float32Array.from({ length: 8 * 4 * 3 * 3 }, (_, i) => Math.cos(i * 0.3));
const call = { x: { data: x, shape: [1, 8, 9, 9] }, w: { data: w, shape: [8, 4, 3, 3] }, strides: [2, 2], pads: [1, 1, 1, 1] };
const { y } = await kernel(call);
const python = boot.firstCallApp().pyodide;
const modules = () => python.runPython("import sys; sorted(m for m in sys.modules if m == 'app' or m.startswith('app.'))").toJs();
const afterCall = { numpy: python.runPython("import sys; 'numpy' in sys.modules"), modules: modules() };
await kernel.ready;
const reference = kernel.reference(call).data;
let worst = 0;
for (let j = 0; j < y.data.length; j++) worst = Math.max(worst, Math.abs(y.data[j] - reference[j]));
const numpyLoaded = m.bootPhases().find((p) => p.phase === "load numpy");
console.log(JSON.stringify({ phases: m.bootPhases().map((p) => p.phase), warnings, afterCall, worst,
                             numpyBeforeKernel: numpyLoaded ? numpyLoaded.startMs + numpyLoaded.ms <= kernelMs : null,
                             validate: kernel.validate({ ...call, pads: [1, 1] }) }));
await kernel.idle();  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.exit(0);
