// onnxruntime-web on one bench case, timed in this page the way our kernel is timed (bench --against ort).
//
//   import { benchOrt } from "/web/views/ort-bench.mjs";
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
//   (preferredOutputLocation "gpu-buffer"); `warmup` untimed runs, then `runs` timed ones. Per run:
//   - wall: performance.now() around session.run() + device.queue.onSubmittedWorkDone();
//   - gpu: the sum over the run's compute passes of (end - begin) timestamps, as our kernel's GPU time is
//     taken (app/gpu.py). Where ORT's device has timestamp-query (the native EP asks for it), while ORT runs
//     GPUCommandEncoder.prototype.beginComputePass is wrapped to add timestampWrites into a query set of
//     ours, resolved after the run. The JSEP build asks for Chromium's timestamp-inside-passes feature
//     instead when offered (SwiftShader does), which cannot carry pass timestamps: there, ORT's own profiling
//     (env.webgpu.profiling "default" mode, per-kernel timestamps) times separate runs, because it makes
//     JSEP submit one pass at a time and would distort the wall time.
// ortModel(ep, modelBytes, {input, output, dims, dtype, data}): any model (a one-node or chain model cut
//   from a user's file by app/onnx_model.py) as one session, timed the way compare.mjs times ORT: e2e() with a
//   CPU tensor in and y read back (getData(): a new array), e2eInto() the same with y read into an array the
//   app reuses, resident() with x in a GPUBuffer and y left on the GPU, gpu() by pass timestamps (null
//   without timestamp-query); close() releases the session.
//   e2eInto is the best onnxruntime-web 1.30 offers an app that reuses its output array: y written into a GPU
//   buffer the app preallocated (a "gpu-buffer" tensor in run's fetches), copied into the app's own readback
//   buffer (one command, one submission after the run) and from there into the reused array. A preallocated
//   CPU tensor in fetches is no way to it: ORT copies the tensor into wasm memory before the run, runs into
//   that copy and hands back the caller's tensor untouched (wasm-core-impl run, "output tensor is
//   pre-allocated. no need to copy data"), so y never reaches the caller's array (docs/models.md).
// Returns {impl, ep, median_ms, min_ms, source: "timestamp-query" | "wall", wall_median_ms, wall_min_ms,
//   gpu_median_ms?, passes?, y?: Float32Array (read back once, after timing), y_shape?, error?: string}.
//   median_ms/min_ms are the GPU numbers where source is "timestamp-query", else the wall numbers.

import { convTransposeModel } from "./onnx-convtranspose.mjs";

const BUILDS = { webgpu: "ort.webgpu.min.mjs", jsep: "ort.min.mjs" };
const loaded = {};
// Where onnxruntime-web's dist/ is: the app server's /ort/ route; the Node host points it at node_modules.
let ortBase = new URL("../../ort/", import.meta.url).href;
export function setOrtBase(url) { ortBase = url; }
// GPUBufferUsage and GPUMapMode bits (WebGPU constants; GPUBufferUsage is absent in some hosts).
const MAP_READ = 0x1, COPY_SRC = 0x4, COPY_DST = 0x8, STORAGE = 0x80, QUERY_RESOLVE = 0x200;

export function loadOrt(ep) {
  if (!(ep in BUILDS)) throw new Error(`unknown ep ${JSON.stringify(ep)}; known: ${Object.keys(BUILDS)}`);
  loaded[ep] ??= import(`${ortBase}${BUILDS[ep]}`).then(async (ort) => {
    ort.env.wasm.numThreads = 1;  // no worker threads: the page timing its own GPU work stays one thread
    ort.env.wasm.proxy = false;
    ort.env.logLevel = "error";
    if (globalThis.process?.versions?.node) {
      // Node with Dawn: ORT takes the adapter it is given (it cannot ask a browser for one)
      ort.env.wasm.wasmPaths = ortBase;
      ort.env.webgpu.adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
    }
    return ort;
  });
  return loaded[ep];
}

/** The case's seeded data, drawn by the app's own Python (app.bench.make_inputs), as Float32Arrays. */
export async function caseInputs(benchCase) {
  const { callPython } = await import("../runtime/index.mjs");
  const bytes = await callPython("bench_inputs", benchCase);
  return Object.fromEntries(Object.entries(bytes).map(([k, v]) => [k, new Float32Array(v.slice().buffer)]));
}

