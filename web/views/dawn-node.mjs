// WebGPU in Node.js from Dawn (npm `webgpu`) for the Node host and the GPU machine's probes, with Pyodide
// booted from the build folder first: Pyodide reads a defined `navigator` as "running in a browser".
//   const app = await bootNode(buildDir)
import { readFile } from "node:fs/promises";
import { bootApp } from "../runtime/index.mjs";
import { dawnGpu, shareableWrites } from "./dawn-gpu.mjs";
import { setOrtBase } from "./ort-bench.mjs";

export async function bootNode(buildDir) {
  const build = buildDir.replace(/\/?$/, "/");
  const gpu = dawnGpu();
  const { loadPyodide } = await import(`${build}pyodide/pyodide.mjs`);
  const app = await bootApp({ base: build, loadPyodide, readBytes: async (path) => new Uint8Array(await readFile(path)) });
  if (globalThis.navigator) globalThis.navigator.gpu ??= gpu;
  else Object.defineProperty(globalThis, "navigator", { value: { gpu }, configurable: true });
  shareableWrites();
  // onnxruntime-web (the peer) from node_modules
  setOrtBase(new URL("../../node_modules/onnxruntime-web/dist/", import.meta.url).href);
  return app;
}
