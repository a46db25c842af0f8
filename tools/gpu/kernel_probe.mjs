// Times a launch written by tools/gpu/kernel_probe.py on this GPU: its main passes as rendered, then with
// parts cut out (ablations), so that the differences say where the time goes. Results are not checked.
// Usage (GPU machine, after `bash tools/gpu/run.sh device`): $NODE tools/gpu/kernel_probe.mjs probe.json...
import { readFileSync } from "node:fs";
import { openDevice, timer } from "./probe_gpu.mjs";

const { gpu, device } = await openDevice(["maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX", "maxStorageBufferBindingSize", "maxBufferSize"]);
const measure = timer(device);

// [name, pattern, replacement]: applied to every main pass's source.
const ABLATIONS = [
  ["as rendered", null, ""],
  ["A loads from one address", /x\[select\(0, xo(\d+) \+ c \* p\.in_size, ok\)\]/g, "x[select(0, 0, ok)]"],
  ["no A loads", /x\[select\(0, xo(\d+) \+ c \* p\.in_size, ok\)\]/g, "T(f32(c))"],
  ["no B loads", /wp\[select\(0, \(w_step \+ k\) \* p\.m4 \+ m4, ok\)\]/g, "vec4<T>(T(f32(k)))"],
  ["no A, B loads", [/x\[select\(0, xo(\d+) \+ c \* p\.in_size, ok\)\]/g, /wp\[select\(0, \(w_step \+ k\) \* p\.m4 \+ m4, ok\)\]/g],
    ["T(f32(c))", "vec4<T>(T(f32(k)))"]],
  ["no multiplies", /subgroupMatrixMultiplyAccumulate\((\w+), (\w+), (\w+)\)/g, "$3"],
  ["no loop barrier", /workgroupBarrier\(\);\n  \}\n/, "\n  }\n"],
  ["no y stores", /if \(col < m_left\) \{\n(\s+)y\[/g, "if (col < m_left && res_s[own + e] == 1234.5) {\n$1y["],
  ["no write-out barriers", /let m_base[^]*$/, (tail) => tail.replace(/workgroupBarrier\(\);/g, "")],
  ["no multiplies, A, B loads", [/subgroupMatrixMultiplyAccumulate\((\w+), (\w+), (\w+)\)/g,
    /x\[select\(0, xo(\d+) \+ c \* p\.in_size, ok\)\]/g, /wp\[select\(0, \(w_step \+ k\) \* p\.m4 \+ m4, ok\)\]/g],
    ["$3", "T(f32(c))", "vec4<T>(T(f32(k)))"]],
];
// phase_gemm_sgmat's vector-staged kernel (-sgmat-vs): A gathered per element, from x as vectors (va) or from
// the channels-last copy (cl); B as vectors of wp; the step's two barriers; y's stores (kept, never taken).
const VS_A = [/x\[select\(0, xo\d \+ c \* p\.in_size, ok\d\)\]/g, /x\[select\(0, va_x \+ c \* \(p\.in_size \/ 8\), ok\)\]/g,
  /xc\[select\(0, at, ok\)\]/g];
const VS_A_OFF = ["T(f32(c))", "vec4<u32>(u32(c))", "vec4<u32>(u32(c0))"];
const VS_B = /wp\[select\(0, \(w_step \+ k\) \* w_row \+ b_col, ok\)\]/g;
ABLATIONS.push(["vs: no A loads", VS_A, VS_A_OFF], ["vs: no B loads", VS_B, "vec4<u32>(u32(k))"],
  ["vs: no A, B loads", [...VS_A, VS_B], [...VS_A_OFF, "vec4<u32>(u32(k))"]],
  ["vs: no step barriers", [/    workgroupBarrier\(\);  \/\/ every subgroup is done with step q - 1's matrices\n/,
    /    workgroupBarrier\(\);\n    if \(q \+ 1 < chunks\)/], ["", "    if (q + 1 < chunks)"]],
  ["vs: no y stores", /if \((e_ok\d*) && col < m_left\) \{/g, "if ($1 && col < m_left && p.tiles < 0) {"]);
// The grouped stride-phase kernel: its window loads and its tap loads.
ABLATIONS.push(["no x loads", /(xs|xq)(\d+) = (f32\()?x\[xc \+ xo\d+\]\)?/g, "$1$2 = $1$2"], ["no w loads", /wt\[wc( \+ \d+)?\]/g, "vec4<f32>(f32(wc))"]);
// The float32 vector kernel (-vec4): its FMAs, and with them the workgroup-memory reads that only they use.
ABLATIONS.push(["f32: no multiplies", /fma\(vec4<f32>\(a\d+\[\d\]\), b\d+, (acc\d+_\d+)\)/g, "$1"],
  ["f32: no y stores", /if \((col\d+_\d+) < m_left\) \{/g, "if ($1 < m_left && p.tiles < 0) {"]);
// GEMM + col2im with the vector column GEMM (col2im_gemm_vec4): the GEMM alone (the fold returns at once), the fold
// alone (every GEMM workgroup returns at once), the GEMM without its column stores.
ABLATIONS.push(["cols: GEMM only", /if \(index >= p\.(y_size|cell_count|fold_size)\) \{/, "if (index >= 0) {"],
  ["cols: fold only", /if \(tile >= p\.tiles\) \{/, "if (tile >= 0) {"],
  ["cols: no column stores", /if \((col_tile \* \d+ \+ tx \+ \d+ < p\.pixels4)\) \{/g, "if ($1 && p.tiles < 0) {"]);
// The phase GEMMs' workgroups in another order of phases: PHASE_ORDERS="3,1,0,2;3,2,1,0" (each a permutation of
// the launch's phases: the workgroups of phase i take phase order[i]'s tiles).
for (const order of (process.env.PHASE_ORDERS || "").split(";").filter(Boolean)) {
  const ids = order.split(",").map(Number);
  ABLATIONS.push([`phases in order ${order}`, /var phase = rest % p\.phases;/,
    `var phase_order = array<i32, ${ids.length}>(${ids.join(", ")});\n  var phase = phase_order[rest % p.phases];`]);
}
// Split-K by one budget of steps for every phase (PROBE_MAX_TAPS: the deepest phase's taps), not each phase's own
// share: the splits of shallower phases then reduce the same steps as the deepest's, or none.
if (process.env.PROBE_MAX_TAPS) {
  ABLATIONS.push(["splits of the deepest phase's share", /let per = \(total \+ p\.splits - 1\) \/ p\.splits;/,
    `let per = (${Number(process.env.PROBE_MAX_TAPS)} * p.c_chunks + p.splits - 1) / p.splits;`]);
}
// Every phase as deep as two taps (a launch whose phases differ in taps, made even: is its time the deepest's?).
ABLATIONS.push(["every phase 2 taps deep", /let chunks = taps \* p\.c_chunks;/, "let chunks = 2 * p.c_chunks;"]);
// Per-step cost and the fixed rest: the reduction loop cut to none and to half of its steps.
ABLATIONS.push(["no reduction steps", /let chunks = taps \* p\.c_chunks;/, "let chunks = 0;"],
  ["half the reduction steps", /let chunks = taps \* p\.c_chunks;/, "let chunks = taps * p.c_chunks / 2;"]);
const BUSY_MS = 150;  // untimed work before each timed run: an idle H200 drops to a third of its clocks

function buffer(size) {
  const buf = device.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const words = new Uint32Array(buf.size / 4);
  // Small finite values whether read as f16 pairs or f32: 0x3c00 is f16 1.0, 0x3c003c00 is f32 ~0.0078.
  for (let i = 0; i < words.length; i++) words[i] = 0x3c003c00 ^ ((i * 2654435761) & 0x03ff03ff);
  device.queue.writeBuffer(buf, 0, words);
  return buf;
}

function encodePasses(enc, steps, querySet) {
  steps.forEach(({ pipeline, bind, workgroups }, n) => {
    const writes = querySet ? { querySet, ...(n === 0 ? { beginningOfPassWriteIndex: 0 } : {}),
      ...(n === steps.length - 1 ? { endOfPassWriteIndex: 1 } : {}) } : undefined;
    const p = enc.beginComputePass(writes ? { timestampWrites: writes } : {});
    p.setPipeline(pipeline); p.setBindGroup(0, bind); p.dispatchWorkgroups(...workgroups); p.end();
  });
}

function time(steps, spins) {
  return measure((enc, querySet) => {
    for (let r = 0; r < spins; r++) encodePasses(enc, steps, null);  // untimed: the GPU at its working clocks
    encodePasses(enc, steps, querySet);
  });
}

async function steps(passes, buffers, rewrite) {
  const out = [];
  for (const pass of passes) {
    const module = device.createShaderModule({ code: rewrite(pass.code) });
    const info = await module.getCompilationInfo();
    const error = info.messages.find((m) => m.type === "error");
    if (error) throw new Error(error.message);
    const pipeline = await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } });
    const uniforms = device.createBuffer({ size: Math.max(16, pass.uniforms.length * 4), usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(uniforms, 0, new Int32Array([...pass.uniforms, 0, 0, 0].slice(0, Math.max(4, pass.uniforms.length))));
    const names = [...pass.bindings, "__uniforms"];
    const layout = pipeline.getBindGroupLayout(0);
    // "auto" layouts drop bindings the (ablated) shader no longer reads: bind what is left.
    const entries = [];
    for (let i = 0; i < names.length; i++) {
      entries.push({ binding: i, resource: { buffer: names[i] === "__uniforms" ? uniforms : buffers[names[i]] } });
    }
    let bind;
    for (let keep = entries; ; ) {
      device.pushErrorScope("validation");
      bind = device.createBindGroup({ layout, entries: keep });
      const err = await device.popErrorScope();
      if (!err) break;
      const m = /binding index (\d+) not present/.exec(err.message);
      if (!m) throw new Error(err.message);
      keep = keep.filter((e) => e.binding !== Number(m[1]));
    }
    out.push({ pipeline, bind, workgroups: pass.workgroups });
  }
  return out;
}

// PROBE_ONLY="as rendered,no reduction steps" limits the ablations to those labels ("|"-separated where one
// holds a comma: "as rendered|no A, B loads").
const only = process.env.PROBE_ONLY
  ? new Set(process.env.PROBE_ONLY.split(process.env.PROBE_ONLY.includes("|") ? "|" : ",")) : null;
for (const file of process.argv.slice(2)) {
  const probe = JSON.parse(readFileSync(file, "utf8"));
  const buffers = Object.fromEntries(Object.entries(probe.sizes).map(([k, v]) => [k, buffer(v)]));
  const weight = await steps(probe.passes.slice(0, probe.weight_passes), buffers, (c) => c);
  await time(weight, 0);
  const main = probe.passes.slice(probe.weight_passes);
  console.log(`== ${file} ${JSON.stringify(probe.tiles)}`);
  for (const [label, pattern, replacement] of ABLATIONS) {
    if (only && !only.has(label)) continue;
    const patterns = Array.isArray(pattern) ? pattern : [pattern];
    const replacements = Array.isArray(replacement) ? replacement : [replacement];
    const rewrite = (code) => patterns.reduce((c, p, i) => (p ? c.replace(p, replacements[i]) : c), code);
    if (pattern && main.every((p) => rewrite(p.code) === p.code)) continue;
    try {
      const s = await steps(main, buffers, rewrite);
      const ms = [];
      const spins = Math.min(2000, Math.ceil(BUSY_MS / Math.max(0.005, await time(s, 0))));
      for (let r = 0; r < 7; r++) ms.push(await time(s, spins));
      ms.sort((a, b) => a - b);
      console.log(`  ${label.padEnd(26)} ${ms[3].toFixed(4)} ms  ${(probe.flop / ms[3] / 1e9).toFixed(1)} TFLOP/s  ${(probe.bytes / ms[3] / 1e9).toFixed(2)} TB/s of x, w, y`);
    } catch (e) {
      console.log(`  ${label.padEnd(26)} failed: ${String(e.message).split("\n")[0]}`);
    }
  }
}
process.exit(0);
