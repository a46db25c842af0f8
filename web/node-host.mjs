// The app in Node.js: the same boot module as the pages, Pyodide from the same local assets, and
// navigator.gpu from Dawn (npm `webgpu`). It answers JSON lines on stdin, one request per line:
//   {"id": 1, "method": "loadCases", "params": [text]}  ->  {"id": 1, "result": [...names]}
// Methods: device, loadCases, runCase(index, variant), python(code).
// Usage: node web/node-host.mjs BUILD_DIR   (BUILD_DIR holds pyodide/ and bundle.zip)
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { create, globals } from "webgpu";
import { bootApp, getKernel } from "./boot.mjs";

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
const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1 });

const methods = {
  device: () => kernel.device(),
  loadPyodideMs: () => app.loadMs,
  loadCases: (text) => kernel.loadCases(text),
  runCase: (index, variant) => kernel.runCase(index, variant ?? null),
  python: async (code) => {
    const out = await app.pyodide.runPythonAsync(code);
    return out && out.toJs ? out.toJs({ dict_converter: Object.fromEntries }) : out;
  },
};

const reply = (message) => process.stdout.write(JSON.stringify(message) + "\n");
reply({ ready: true, loadMs: app.loadMs });
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { id, method, params = [] } = JSON.parse(line);
  try {
    if (!(method in methods)) throw new Error(`unknown method ${method}`);
    reply({ id, result: (await methods[method](...params)) ?? null });
  } catch (err) {
    reply({ id, error: String(err?.message ?? err) });
  }
}
process.exit(0);
