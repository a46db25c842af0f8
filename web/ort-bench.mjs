// onnxruntime-web on one bench case, timed in this page the way our kernel is timed (bench --against ort).
//
//   import { benchOrt } from "/web/ort-bench.mjs";
//   const r = await benchOrt(benchCase, { runs: 5, warmup: 1, ep: "webgpu" });
//
// benchCase: one entry of bench.json's "cases" plus "fill" (bench.json's fill spec), i.e. {name, x, w, bias,
//   attributes, dtype, fill}. Optional `inputs: {x, w, b?}` (Float32Arrays, row-major) in the options are the
//   case's data; without them the data is drawn by the app's own Python (app.bench.make_inputs, through
//   boot.mjs's Pyodide), so ORT and our kernel always see the same numbers.
// ep: "webgpu": onnxruntime-web's native C++ WebGPU execution provider (dist/ort.webgpu.min.mjs, which loads
//       the asyncify wasm); "jsep": its default build's JavaScript WebGPU kernels (dist/ort.min.mjs, jsep wasm).
//   Both are loaded from this server's /ort/ route (node_modules/onnxruntime-web/dist, pinned in
//   package-lock.json), single-threaded, CPU fallback disabled: a node the EP cannot run (3D ConvTranspose,
//   say) makes session creation fail, and that comes back as `error`, never silently timed on the CPU.
// Timing: x is uploaded once into a GPU buffer (Tensor.fromGpuBuffer) and y stays on the GPU
//   (preferredOutputLocation "gpu-buffer"); `warmup` untimed runs, then `runs` timed ones.
//   - wall: performance.now() around session.run() + device.queue.onSubmittedWorkDone() (both EPs);
//   - gpu: the sum of ORT's per-kernel timestamp-query durations (env.webgpu.profiling "default" mode),
//     obtainable from the JSEP build only (the native EP does not hand its timestamps to JavaScript). These
//     runs are separate from the wall-time runs, because profiling makes JSEP submit one pass at a time.
// Returns {impl, ep, median_ms, min_ms, source: "timestamp-query" | "wall", wall_median_ms, wall_min_ms,
//   gpu_median_ms?, y?: Float32Array (read back once, after timing), y_shape?, error?: string}.
//   median_ms/min_ms are the GPU numbers where source is "timestamp-query", else the wall numbers.

import { convTransposeModel } from "./onnx-convtranspose.mjs";

const BUILDS = { webgpu: "ort.webgpu.min.mjs", jsep: "ort.min.mjs" };
const loaded = {};
const STORAGE = 0x80, COPY_SRC = 0x4, COPY_DST = 0x8;

function loadOrt(ep) {
  if (!(ep in BUILDS)) throw new Error(`unknown ep ${JSON.stringify(ep)}; known: ${Object.keys(BUILDS)}`);
  loaded[ep] ??= import(new URL(`../ort/${BUILDS[ep]}`, import.meta.url).href).then((ort) => {
    ort.env.wasm.numThreads = 1;  // no worker threads: the page timing its own GPU work stays one thread
    ort.env.wasm.proxy = false;
    ort.env.logLevel = "error";
    return ort;
  });
  return loaded[ep];
}