/** Wraps beginComputePass (between start() and stop()) to timestamp every compute pass ORT encodes. */
export function passTimer(device, capacity = 4096) {
  if (!device.features.has("timestamp-query")) return null;
  const querySet = device.createQuerySet({ type: "timestamp", count: capacity });
  const resolve = device.createBuffer({ size: 8 * capacity, usage: QUERY_RESOLVE | COPY_SRC });
  const proto = GPUCommandEncoder.prototype;
  const original = proto.beginComputePass;
  let used = 0, overflow = false;
  return {
    start() {
      used = 0; overflow = false;
      proto.beginComputePass = function (descriptor) {
        if (descriptor?.timestampWrites) return original.call(this, descriptor);
        if (used + 2 > capacity) { overflow = true; return original.call(this, descriptor); }
        const timestampWrites = { querySet, beginningOfPassWriteIndex: used, endOfPassWriteIndex: used + 1 };
        used += 2;
        return original.call(this, { ...(descriptor ?? {}), timestampWrites });
      };
    },
    stop() { proto.beginComputePass = original; },
    /** GPU ms of the passes since start() (call once the work is done), and how many passes ran. */
    async read() {
      if (used === 0 || overflow) return { ms: null, passes: used / 2 };
      const read = device.createBuffer({ size: 8 * used, usage: MAP_READ | COPY_DST });
      const encoder = device.createCommandEncoder();
      encoder.resolveQuerySet(querySet, 0, used, resolve, 0);
      encoder.copyBufferToBuffer(resolve, 0, read, 0, 8 * used);
      device.queue.submit([encoder.finish()]);
      await read.mapAsync(MAP_READ);
      const ticks = new BigUint64Array(read.getMappedRange());
      let ns = 0n;
      for (let i = 0; i < used; i += 2) ns += ticks[i + 1] - ticks[i];
      read.destroy();
      return { ms: Number(ns) / 1e6, passes: used / 2 };
    },
    destroy() { proto.beginComputePass = original; querySet.destroy(); resolve.destroy(); },
  };
}

/** The median of the non-null samples (null for none): every time the comparisons report. */
export const median = (xs) => { const s = xs.filter((v) => v != null).sort((a, b) => a - b); const m = s.length >> 1;
  return s.length === 0 ? null : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

/** The largest |a - b| over two equal-length arrays (numbers or bigints), null where they differ in length or a NaN. */
export function maxDiff(a, b) {
  if (!a || !b || a.length !== b.length) return null;
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(Number(a[i]) - Number(b[i])));
  return Number.isNaN(d) ? null : d;
}

/** Whether two typed arrays hold the same bytes: e2e-into's y against e2e's (the same calls, y read elsewhere). */
export function sameBits(a, b) {
  const u = (t) => new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
  const [p, q] = [u(a), u(b)];
  return p.length === q.length && p.every((v, i) => v === q[i]);
}

/** ORT's error in one line: the kernel's own "Status Message" where the wasm layer wraps it. */
export function ortMessage(err) {
  const text = String(err?.message ?? err).split("\n")[0];
  const status = text.match(/Status Message: (.*)$/);
  return (status ? status[1] : text).slice(0, 300);
}

/** One session of `bytes` on the WebGPU EP, its input `input` fed `data` (dims, dtype), output `output`. */
export async function ortModel(ep, bytes, { input, output, dims, dtype = "float32", data }) {
  const ort = await loadOrt(ep);
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ["webgpu"], preferredOutputLocation: "gpu-buffer",
    extra: { session: { disable_cpu_ep_fallback: "1" } },
  });
  const device = await ort.env.webgpu.device;
  const size = Math.max(4, Math.ceil(data.byteLength / 4) * 4);  // writeBuffer takes whole words
  const xBuffer = device.createBuffer({ size, usage: STORAGE | COPY_SRC | COPY_DST });
  const words = new Uint8Array(size);
  words.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  device.queue.writeBuffer(xBuffer, 0, words);
  const xGpu = ort.Tensor.fromGpuBuffer(xBuffer, { dataType: dtype, dims });
  const timer = passTimer(device);
  const run = async (x) => {
    const out = (await session.run({ [input]: x }))[output];
    await device.queue.onSubmittedWorkDone();
    out.dispose();
  };
  // e2eInto's buffers and array, sized by one untimed run (ORT refuses some models only when it runs them:
  // that refusal comes here, before any timing)
  let yDims;
  try {
    const probe = (await session.run({ [input]: xGpu }))[output];
    yDims = Array.from(probe.dims);
    probe.dispose();
  } catch (err) {
    timer?.destroy(); xBuffer.destroy(); await session.release().catch(() => {});
    throw err;
  }
  const yCount = yDims.reduce((a, d) => a * d, 1);
  const yBytes = Math.max(4, Math.ceil((yCount * (dtype === "float16" ? 2 : 4)) / 4) * 4);
  const yBuffer = device.createBuffer({ size: yBytes, usage: STORAGE | COPY_SRC | COPY_DST });
  const yGpu = ort.Tensor.fromGpuBuffer(yBuffer, { dataType: dtype, dims: yDims });
  const yRead = device.createBuffer({ size: yBytes, usage: MAP_READ | COPY_DST });
  const into = new (dtype === "float16" ? Uint16Array : Float32Array)(yCount);
  return {
    name: `onnxruntime-web ${ort.env.versions?.web ?? ""} ${ep}`.replace("  ", " "), ep,
    async e2e() {
      const out = (await session.run({ [input]: new ort.Tensor(dtype, data, dims) }))[output];
      const y = await out.getData();
      out.dispose();
      return y;
    },
    async e2eInto() {
      await session.run({ [input]: new ort.Tensor(dtype, data, dims) }, { [output]: yGpu });
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(yBuffer, 0, yRead, 0, yBytes);
      device.queue.submit([encoder.finish()]);
      await yRead.mapAsync(MAP_READ);
      into.set(new into.constructor(yRead.getMappedRange(), 0, yCount));
      yRead.unmap();
      return into;
    },
    resident: () => run(xGpu),
    async gpu() {
      if (!timer) return null;
      timer.start();
      try {
        await run(xGpu);
      } finally {
        timer.stop();
      }
      return (await timer.read()).ms;
    },
    async close() { timer?.destroy(); xBuffer.destroy(); yBuffer.destroy(); yRead.destroy(); await session.release().catch(() => {}); },
  };
}

