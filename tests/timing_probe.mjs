// A call's GPU time in Node on Dawn, for tests/test_call_timing.py: a layer forced to a variant with a weight pass
// (col2im_gemm_vec4: the weight pass, its GEMM, its fold), w constant, called 3 times with timing; prints what each
// call's timestamps resolved (first query, count) and its meta.gpu_ms, as one JSON line.
//   node tests/timing_probe.mjs KERNEL_DIR
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";

const [kernelDir] = process.argv.slice(2);
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const resolved = [];
const resolve = GPUCommandEncoder.prototype.resolveQuerySet;
GPUCommandEncoder.prototype.resolveQuerySet = function (set, first, count, ...rest) {
  resolved.push([first, count]);
  return resolve.call(this, set, first, count, ...rest);
};
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, adapt: false, planStore: false });
await kernel.ready;
const call = { x: { data: Float32Array.from({ length: 16 * 12 * 12 }, (_, i) => Math.sin(i)), shape: [1, 16, 12, 12] },
               w: { data: Float32Array.from({ length: 16 * 8 * 4 * 4 }, (_, i) => Math.cos(i)), shape: [16, 8, 4, 4], constant: true },
               strides: [2, 2], pads: [1, 1, 1, 1], variant: "col2im_gemm_vec4" };
const calls = [];
for (let i = 0; i < 3; i++) {
  resolved.length = 0;
  const { meta } = await kernel(call, { timing: true });
  calls.push({ resolved: [...resolved], gpu_ms: meta.gpu_ms, variant: meta.variant });
}
console.log(JSON.stringify({ calls }));
await kernel.idle();  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.exit(0);