async function caseInputs(benchCase) {
  const { bootApp } = await import("./boot.mjs");
  const { pyodide } = await bootApp();
  pyodide.globals.set("bench_case_json", JSON.stringify(benchCase));
  const out = await pyodide.runPythonAsync(`
import json
from app import bench
_arrays = bench.make_inputs(json.loads(bench_case_json))
{name: a.astype("float32").tobytes() for name, a in _arrays.items()}`);
  const bytes = out.toJs({ dict_converter: Object.fromEntries });
  out.destroy();
  return Object.fromEntries(Object.entries(bytes).map(([k, v]) => [k, new Float32Array(v.slice().buffer)]));
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

/** Times onnxruntime-web on one bench case (see the module header). Never throws for ORT's refusals. */
export async function benchOrt(benchCase, { runs = 5, warmup = 1, ep = "webgpu", inputs = null } = {}) {
  let ort, session, xBuffer;
  const result = { impl: `onnxruntime-web ${ep}`, ep };
  try {
    ort = await loadOrt(ep);
    result.impl = `onnxruntime-web ${ort.env.versions?.web ?? ""} ${ep}`.replace("  ", " ");
    if ((benchCase.dtype ?? "float32") !== "float32") throw new Error(`dtype ${benchCase.dtype} is not benchmarked against ORT`);
    const data = inputs ?? await caseInputs(benchCase);
    const gpuRecords = [];
    ort.env.webgpu.profiling = ep === "jsep"
      ? { mode: "default", ondata: (record) => gpuRecords.push(record.endTime - record.startTime) }
      : { mode: "off" };
    const model = convTransposeModel({ x: benchCase.x, w: benchCase.w, bias: !!benchCase.bias,
                                       attributes: benchCase.attributes ?? {}, w_data: data.w, b_data: data.b ?? null });
    session = await ort.InferenceSession.create(model, {
      executionProviders: ["webgpu"], preferredOutputLocation: "gpu-buffer",
      extra: { session: { disable_cpu_ep_fallback: "1" } },
    });
    const device = await ort.env.webgpu.device;
    xBuffer = device.createBuffer({ size: Math.max(4, data.x.byteLength), usage: STORAGE | COPY_SRC | COPY_DST });
    device.queue.writeBuffer(xBuffer, 0, data.x);
    const x = ort.Tensor.fromGpuBuffer(xBuffer, { dataType: "float32", dims: benchCase.x });

    const runOnce = async () => {
      const start = performance.now();
      const out = await session.run({ x });
      await device.queue.onSubmittedWorkDone();
      return { ms: performance.now() - start, y: out.y };
    };
    // JSEP's timestamps arrive in a callback after the run's query buffer maps: wait for them to settle.
    const settledGpuMs = async () => {
      let seen = -1;
      for (let i = 0; i < 200 && (gpuRecords.length === 0 || gpuRecords.length !== seen); i++) {
        seen = gpuRecords.length;
        await new Promise((r) => setTimeout(r, 5));
      }
      const ns = gpuRecords.splice(0).reduce((a, b) => a + b, 0);
      return ns / 1e6;
    };

    const walls = [], gpus = [];
    let last = null;
    if (ep === "jsep") {
      for (let i = 0; i < warmup + runs; i++) {
        const { y } = await runOnce();
        y.dispose();
        const ms = await settledGpuMs();
        if (i >= warmup) gpus.push(ms);
      }
      ort.env.webgpu.profiling = { mode: "off" };
    }
    for (let i = 0; i < warmup + runs; i++) {
      const { ms, y } = await runOnce();
      if (i >= warmup) walls.push(ms);
      if (last) last.dispose();
      last = y;
    }
    result.y = await last.getData();
    result.y_shape = Array.from(last.dims);
    last.dispose();
    result.wall_median_ms = median(walls);
    result.wall_min_ms = Math.min(...walls);
    if (gpus.length && gpus.every((ms) => ms > 0)) {
      Object.assign(result, { source: "timestamp-query", gpu_median_ms: median(gpus),
                              median_ms: median(gpus), min_ms: Math.min(...gpus) });
    } else {
      Object.assign(result, { source: "wall", median_ms: result.wall_median_ms, min_ms: result.wall_min_ms });
    }
  } catch (err) {
    result.error = String(err?.message ?? err).split("\n")[0].slice(0, 300);
    result.source = "none";
  } finally {
    if (session) await session.release().catch(() => {});
    if (xBuffer) xBuffer.destroy();
    if (ort?.env?.webgpu) ort.env.webgpu.profiling = { mode: "off" };
  }
  return result;
}