/** Total ms of the profiling records of one run: they arrive once the run's query buffer maps. */
async function settled(records) {
  let seen = -1;
  for (let i = 0; i < 200 && (records.length === 0 || records.length !== seen); i++) {
    seen = records.length;
    await new Promise((r) => setTimeout(r, 5));
  }
  return records.splice(0).reduce((a, b) => a + b, 0) / 1e6;
}

/** Times onnxruntime-web on one bench case (see the module header). Never throws for ORT's refusals. */
export async function benchOrt(benchCase, { runs = 5, warmup = 1, ep = "webgpu", inputs = null } = {}) {
  let ort, session, xBuffer, timer;
  const result = { impl: `onnxruntime-web ${ep}`, ep };
  try {
    ort = await loadOrt(ep);
    result.impl = `onnxruntime-web ${ort.env.versions?.web ?? ""} ${ep}`.replace("  ", " ");
    if ((benchCase.dtype ?? "float32") !== "float32") throw new Error(`dtype ${benchCase.dtype} is not benchmarked against ORT`);
    const data = inputs ?? await caseInputs(benchCase);
    const profiled = [];  // JSEP's per-kernel timestamps (ns), from its profiling callback
    ort.env.webgpu.profiling = ep === "jsep"
      ? { mode: "default", ondata: (record) => profiled.push(record.endTime - record.startTime) }
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
    timer = passTimer(device);

    const walls = [], gpus = [];
    let last = null;
    if (!timer && ep === "jsep") {
      // JSEP takes Chromium's timestamp-inside-passes feature instead of timestamp-query when offered, so
      // its passes cannot carry ours: its own profiling times them (extra runs: profiling submits pass by
      // pass, which would distort the wall time).
      for (let i = 0; i < warmup + runs; i++) {
        const out = await session.run({ x });
        await device.queue.onSubmittedWorkDone();
        out.y.dispose();
        const ms = await settled(profiled);
        if (i >= warmup) gpus.push(ms);
      }
    }
    ort.env.webgpu.profiling = { mode: "off" };  // read at each run's start: the timed runs are unprofiled
    for (let i = 0; i < warmup + runs; i++) {
      timer?.start();
      const start = performance.now();
      let out;
      try {
        out = await session.run({ x });
        await device.queue.onSubmittedWorkDone();
      } finally {
        timer?.stop();
      }
      const wall = performance.now() - start;
      if (i >= warmup) walls.push(wall);
      if (timer) {
        const gpu = await timer.read();
        if (i >= warmup) { gpus.push(gpu.ms); result.passes = gpu.passes; }
      }
      if (last) last.dispose();
      last = out.y;
    }
    result.y = await last.getData();
    result.y_shape = Array.from(last.dims);
    last.dispose();
    result.wall_median_ms = median(walls);
    result.wall_min_ms = Math.min(...walls);
    if (gpus.length && gpus.every((ms) => ms !== null && ms > 0)) {
      Object.assign(result, { source: "timestamp-query", gpu_median_ms: median(gpus),
                              median_ms: median(gpus), min_ms: Math.min(...gpus) });
    } else {
      Object.assign(result, { source: "wall", median_ms: result.wall_median_ms, min_ms: result.wall_min_ms });
    }
  } catch (err) {
    result.error = String(err?.message ?? err).split("\n")[0].slice(0, 300);
    result.source = "none";
  } finally {
    timer?.destroy();
    if (session) await session.release().catch(() => {});
    if (xBuffer) xBuffer.destroy();
  }
  return result;
}
