// A model's ConvTranspose layers on our kernel, each beside onnxruntime-web when asked, in one page or Node
// process (`python -m app model`, and the Benchmarks view's drop zone).
//
//   runModel({model, x, runs, warmup, against, settleS})
//
// model: a one-node model or a chain model cut by app/onnx_model.py (ConvTranspose nodes only, each feeding
// the next); ours runs it as one call per node, every intermediate left on the GPU and fed to the next call.
// Where the model is: {path} (Node: a file), {url} (the page: fetched) or {bytes}; x: base64 of the input's
// bytes (the model's input dtype, float16 as bits). Our weights are the model's, marked constant, as ORT holds its
// initializers. Timing as compare.mjs does it (bench --against ort), medians of `runs` alternating rounds
// after `warmup`: e2e (CPU x in, y back on the CPU in a new array), e2e_into (the same, y read into one array
// each side reuses round after round, as an app running its decoder in a loop does: ours `{into}`, ORT's
// ort-bench.mjs e2eInto), resident (x in a GPUBuffer, y left on the GPU, wall time to onSubmittedWorkDone)
// and gpu (the compute passes' timestamps). Without `against`, ours alone. With `settleS` (Node), the warm-up
// rounds are followed by a wait of up to that many seconds for the process's background threads to go idle.
// Returns {layers (node names), dtype, y (base64), y_shape, variants (one per node), settle_ms, settle_end_cores,
//          cpu_cores_in_rounds (Node: the process's CPU time over the timed rounds' wall time), ours: {e2e_ms, e2e_into_ms, resident_ms, gpu_ms, host_ms, into_same_as_e2e},
//          ort?: {webgpu: {e2e_ms, ..., max_abs_diff_ours, into_same_as_e2e} | {error}, jsep: ...}}.
import { getKernel } from "../runtime/index.mjs";
import { KERNEL_ID } from "../runtime/contract.mjs";
import { modelNodes, readModel } from "./onnx-convtranspose.mjs";
import { maxDiff, median, ortMessage, ortModel, sameBits } from "./ort-bench.mjs";

const EPS = ["webgpu", "jsep"];
const REWARM_MS = 500;
const now = () => performance.now();
const TYPED = { float32: Float32Array, float16: Uint16Array };

