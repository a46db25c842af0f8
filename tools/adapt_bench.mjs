// Adaptation as a user meets it: each bench case's layer called CALLS times through getKernel (the JS path, y
// read back, seeded data), on this machine's adapter. Prints one JSON line per case: the first pick, what the
// trial chose and after how many calls, its candidates, its cost; the first line is the adapter ({device}), the last
// the calibration the trials measured, as a kernel opened next plans with it ({calibration}: kernel.calibration()).
// tools/choice_report.py reads them beside the `bench --variants all` run of the same cases (`--calibration`: a
// run's last line, applied to the planner's first-call choice).
//   node tools/adapt_bench.mjs KERNEL_DIR BENCH.json TIER DTYPE [CASES=a,b] [CALLS=20] [GAP_MS=0] [BUSY_MS=0]
// in Node on Dawn (KERNEL_DIR: `python -m app export` of this tree); in headless Chromium, adaptRows runs in the
// app's page (tools/adapt_browser.py). GAP_MS: a pause between calls, as an app's frame loop leaves (Python plans
// the candidates in the gaps; without them it plans while the calls wait on the GPU). BUSY_MS: untimed GPU work of
// about that long queued right before each call, as a model's other layers keep the GPU at its working clocks
// (the regime the bench and cuDNN are timed in: app/timing.py BUSY_MS); 0 leaves the GPU idle between calls.

const count = (shape) => shape.reduce((a, b) => a * b, 1);
const view = new DataView(new ArrayBuffer(4));
function halfBits(f) {  // round toward zero, tiny values to 0: seeded bench data, not arithmetic under test
  view.setFloat32(0, f);
  const x = view.getUint32(0), sign = (x >>> 16) & 0x8000, e = ((x >>> 23) & 0xff) - 112;
  return e <= 0 ? sign : sign | (e << 10) | ((x & 0x7fffff) >>> 13);
}

// filled in place: Uint16Array.from(floats, halfBits) first listed every value in a JS array (V8 does so for a
// mapped typed array), 38 bytes each on the heap: fresh25's float16 w (134M values) ran it out at 2.4 GB
function seeded(shape, seed, dtype) {
  const values = new (dtype === "float16" ? Uint16Array : Float32Array)(count(shape));
  for (let i = 0; i < values.length; i++) {
    const v = Math.fround(Math.sin(seed + i * 0.618) * 0.5);
    values[i] = dtype === "float16" ? halfBits(v) : v;
  }
  return values;
}

/** A bench case's call in `dtype`: seeded x, w and b (w and b constant, as a model's initializers), its attributes. */
export function seededRequest(c, dtype) {
  const request = { x: { data: seeded(c.x, 1, dtype), shape: c.x, dtype },
                    w: { data: seeded(c.w, 2, dtype), shape: c.w, dtype, constant: true }, ...c.attributes };
  const channels = c.w[1] * (c.attributes.group ?? 1);
  if (c.bias) request.b = { data: seeded([channels], 3, dtype), shape: [channels], dtype, constant: true };
  return request;
}

/** One row per case of `cases` (bench.json's format), each through one kernel of `getKernel`; emit(row). */
export async function adaptRows(getKernel, cases, { tier, dtype, calls = 20, gap = 0, busy = null, emit }) {
  const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, planStore: false });
  await kernel.ready;
  emit({ device: await kernel.device() });
  for (const c of cases) {
    const request = seededRequest(c, dtype);
    const before = kernel.adaptations().length;
    const variants = [];
    let error = null;
    try {
      for (let i = 0; i < calls; i++) {
        busy?.();
        variants.push((await kernel(request)).meta.variant);
        if (gap) await new Promise((r) => setTimeout(r, gap));
      }
    } catch (err) {
      error = String(err?.message ?? err).split("\n")[0];
    }
    const trial = kernel.adaptations().slice(before)[0] ?? null;
    emit({ tier, case: c.name, dtype, calls: variants.length, last: variants.at(-1) ?? null, trial, error });
  }
  await kernel.idle();  // a trial settled by the last call has recorded its samples
  const next = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, planStore: false });
  emit({ calibration: await next.calibration() });
}

/** A function that queues about `ms` of untimed work on `device` (every SM busy with a chain of FMAs), sized by
 * timing it here. */
export async function busyWork(device, ms) {
  const code = `@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<uniform> n: u32;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) id: vec3u) {
  var a = f32(id.x) * 1e-6;
  for (var i = 0u; i < n; i++) { a = fma(a, 1.0001, 1e-7); }
  out[id.x] = a;
}`;
  const groups = 1024;
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module: device.createShaderModule({ code }) } });
  const out = device.createBuffer({ size: groups * 256 * 4, usage: GPUBufferUsage.STORAGE });
  const loops = device.createBuffer({ size: 4, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: out } }, { binding: 1, resource: { buffer: loops } }] });
  const submit = (n) => {
    device.queue.writeBuffer(loops, 0, new Uint32Array([n]));
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline); pass.setBindGroup(0, group); pass.dispatchWorkgroups(groups); pass.end();
    device.queue.submit([encoder.finish()]);
  };
  let n = 1 << 12, took = 0;
  for (let i = 0; i < 4 && took < ms / 2; i++) {  // grows the loop until one run takes a good share of `ms`
    const start = performance.now();
    submit(n);
    await device.queue.onSubmittedWorkDone();
    took = performance.now() - start;
    if (took < ms / 2) n = Math.min(1 << 30, Math.ceil(n * Math.min(64, ms / Math.max(took, 0.01))));
  }
  n = Math.max(1, Math.round(n * ms / took));
  return () => submit(n);
}

if (typeof process !== "undefined" && process.argv[1]?.endsWith("adapt_bench.mjs")) {
  const [kernelDir, benchPath, tier, dtype, only = "", calls = "20", gap = "0", busyMs = "0"] = process.argv.slice(2);
  const { readFileSync } = await import("node:fs");
  const { pathToFileURL } = await import("node:url");
  await useDawn();
  const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
  const keep = only ? new Set(only.split(",")) : null;
  const cases = JSON.parse(readFileSync(benchPath, "utf8")).cases.filter((c) => c.tier === tier && (!keep || keep.has(c.name)));
  let busy = null;
  if (Number(busyMs) > 0) {  // on the kernel's own device and queue: the work runs before the call's, no gap between
    const { sharedDevice } = await import(pathToFileURL(`${kernelDir}/web/runtime/device.mjs`).href);
    const opened = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, planStore: false })
      .then((k) => k.ready).then(() => sharedDevice().promise);
    busy = await busyWork(opened.device, Number(busyMs));
  }
  await adaptRows(m.getKernel, cases, { tier, dtype, calls: Number(calls), gap: Number(gap), busy,
                                        emit: (row) => console.log(JSON.stringify(row)) });
  process.exit(0);
}

/** navigator.gpu from npm webgpu (Dawn), as the Node host opens it (web/views/dawn-gpu.mjs). (After the Node part:
 * the page's copy of this module, tools/adapt_browser.py, leaves it out.) */
export async function useDawn() {
  const { dawnGpu } = await import("../web/views/dawn-gpu.mjs");
  globalThis.navigator = { gpu: dawnGpu() };
}
