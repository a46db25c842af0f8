// kernel.idle() in the exported package in Node, for tests/test_adapt.py: a layer called twice (its second call
// sets off the planning and compiling of its trial's alternatives on a later turn), then idle(); prints one JSON line
// of what was under way right after the call and what is left after idle(). Exits with process.exit, which Dawn
// survives only with no compile under way.
//   node tests/idle_probe.mjs KERNEL_DIR
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";

const [kernelDir] = process.argv.slice(2);
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, planStore: false });
const call = { x: { data: new Float32Array(16 * 12 * 12).fill(0.5), shape: [1, 16, 12, 12] },
               w: { data: new Float32Array(16 * 8 * 4 * 4).fill(0.25), shape: [16, 8, 4, 4], constant: true },
               strides: [2, 2], pads: [1, 1, 1, 1] };
await kernel(call);
await kernel(call);
const state = () => {
  const [trial] = kernel.adaptations();
  return { compiling: kernel.memory().compiling, candidates: trial.candidates.length,
           planned: trial.candidates.filter((c) => c.ready_at !== null || c.stopped).length };
};
const after = state();
await kernel.idle();
console.log(JSON.stringify({ after, idle: state() }));
process.exit(0);
