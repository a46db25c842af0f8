// Where a subgroup-matrix GEMM step's time goes on this GPU: throughput of bare multiply-accumulates, of
// multiplies fed from workgroup memory, with a barrier per step, and fed straight from a storage buffer.
// Usage (GPU machine, after `bash tools/gpu/run.sh device`): $NODE tools/gpu/mma_probe.mjs
import { openDevice, timer } from "./probe_gpu.mjs";

const { gpu, device } = await openDevice(["maxComputeWorkgroupStorageSize"]);
const measure = timer(device);

const SUBGROUPS = 4;
const ITER = 256;
const WORKGROUPS = 132 * 8;

// a: "k_row" stages A as [k][row] (a col_major left matrix), "row_k" as [row][k] (row_major); b: "k_col" stages
// B as [k][col] (row_major right matrix), "col_k" as [col][k] (col_major); pad widens every stride (halves).
function shader({ cm, cn, kb, feed, barrier, comp = "f16", a = "k_row", b = "k_col", pad = 0 }) {
  const acc = [];
  for (let i = 0; i < cm; i++) for (let j = 0; j < cn; j++) acc.push([i, j]);
  const tm = 2 * cm * 16, tn = 2 * cn * 16, tks = kb * 16;
  const aStride = (a === "k_row" ? tm : tks) + pad, bStride = (b === "k_col" ? tn : tks) + pad;
  const aSize = (a === "k_row" ? tks : tm) * aStride, bSize = (b === "k_col" ? tks : tn) * bStride;
  const aOff = (k, i) => (a === "k_row" ? k * 16 * aStride + i * 16 : i * 16 * aStride + k * 16);
  const bOff = (k, j) => (b === "k_col" ? k * 16 * bStride + j * 16 : j * 16 * bStride + k * 16);
  let body = "";
  for (let k = 0; k < kb; k++) {
    for (let i = 0; i < cm; i++) {
      const src = feed === "storage"
        ? `&xs, base + ${k * 16 * tm + i * 16}u + it * ${tks * tm}u, ${tm}u`
        : `&a_s, abuf + ${aOff(k, i)}u, ${aStride}u`;
      const layout = feed === "storage" || a === "k_row" ? "col_major" : "row_major";
      body += `    let a${k}_${i} = subgroupMatrixLoad<subgroup_matrix_left<C, 16, 16>, ${layout}>(${src});\n`;
    }
    for (let j = 0; j < cn; j++) {
      const src = feed === "storage"
        ? `&ws, wbase + ${k * 16 * tn + j * 16}u + it * ${tks * tn}u, ${tn}u`
        : `&b_s, bbuf + ${bOff(k, j)}u, ${bStride}u`;
      const layout = feed === "storage" || b === "k_col" ? "row_major" : "col_major";
      body += `    let b${k}_${j} = subgroupMatrixLoad<subgroup_matrix_right<C, 16, 16>, ${layout}>(${src});\n`;
    }
    for (const [i, j] of acc) body += `    acc${i}_${j} = subgroupMatrixMultiplyAccumulate(a${k}_${i}, b${k}_${j}, acc${i}_${j});\n`;
  }
  const sgA = a === "k_row" ? cm * 16 : cm * 16 * aStride, sgB = b === "k_col" ? cn * 16 : cn * 16 * bStride;
  return `
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
alias C = ${comp};
@group(0) @binding(0) var<storage, read> xs: array<C>;
@group(0) @binding(1) var<storage, read> ws: array<C>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
var<workgroup> a_s: array<C, ${2 * aSize}>;
var<workgroup> b_s: array<C, ${2 * bSize}>;
@compute @workgroup_size(${SUBGROUPS * 32})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_id) sg: u32) {
  for (var e = lid; e < ${2 * aSize}u; e += ${SUBGROUPS * 32}u) { a_s[e] = C(f32(e % 7u) * 0.01); }
  for (var e = lid; e < ${2 * bSize}u; e += ${SUBGROUPS * 32}u) { b_s[e] = C(f32(e % 5u) * 0.01); }
  workgroupBarrier();
  let sgm = sg % 2u;
  let sgn = sg / 2u;
  let base = (wid.x % 8u) * ${ITER * tks * tm}u + sgm * ${cm * 16}u;
  let wbase = (wid.x % 8u) * ${ITER * tks * tn}u + sgn * ${cn * 16}u;
${acc.map(([i, j]) => `  var acc${i}_${j} = subgroup_matrix_result<f32, 16, 16>();`).join("\n")}
  for (var it = 0u; it < ${ITER}u; it += 1u) {
    let abuf = (it % 2u) * ${aSize}u + sgm * ${sgA}u;
    let bbuf = (it % 2u) * ${bSize}u + sgn * ${sgB}u;
${body}${barrier ? "    workgroupBarrier();\n" : ""}  }
  let o = (wid.x * ${SUBGROUPS}u + sg) * ${cm * cn * 256}u;
${acc.map(([i, j], n) => `  subgroupMatrixStore<col_major>(&out, o + ${n * 256}u, acc${i}_${j}, 16u);`).join("\n")}
}`;
}

