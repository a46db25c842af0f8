// One layer's forced variants timed per call through getKernel in three regimes: 20 ms of unrelated FMA work before
// each call (the trial's), the same call run untimed 3 times before (its data warm in L2), idle 2 ms apart.
//   node regime.mjs KERNEL BENCH TIER DTYPE CASE VARIANT[,VARIANT...]
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [kernelDir, benchPath, tier, dtype, name, variants] = process.argv.slice(2);
const { create, globals } = await import("webgpu");
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create(["enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia",
  "disable-dawn-features=timestamp_quantization"]) };
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const { busyWork } = await import(pathToFileURL(`${process.cwd()}/tools/adapt_bench.mjs`).href);
const { sharedDevice } = await import(pathToFileURL(`${kernelDir}/web/runtime/device.mjs`).href);
const c = JSON.parse(readFileSync(benchPath, "utf8")).cases.find((x) => x.tier === tier && x.name === name);
const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, planStore: false, adapt: false });
await kernel.ready;
const device = (await sharedDevice().promise).device;
const busy = await busyWork(device, 20);
const count = (s) => s.reduce((a, b) => a * b, 1);
const view = new DataView(new ArrayBuffer(4));
const half = (f) => { view.setFloat32(0, f); const x = view.getUint32(0), s = (x >>> 16) & 0x8000, e = ((x >>> 23) & 0xff) - 112;
  return e <= 0 ? s : s | (e << 10) | ((x & 0x7fffff) >>> 13); };
const data = (shape, seed) => { const v = new (dtype === "float16" ? Uint16Array : Float32Array)(count(shape));
  for (let i = 0; i < v.length; i++) { const f = Math.fround(Math.sin(seed + i * 0.618) * 0.5); v[i] = dtype === "float16" ? half(f) : f; } return v; };
const base = { x: { data: data(c.x, 1), shape: c.x, dtype }, w: { data: data(c.w, 2), shape: c.w, dtype, constant: true }, ...c.attributes };
if (c.bias) { const ch = c.w[1] * (c.attributes.group ?? 1); base.b = { data: data([ch], 3), shape: [ch], dtype, constant: true }; }
const med = (a) => { const s = [...a].sort((p, q) => p - q); return s[s.length >> 1]; };
for (const variant of variants.split(",")) {
  const request = { ...base, variant };
  const out = {};
  for (const mode of ["busy", "same", "idle", "busy"]) {
    const t = [];
    for (let i = 0; i < 12; i++) {
      if (mode === "busy") busy();
      if (mode === "same") for (let j = 0; j < 3; j++) await kernel(request);
      const r = await kernel(request, { timing: true });
      t.push(r.meta.gpu_ms);
      if (mode === "idle") await new Promise((res) => setTimeout(res, 2));
    }
    out[mode in out ? mode + "2" : mode] = med(t.slice(2));
  }
  console.log(JSON.stringify({ case: name, dtype, variant, ...out }));
}
process.exit(0);
