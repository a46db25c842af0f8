// Our kernel and onnxruntime-web side by side on one bench case, in one page (or Node process), on the
// same GPU, with the same data, in alternating runs (`python -m app bench --against ort`).
//
// Each implementation is timed three ways per round, rounds alternating between implementations:
//   e2e:      a CPU Float32Array x in, y back in a new CPU typed array (w and b constant, already on the GPU,
//             as ORT holds a model's initializers: ours as {data, constant: true}, written once);
//   e2e_into: the same, y read into one array each side reuses call after call (ours `{into}`; ORT's the best
//             its API allows, ort-bench.mjs e2eInto: y preallocated on the GPU, read back by the app);
//   resident: x already in a GPUBuffer, y left in a GPUBuffer, wall time to queue.onSubmittedWorkDone;
//             for ours also `host_ms`, the time until kernel() returns (the caller's thread is free then);
//   gpu:      the sum of the compute passes' timestamps (timestamp-query) of a resident run.
// Medians of `runs` rounds after `warmup`. Our y is checked against the float64 reference (Python), each
// ORT build's y against ours.
import { callPython, getKernel } from "../runtime/index.mjs";
import { KERNEL_ID } from "../runtime/contract.mjs";
import { convTransposeModel } from "./onnx-convtranspose.mjs";
import { caseInputs, maxDiff, median, ortModel, sameBits } from "./ort-bench.mjs";

const now = () => performance.now();

// One kernel object for every case a page or process compares, as an app holds one for all its layers: each
// case's constant weights join its weight cache (web/runtime/weight-cache.mjs) beside the earlier cases'. Without
// adaptation: every round and mode times the planner's choice, and their y's are compared bit for bit
// (adaptation is measured on its own: tools/adapt_bench.mjs).
const OPTIONS = { version: 1, adapt: false };
let shared = null;
const sharedKernel = () => (shared ??= getKernel(KERNEL_ID, OPTIONS));

async function ours(benchCase, data, kernel) {
  const attrs = benchCase.attributes ?? {};
  const bShape = data.b ? [data.b.length] : null;
  const cpu = { x: { data: data.x, shape: benchCase.x }, w: { data: data.w, shape: benchCase.w, constant: true },
                ...(data.b ? { b: { data: data.b, shape: bShape, constant: true } } : {}), ...attrs };
  // a second layer of the same signature (the same weights in reverse order): called in turn with the first,
  // each must keep its own uploaded and prepared weights
  const twin = { ...cpu, w: { data: data.w.slice().reverse(), shape: benchCase.w, constant: true },
                 ...(data.b ? { b: { data: data.b.slice().reverse(), shape: bShape, constant: true } } : {}) };
  const gpu = { x: kernel.upload({ data: data.x, shape: benchCase.x }), w: kernel.upload({ data: data.w, shape: benchCase.w }),
                ...(data.b ? { b: kernel.upload({ data: data.b, shape: bShape }) } : {}), ...attrs };
  const device = kernel.gpuDevice();
  let host = null, meta = null, profile = null, into = null;
  return {
    name: "ours",
    async e2e() { profile = {}; const out = await kernel(cpu, { profile }); meta = out.meta; return out.y.data; },
    /** e2e into the array the first such call returned (its pages touched then), call after call. */
    async e2eInto() { into = (await kernel(cpu, { into })).y.data; return into; },
    lastProfile: () => profile,
    async resident() {
      const start = now();
      const { y } = await kernel(gpu, { output: "gpu" });
      host = now() - start;
      await device.queue.onSubmittedWorkDone();
      y.dispose();  // back to the kernel's pool, as ORT's tensor.dispose() returns its buffer to ORT's
    },
    lastHost: () => host,
    async gpu() { const { y, meta: m } = await kernel(gpu, { output: "gpu", timing: true }); y.dispose(); return m.gpu_ms; },
    /** End to end, the layer and its twin called in turn: ms per layer. */
    async inTurn() { const start = now(); await kernel(cpu); await kernel(twin); return (now() - start) / 2; },
    weightBytesWritten: () => kernel.memory().weight_bytes_written,
    meta: () => meta,
    kernel, cpuInputs: cpu, gpuInputs: gpu,
    close() { for (const n of ["x", "w", "b"]) if (gpu[n]) { kernel.forget(gpu[n]); gpu[n].buffer.destroy(); } },
  };
}

async function onnxruntime(ep, benchCase, data) {
  const model = convTransposeModel({ x: benchCase.x, w: benchCase.w, bias: !!benchCase.bias,
                                     attributes: benchCase.attributes ?? {}, w_data: data.w, b_data: data.b ?? null });
  const session = await ortModel(ep, model, { input: "x", output: "y", dims: benchCase.x, data: data.x });
  return { ...session, name: `ort-${ep}` };
}