const bytesX = 8 * ITER * 64 * 256 * 2;  // enough for the largest storage-fed case (kb 4, tm 256)
const xs = device.createBuffer({ size: bytesX, usage: GPUBufferUsage.STORAGE });
const ws = device.createBuffer({ size: bytesX, usage: GPUBufferUsage.STORAGE });
const out = device.createBuffer({ size: WORKGROUPS * SUBGROUPS * 16 * 256 * 4, usage: GPUBufferUsage.STORAGE });
// Explicit: a probe that never reads xs or ws still binds them.
const groupLayout = device.createBindGroupLayout({ entries: [
  { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } },
  { binding: 1, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } },
  { binding: 2, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } }] });
const layout = device.createPipelineLayout({ bindGroupLayouts: [groupLayout] });
function time(pipeline, bind, reps) {
  return measure((enc, querySet) => {
    for (let r = 0; r <= reps; r++) {  // reps untimed (the GPU at its working clocks), then the timed one
      const timed = r === reps ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {};
      const p = enc.beginComputePass(timed);
      p.setPipeline(pipeline); p.setBindGroup(0, bind); p.dispatchWorkgroups(WORKGROUPS); p.end();
    }
  });
}

const cases = [];
for (const [cm, cn] of [[2, 2], [4, 4]])
  for (const [a, b] of [["k_row", "k_col"], ["row_k", "col_k"], ["row_k", "k_col"], ["k_row", "col_k"]])
    for (const pad of [0, 8])
      cases.push({ cm, cn, kb: 2, feed: "shared", barrier: true, a, b, pad });
cases.push({ cm: 4, cn: 4, kb: 2, feed: "shared", barrier: false, a: "row_k", b: "col_k", pad: 8 });
cases.push({ cm: 4, cn: 4, kb: 2, feed: "none", barrier: true });
cases.push({ cm: 2, cn: 2, kb: 2, feed: "none", barrier: true });
for (const c of cases) {
  let code = shader(c);
  if (c.feed === "none") code = code.replace(/it % 2u/g, "0u");  // the same operands every step: loads hoisted
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === "error");
  if (errors.length) { console.log(JSON.stringify(c), "compile error", errors[0].message); continue; }
  const pipeline = device.createComputePipeline({ layout, compute: { module, entryPoint: "main" } });
  const bind = device.createBindGroup({ layout: groupLayout, entries: [
    { binding: 0, resource: { buffer: xs } }, { binding: 1, resource: { buffer: ws } }, { binding: 2, resource: { buffer: out } }] });
  const ms = [];
  for (let r = 0; r < 5; r++) ms.push(await time(pipeline, bind, 30));
  ms.sort((a, b) => a - b);
  const med = ms[2];
  const flops = WORKGROUPS * SUBGROUPS * ITER * c.kb * c.cm * c.cn * 2 * 16 * 16 * 16;
  console.log(JSON.stringify(c), `median ${med.toFixed(4)} ms`, `${(flops / med / 1e9).toFixed(1)} TFLOP/s`);
}
process.exit(0);
