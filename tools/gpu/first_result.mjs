// Time to a first result in Node on Dawn, ours beside onnxruntime-web's (tools/first_result.mjs: the layer, the
// data, what is timed), each run a new process timed from its start, as a server or a CLI pays it:
//   node tools/gpu/first_result.mjs model OUT.onnx                 the layer's one-node model (for ort runs)
//   node tools/gpu/first_result.mjs ours KERNEL_DIR STORE.json [new] KERNEL_DIR: `python -m app export` of this tree;
//                                                                   STORE: the plan store file (absent: a first visit);
//                                                                   new: the layer at the next scale (NEW_LAYER)
//   node tools/gpu/first_result.mjs ort MODEL.onnx ORT_DIST/
// ours and ort print one JSON line: {who, kernelMs | sessionMs, resultMs, ...}, then end with SIGKILL (exitNow: below).
// tools/gpu/run.sh's firstresult stage runs them.
import { readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { dawnGpu, shareableWrites } from "../../web/views/dawn-gpu.mjs";
import { exitNow } from "../../web/views/json-lines.mjs";
import { LAYER, NEW_LAYER, layerData, ortFirst, ours } from "../first_result.mjs";

const [what, ...args] = process.argv.slice(2);
const layer = what === "ours" && args[2] === "new" ? NEW_LAYER : LAYER;
const data = layerData(7, layer);

function dawn() {
  globalThis.navigator = { gpu: dawnGpu() };
}

// Dawn for Node completes a GPU promise on a turn of the event loop, and a loop with nothing else pending can sleep
// through V8's background compiles of onnxruntime-web's 27 MB wasm: its first run waited for them (77-127 s here on
// SwiftShader, 31-34 s on the H200) where it takes 1.0 s with a timer pending. An app's loop is rarely that empty:
// a pending timer keeps both sides' loops turning. The same compiles would hold process.exit back: exitNow.
const turning = setInterval(() => {}, 1000);
let out;
if (what === "model") {
  const { convTransposeModel } = await import("../../web/views/onnx-convtranspose.mjs");
  await writeFile(args[0], convTransposeModel({ x: LAYER.x, w: LAYER.w, attributes: LAYER.attributes, w_data: data.w }));
  process.exit(0);  // no wasm ran: nothing to wait for
} else if (what === "ours") {
  const [kernelDir, store] = args;
  process.env.CONVTRANSPOSE_PLANS = store;
  dawn();
  const module = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
  const got = await ours(module, data, layer);
  out = { ...got, y: Array.from(got.y.slice(0, 8)) };
} else if (what === "ort") {
  const [model, dist] = args;
  dawn();
  shareableWrites();  // ORT uploads from its shared wasm memory
  const ort = await import(pathToFileURL(`${dist}/ort.webgpu.min.mjs`).href);
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = pathToFileURL(`${dist}/`).href;
  ort.env.logLevel = "error";
  ort.env.webgpu.adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  const got = await ortFirst(ort, new Uint8Array(await readFile(model)), data);
  out = { ...got, y: Array.from(got.y.slice(0, 8)) };
} else {
  console.error("usage: first_result.mjs model OUT | ours KERNEL_DIR STORE | ort MODEL ORT_DIST");
  process.exit(2);
}
clearInterval(turning);
console.log(JSON.stringify(out));
// ours stays as the browser's visits do (tools/first_result.py STAY_MS): a process that serves keeps running, and
// what it stores behind its first result (a starter) is what the next visit starts from
if (what === "ours") await new Promise((resolve) => setTimeout(resolve, 3000));
await exitNow();
