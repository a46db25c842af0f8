// The app in Node.js: the same boot module as the pages, Pyodide from the same local assets, and
// navigator.gpu from Dawn (npm `webgpu`). It answers JSON lines on stdin, one request per line:
//   {"id": 1, "method": "call", "params": ["bench_cases", text, "small"]}  ->  {"id": 1, "result": [...]}
// Methods: call(name, args) (app.bridge.<name>, the one way into Python), loadPyodideMs, compare(case, options)
// and breakdown(case, options) (web/views/compare.mjs: ours beside onnxruntime-web, where a call's time goes),
// model(spec) (web/views/model-run.mjs: a layer or chain cut from an ONNX file, `python -m app model`).
// Usage: node web/views/node-host.mjs BUILD_DIR   (BUILD_DIR holds pyodide/ and bundle.zip)
import { readFile } from "node:fs/promises";
import { create, globals } from "webgpu";
import { bootApp, callPython } from "../runtime/index.mjs";
import { reply, serve } from "./json-lines.mjs";
import { breakdownCase, compareCase } from "./compare.mjs";
import { runModel } from "./model-run.mjs";
import { setOrtBase } from "./ort-bench.mjs";

const build = process.argv[2].replace(/\/?$/, "/");
Object.assign(globalThis, globals);

const { loadPyodide } = await import(`${build}pyodide/pyodide.mjs`);
const app = await bootApp({
  base: build,
  loadPyodide,
  readBytes: async (path) => new Uint8Array(await readFile(path)),
});
// Only after Pyodide has booted: it reads a defined `navigator` as "running in a browser".
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

// onnxruntime-web (the peer) from node_modules. Dawn's Node binding rejects a SharedArrayBuffer (or a view of
// one) as a writeBuffer source, and both ORT wasm builds upload from shared memory: such sources are copied
// into a plain buffer first. Our kernel never writes from shared memory, so the copy is ORT's cost alone.
setOrtBase(new URL("../../node_modules/onnxruntime-web/dist/", import.meta.url).href);
const writeBuffer = globals.GPUQueue.prototype.writeBuffer;
globals.GPUQueue.prototype.writeBuffer = function (buffer, offset, data, dataOffset, size) {
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

const methods = {
  call: (name, args = []) => callPython(name, ...args),
  loadPyodideMs: () => app.loadMs,
  compare: (benchCase, options) => compareCase(benchCase, options),
  breakdown: (benchCase, options) => breakdownCase(benchCase, options),
  model: (spec) => runModel(spec),
};

reply({ ready: true, loadMs: app.loadMs });
await serve(methods, (err) => `${err?.name ?? "Error"}: ${String(err?.message ?? err)}`);
process.exit(0);
