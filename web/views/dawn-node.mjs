// WebGPU in Node.js from Dawn (npm `webgpu`) for the Node host and the GPU machine's probes, with Pyodide
// booted from the build folder first: Pyodide reads a defined `navigator` as "running in a browser".
//   const app = await bootNode(buildDir)
import { readFile } from "node:fs/promises";
import { create, globals } from "webgpu";
import { bootApp } from "../runtime/index.mjs";
import { setOrtBase } from "./ort-bench.mjs";

export async function bootNode(buildDir) {
  const build = buildDir.replace(/\/?$/, "/");
  Object.assign(globalThis, globals);
  const { loadPyodide } = await import(`${build}pyodide/pyodide.mjs`);
  const app = await bootApp({ base: build, loadPyodide, readBytes: async (path) => new Uint8Array(await readFile(path)) });
  // Dawn toggles: allow_unsafe_apis exposes experimental features (subgroup matrices) where the GPU has them;
  // vulkan_enable_f16_on_nvidia lifts Dawn's policy block on shader-f16 for NVIDIA GPUs under Vulkan (the
  // driver supports it; Dawn withholds it pending CTS work, crbug.com/42251215). Without it no NVIDIA GPU
  // offers shader-f16, nor f16 subgroup-matrix configurations. Both are no-ops elsewhere. And Dawn rounds
  // timestamps to 65.5 us steps by default (a browser's defence against timing attacks), coarser than
  // most kernels here take on a real GPU: a local tool may have them exact.
  const gpu = create(["enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia",
    "disable-dawn-features=timestamp_quantization"]);
  if (globalThis.navigator) globalThis.navigator.gpu ??= gpu;
  else Object.defineProperty(globalThis, "navigator", { value: { gpu }, configurable: true });
  shareableWrites(globals.GPUQueue.prototype);
  // onnxruntime-web (the peer) from node_modules
  setOrtBase(new URL("../../node_modules/onnxruntime-web/dist/", import.meta.url).href);
  return app;
}

// Dawn's Node binding rejects a SharedArrayBuffer (or a view of one) as a writeBuffer source, and both ORT
// wasm builds upload from shared memory: such sources are copied into a plain buffer first. Our kernel never
// writes from shared memory, so the copy is ORT's cost alone.
function shareableWrites(queue) {
  const writeBuffer = queue.writeBuffer;
  queue.writeBuffer = function (buffer, offset, data, dataOffset, size) {
    const view = ArrayBuffer.isView(data) ? data : null;
    const backing = view ? view.buffer : data;
    if (typeof SharedArrayBuffer !== "undefined" && backing instanceof SharedArrayBuffer) {
      const unit = view?.BYTES_PER_ELEMENT ?? 1;
      const start = (view ? view.byteOffset : 0) + (dataOffset ?? 0) * unit;
      const bytes = size !== undefined ? size * unit : (view ? view.byteLength : backing.byteLength) - (dataOffset ?? 0) * unit;
      return writeBuffer.call(this, buffer, offset, new Uint8Array(backing, start, bytes).slice());
    }
    return writeBuffer.apply(this, arguments);
  };
}