async function modelBytes(model) {
  if (model.bytes) return model.bytes;
  if (model.path) return new Uint8Array(await (await import("node:fs/promises")).readFile(model.path));
  const response = await fetch(model.url);
  if (!response.ok) throw new Error(`${model.url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

export function toBase64(bytes) {
  const u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (globalThis.Buffer) return globalThis.Buffer.from(u8).toString("base64");
  let s = "";
  for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(text, dtype) {
  const raw = globalThis.Buffer ? Uint8Array.from(globalThis.Buffer.from(text, "base64"))
    : Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return new TYPED[dtype](raw.buffer);
}

/** The layers of a chain (or the one layer) as our kernel's requests: constant weights, the node's attributes. */
export function requests(nodes, dtype) {
  return nodes.map((n) => ({
    w: { data: n.w, shape: n.w_shape, dtype, constant: true },
    ...(n.b ? { b: { data: n.b, shape: [n.b.length], dtype, constant: true } } : {}),
    ...n.attributes,
  }));
}

/** Ours on a chain of layers (one or more): each output but the last left on the GPU and fed to the next. */
export async function ours(layers, xShape, xData, dtype) {
  // without adaptation: the modes' y's are compared bit for bit, and each times the planner's choice
  const kernel = await getKernel(KERNEL_ID, { version: 1, adapt: false });
  const device = kernel.gpuDevice();
  const xGpu = kernel.upload({ data: xData, shape: xShape, dtype });
  let host = null, variants = [], marks = [], into = null;
  async function run(x, output, timing = false, last = null) {
    let t = x, gpuMs = 0;
    marks = [];
    for (const [i, layer] of layers.entries()) {
      const profile = {};
      const end = i === layers.length - 1;
      const { y, meta } = await kernel({ ...layer, x: t }, { output: end ? output : "gpu", timing, profile, into: end ? last : null });
      marks.push({ ...profile, end: now() });
      if (i > 0) t.dispose();  // the intermediate's reader is queued: the buffer can go back to the pool
      t = y;
      variants[i] = meta.variant;
      gpuMs = timing && meta.gpu_ms != null && gpuMs != null ? gpuMs + meta.gpu_ms : null;
    }
    return { y: t, gpuMs };
  }
  return {
    name: "ours",
    async e2e() { return (await run({ data: xData, shape: xShape, dtype }, "cpu")).y; },  // {data, shape}
    /** e2e with y read into the array the first call returned (its pages touched then), call after call. */
    async e2eInto() {
      const { y } = await run({ data: xData, shape: xShape, dtype }, "cpu", false, into);
      into = y.data;
      return y.data;
    },
    async resident() {
      const start = now();
      const { y } = await run(xGpu, "gpu");
      host = now() - start;
      await device.queue.onSubmittedWorkDone();
      y.dispose();
    },
    lastHost: () => host,
    async gpu() { const { y, gpuMs } = await run(xGpu, "gpu", true); y.dispose(); return gpuMs; },
    /** Resident runs back to back for about `ms`, the GPU never idle: its clocks up again after a quiet spell. */
    async busy(ms) {
      const end = now() + ms;
      while (now() < end) (await run(xGpu, "gpu")).y.dispose();
      await device.queue.onSubmittedWorkDone();
    },
    variants: () => variants,
    /** Each layer's stage marks (performance.now()) of the last run, and the kernel's counters. */
    marks: () => marks,
    memory: () => kernel.memory(),
    close() { xGpu.buffer.destroy(); },
  };
}

/** Where an end-to-end run's last call spent its time: ms from the run's start to that call's start, its
 * submission, y mapped and y copied out (the earlier calls leave their outputs on the GPU and do not wait). */
function lastCallStages(marks, start) {
  const m = marks[marks.length - 1];
  return Object.fromEntries(["start", "submit", "mapped", "done", "end"].filter((k) => m[k] !== undefined)
    .map((k) => [k, m[k] - start]));
}


const asFloat = (y, dtype) => (dtype === "float16" ? null : y);  // ORT's float16 output is compared in Python

/** The process's CPU time (every thread's) since the meter was made, in cores busy over the wall time: Node only (null in a
 *  page). Above 1 while the timed rounds run, other threads (V8 compiling onnxruntime-web's wasm in the
 *  background, for a minute and more after its sessions start) share the machine with both sides' calls. */
const cpuMeter = () => {
  if (!globalThis.process?.cpuUsage) return () => null;
  const u0 = process.cpuUsage(), t0 = now();
  return () => { const u = process.cpuUsage(u0); return (u.user + u.system) / 1000 / (now() - t0); };
};

/** Waits, up to `maxS` seconds, until this process is quiet (under `idle` cores over a quarter second with
 *  the main thread asleep), so that no side's timed rounds run beside background compiles. Node only. */
async function settle(maxS, idle = 0.2) {
  const start = now();
  let cores = null;
  while (maxS > 0 && globalThis.process?.cpuUsage) {
    const meter = cpuMeter();
    await new Promise((r) => setTimeout(r, 250));
    cores = meter();
    if (cores < idle || now() - start > maxS * 1000) break;
  }
  return { settle_ms: +(now() - start).toFixed(1), settle_end_cores: cores && +cores.toFixed(2) };
}

/** Ours (and ORT's builds, with `against`) on one model in alternating rounds; see the module header. */
export async function runModel({ model, x, runs = 5, warmup = 1, against = false, eps = EPS, settleS = 0 }) {
  const bytes = await modelBytes(model);
  const cut = modelNodes(readModel(bytes));
  const xData = fromBase64(x, cut.dtype);
  const impl = await ours(requests(cut.nodes, cut.dtype), cut.x_shape, xData, cut.dtype);
  const impls = [impl];
  const result = { layers: cut.nodes.map((n) => n.name), dtype: cut.dtype };
  if (against) {
    result.ort = {};
    for (const ep of eps) {
      try {
        impls.push(await ortModel(ep, bytes, { input: cut.input, output: cut.output, dims: cut.x_shape, dtype: cut.dtype, data: xData }));
      } catch (err) {
        result.ort[ep] = { error: ortMessage(err) };
      }
    }
  }
  const samples = new Map(impls.map((i) => [i, { e2e: [], into: [], resident: [], gpu: [], host: [], stages: [] }]));
  const last = new Map(), lastInto = new Map();
  const refused = new Set();  // ORT builds that failed a run (3D ConvTranspose fails at run, not at creation)
  let meter = null;
  try {
    for (let round = 0; round < warmup + runs; round++) {
      if (round === warmup) {
        Object.assign(result, await settle(settleS));
        // An idle second and more drops an H200 to idle clocks, and the rounds alone (mostly host time) do
        // not raise them: after a 35 s wait both sides' GPU times were 4x on the H200.
        if (result.settle_ms > 1000) await impl.busy(REWARM_MS);
        meter = cpuMeter();
      }
      for (const it of impls) {
        if (refused.has(it)) continue;
        const s = samples.get(it);
        try {
          let start = now();
          last.set(it, await it.e2e());
          const e2e = now() - start;
          const stages = it.marks ? lastCallStages(it.marks(), start) : null;
          start = now();
          lastInto.set(it, await it.e2eInto());
          const into = now() - start;
          start = now();
          await it.resident();
          const resident = now() - start;
          const gpu = await it.gpu();
          if (round >= warmup) {
            s.e2e.push(e2e); s.into.push(into); s.resident.push(resident); s.gpu.push(gpu);
            if (it.lastHost) s.host.push(it.lastHost());
            if (stages) s.stages.push(stages);
          }
        } catch (err) {
          if (it === impl) throw err;
          refused.add(it);
          result.ort[it.ep] = { error: ortMessage(err) };
        }
      }
    }
  } finally {
    for (const it of impls) await it.close();
  }
  const cores = meter?.();
  result.cpu_cores_in_rounds = cores == null ? null : +cores.toFixed(2);
  const y = last.get(impl);  // ours: {data, shape}; ORT's: its typed array
  result.y = toBase64(y.data);
  result.y_shape = y.shape;
  result.variants = impl.variants();
  for (const it of impls.filter((i) => !refused.has(i))) {
    const s = samples.get(it);
    const row = { e2e_ms: median(s.e2e), e2e_into_ms: median(s.into), resident_ms: median(s.resident), gpu_ms: median(s.gpu) };
    if (it === impl) {
      // the same calls as e2e but for where y lands: the same bits, or into is broken
      result.ours = { ...row, host_ms: median(s.host), into_same_as_e2e: sameBits(lastInto.get(impl), y.data),
        e2e_last_call_ms: Object.fromEntries(Object.keys(s.stages[0] ?? {}).map((k) => [k, median(s.stages.map((r) => r[k]))])) };
    }
    else {
      result.ort[it.ep] = { ...row, impl: it.name, max_abs_diff_ours: maxDiff(asFloat(last.get(it), cut.dtype), asFloat(y.data, cut.dtype)),
        into_same_as_e2e: sameBits(lastInto.get(it), last.get(it)) };
    }
  }
  return result;
}