/** One bench case: {case, ours: {...}, ort: {webgpu: {...} | {error}, jsep: ...}}, times in ms (medians). */
export async function compareCase(benchCase, { runs = 10, warmup = 2, eps = ["webgpu", "jsep"] } = {}) {
  const data = await caseInputs(benchCase);
  const impls = [await ours(benchCase, data, await sharedKernel())];
  const result = { case: benchCase.name, tier: benchCase.tier, ort: {} };
  for (const ep of eps) {
    try {
      impls.push(await onnxruntime(ep, benchCase, data));
    } catch (err) {
      result.ort[ep] = { error: String(err?.message ?? err).split("\n")[0].slice(0, 300) };
    }
  }
  const samples = new Map(impls.map((impl) => [impl, { e2e: [], into: [], resident: [], gpu: [], host: [], stages: [], inTurn: [] }]));
  const lastE2e = new Map(), lastInto = new Map();
  let weightBytes = null;
  let ourY = null;
  try {
    for (const impl of [...impls]) {  // first calls (planning, compiling, session warm-up), and the checks
      if (impl.name === "ours") {
        const y = ourY = await impl.e2e();
        result.ours = { max_abs_diff_reference: await callPython("bench_error", benchCase, new Uint8Array(y.buffer, y.byteOffset, y.byteLength)) };
        continue;
      }
      try {
        result.ort[impl.name.slice(4)] = { max_abs_diff_ours: maxDiff(await impl.e2e(), ourY) };
      } catch (err) {  // ORT refuses some cases only when it runs them (3D ConvTranspose)
        result.ort[impl.name.slice(4)] = { error: String(err?.message ?? err).split("\n")[0].slice(0, 300) };
        impls.splice(impls.indexOf(impl), 1);
        await impl.close();
      }
    }
    for (let round = 0; round < warmup + runs; round++) {
      if (round === warmup) weightBytes = impls[0].weightBytesWritten();
      for (const impl of impls) {
        const s = samples.get(impl);
        let start = now();
        lastE2e.set(impl, await impl.e2e());
        const e2e = now() - start;
        start = now();
        lastInto.set(impl, await impl.e2eInto());
        const into = now() - start;
        start = now();
        await impl.resident();
        const resident = now() - start;
        const gpu = await impl.gpu();
        const inTurn = impl.inTurn ? await impl.inTurn() : null;
        if (round >= warmup) {
          s.e2e.push(e2e); s.into.push(into); s.resident.push(resident); s.gpu.push(gpu); s.inTurn.push(inTurn);
          if (impl.lastHost) s.host.push(impl.lastHost());
          if (impl.lastProfile) s.stages.push(stages(impl.lastProfile()));
        }
      }
    }
  } finally {
    for (const impl of impls) await impl.close();
  }
  for (const impl of impls) {
    const s = samples.get(impl);
    // e2e_into times the same calls as e2e with y read elsewhere: the same bits, or it timed something else
    const row = { e2e_ms: median(s.e2e), e2e_into_ms: median(s.into), resident_ms: median(s.resident), gpu_ms: median(s.gpu),
                  into_same_as_e2e: lastInto.has(impl) ? sameBits(lastInto.get(impl), lastE2e.get(impl)) : null };
    if (impl.name === "ours") {
      Object.assign(result.ours, row, { host_ms: median(s.host), variant: impl.meta()?.variant, e2e_samples_ms: s.e2e,
        // two same-signature layers in turn, and the weight bytes the timed rounds wrote (0: both stay cached)
        in_turn_e2e_ms: median(s.inTurn), weight_bytes_written_in_rounds: impl.weightBytesWritten() - weightBytes,
        e2e_stages_ms: Object.fromEntries(Object.keys(s.stages[0] ?? {}).filter((k) => k !== "python")
          .map((k) => [k, median(s.stages.map((r) => r[k]))])) });
    }
    else Object.assign(result.ort[impl.name.slice(4)], row);
  }
  return result;
}

const STAGES = [["checked", "validate inputs + signature"], ["planned", "launch lookup (or Python: plan, render, compile)"],
  ["upload", "upload (writeBuffer)"], ["submit", "bind, encode, submit"], ["mapped", "GPU + wait for readback"],
  ["done", "copy y out"]];

function stages(profile) {
  const out = {};
  let last = profile.start;
  for (const [mark, name] of STAGES) {
    if (profile[mark] === undefined) continue;
    out[name] = profile[mark] - last;
    last = profile[mark];
  }
  out.total = last - profile.start;
  if (profile.python) out.python = profile.python;
  return out;
}

/** Where a call's time goes: a first call (new signature) and the medians of repeat calls, with CPU data
 * in and out, and with GPU-resident tensors (host stages only: the GPU runs on after kernel() returns). */
export async function breakdownCase(benchCase, { runs = 20 } = {}) {
  const data = await caseInputs(benchCase);
  // a kernel of its own: its first call is the signature's first
  const impl = await ours(benchCase, data, await getKernel(KERNEL_ID, OPTIONS));
  try {
    const first = {};
    await impl.kernel(impl.cpuInputs, { profile: first });
    const modes = { repeat_cpu: [impl.cpuInputs, "cpu"], repeat_resident: [impl.gpuInputs, "gpu"] };
    const out = { case: benchCase.name, first_call: stages(first) };
    for (const [mode, [inputs, output]] of Object.entries(modes)) {
      const rows = [];
      for (let i = 0; i < runs + 2; i++) {
        const profile = {};
        const { y } = await impl.kernel(inputs, { output, profile });
        if (output === "gpu") { await impl.kernel.gpuDevice().queue.onSubmittedWorkDone(); y.dispose(); }
        if (i >= 2) rows.push(stages(profile));
      }
      out[mode] = Object.fromEntries(Object.keys(rows[0]).filter((k) => k !== "python").map((k) => [k, median(rows.map((r) => r[k]))]));
    }
    return out;
  } finally {
    impl.close();
  }
}
