// The ceiling of a plain GEMM, C[M,N] = A[M,K] B[K,N] (row-major, f32 C), written in WGSL and run through
// Dawn and Vulkan: f16 inputs on subgroup matrices (16x16x16, f32 results) and f32 on plain FMAs (SIMT).
// Every kernel comes from one of two generators below; each configuration is checked against a CPU
// reference on a small size (exact: inputs are multiples of 1/8) before it is timed on the large ones.
// Timing: timestamps around single dispatches, after untimed ones that keep the GPU busy for WARM_MS (an
// idle H200 runs at a third of its clocks), median of RUNS; TFLOP/s = 2 M N K / t.
// Usage (GPU machine, with the Vulkan loader, node and Dawn unpacked as tools/gpu/run.sh does):
//   $NODE tools/gpu/gemm_ceiling.mjs
//   CEILING_ONLY=name,name   only these configurations     CEILING_SIZES=4096,8192,skinny   sizes to time (or check)
//   CEILING_TOGGLES=a,b      extra Dawn toggles (e.g. disable_robustness) CEILING_JSON=file   results as JSON
//   CEILING_FROM=file CEILING_TOP=n   only the n fastest configurations per size and kind of an earlier JSON
//   CEILING_ELEM=f16         f16 kernels whose matrices load through f16 arrays only
//   PROBE_NULL=1             Dawn's null backend: every shader compiles and validates, times are garbage
// cofs ("switch" or "nest"): every matrix load's offset a constant, so that Tint's robustness does not wrap
// each load in a bounds check (it skips the check only where array length, offset and stride are all
// constants). "switch": the multiplies written once per subgroup under a switch on the subgroup id;
// "nest": workgroup memory split into one inner array per subgroup row (A) or column (B), passed as
// &as_[sgm] (an index clamp, not a predicate) with constant offsets inside it.
import { readFileSync, writeFileSync } from "node:fs";
import { ENABLED, dawnGpu } from "../../web/views/dawn-gpu.mjs";

// Dawn's promises alone do not keep Node's event loop alive: a long wait on the GPU would end the process.
setInterval(() => {}, 1000);

const WARM_MS = 200;
const RUNS = 9;
const DEADLINE_S = Number(process.env.CEILING_DEADLINE_S || 420);  // stop timing (not checking) past this
const SUBGROUP = 32;  // the H200's; the generators lay out workgroups in whole subgroups of this size
const SIZES = {
  4096: [4096, 4096, 4096], 8192: [8192, 8192, 8192],
  skinny: [65536, 256, 4608],  // conv-like: a 256x256-pixel batch of rows, 256 out-channels, 512 ch x 3x3 taps
};
const CHECK = [256, 512, 384];  // M, N, K of the correctness check: non-square, several K steps
SIZES.check = CHECK;  // timed only on request (a local run on SwiftShader)
// CEILING_SIZES also takes MxNxK or MxNxK/kz: a size of one's own, f32 split across kz workgroups along K (c holds
// kz partial M x N results, not summed: the split's second pass is left out; f16 kernels are not split).
const sizeOf = (name) => {
  const m = /^(\d+)x(\d+)x(\d+)(?:\/(\d+))?$/.exec(name);
  return SIZES[name] ?? (m ? [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4] ?? 1)] : null);
};
const CHECK_KZ = 2;  // f32 kernels are checked split in two, their partial results summed

// ---------------------------------------------------------------------------------------------------------
// f16 on subgroup matrices. A workgroup of wm x wn subgroups computes a bm x bn tile (bm = wm*cm*16,
// bn = wn*cn*16); each subgroup owns cm x cn 16x16 result matrices and reuses every left matrix across its
// cn right ones and every right one across its cm left ones. Per operand, `stage` picks:
//   staged: tiles of bk reduction columns copied to workgroup memory (16-byte global loads into registers
//           one step ahead, stored into the other half of a double buffer: one barrier per step; rows padded
//           by 16 bytes so that a matrix load's rows fall in different banks);
//   direct: each subgroup loads its matrices straight from the storage buffer, one step ahead into
//           registers (no workgroup memory, no barrier; reuse across subgroups comes from L1/L2).
// elem: the array element through which matrices are loaded: "vec4u" (vec4<u32>, 8 halves: offsets and
// strides count 16-byte vectors, staging is a 16-byte store) or "f16" (scalars: staging stores 8 halves).
// group: workgroups are numbered in groups of `group` tile rows (L2 reuse of B), 0 = row by row.
function sgmatShader(c) {
  const { wm, wn, cm, cn, bk, stageA, stageB, elem, cvec, single, unroll2, cofs } = c;
  if (cofs && !(single && stageA && stageB && elem === "vec4u")) throw new Error("cofs needs one staged vec4u buffer");
  const nest = cofs === "nest";
  const buffers = single ? 1 : 2;
  const bm = wm * cm * 16, bn = wn * cn * 16, kb = bk / 16, threads = wm * wn * SUBGROUP;
  const v = elem === "vec4u";  // matrix loads through vec4<u32>
  const E = v ? "vec4<u32>" : "f16", per = v ? 8 : 1;  // halves per element
  // Workgroup strides in elements: A as [row][k], B as [k][col], each row 16 bytes longer than the tile.
  const sa = (bk + 8) / per, sb = nest ? (cn * 16 + 8) / per : (bn + 8) / per;
  const aSize = bm * sa, bSize = bk * sb * (nest ? wn : 1);
  const L = [];
  L.push("enable f16;", "enable subgroups;", "enable chromium_experimental_subgroup_matrix;",
    "diagnostic(off, chromium.subgroup_matrix_uniformity);",
    "struct P { m: u32, n: u32, k: u32, group: u32 }",
    "@group(0) @binding(0) var<uniform> p: P;");
  // Staging reads A and B as 16-byte vectors whatever elem is; direct matrix loads need elem's type.
  const aType = stageA ? "vec4<u32>" : E, bType = stageB ? "vec4<u32>" : E;
  L.push(`@group(0) @binding(1) var<storage, read> a: array<${aType}>;`,
    `@group(0) @binding(2) var<storage, read> b: array<${bType}>;`,
    `@group(0) @binding(3) var<storage, read_write> c: array<${cvec ? "vec4<f32>" : "f32"}>;`);
  if (nest) L.push(`var<workgroup> as_: array<array<${E}, ${aSize / wm}>, ${wm}>;`, `var<workgroup> bs_: array<array<${E}, ${bSize / wn}>, ${wn}>;`);
  else {
    if (stageA) L.push(`var<workgroup> as_: array<${E}, ${buffers * aSize}>;`);
    if (stageB) L.push(`var<workgroup> bs_: array<${E}, ${buffers * bSize}>;`);
  }
  L.push(`@compute @workgroup_size(${threads})`,
    "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,",
    "        @builtin(subgroup_id) sg: u32) {");
  tileOrigin(L, bm, bn);
  L.push(`  let sgm = sg % ${wm}u;`, `  let sgn = sg / ${wm}u;`,
    `  let k8 = p.k / 8u;`, `  let n8 = p.n / 8u;`, `  let steps = p.k / ${bk}u;`);
  const LT = `subgroup_matrix_left<f16, 16, 16>`, RT = `subgroup_matrix_right<f16, 16, 16>`;
  for (let i = 0; i < cm; i++) for (let j = 0; j < cn; j++) L.push(`  var acc${i}_${j} = subgroup_matrix_result<f32, 16, 16>();`);

  // Staging: this invocation's 16-byte vectors of a step's A tile (bm x bk) and B tile (bk x bn).
  const aVecs = bm * bk / 8, bVecs = bk * bn / 8;
  if (stageA && aVecs % threads) throw new Error("A tile not a whole number of vectors per invocation");
  if (stageB && bVecs % threads) throw new Error("B tile not a whole number of vectors per invocation");
  const aPer = stageA ? aVecs / threads : 0, bPer = stageB ? bVecs / threads : 0;
  for (let i = 0; i < aPer; i++) {
    const e = `lid + ${i * threads}u`;
    L.push(`  let ar${i} = (${e}) / ${bk / 8}u;`, `  let ak${i} = (${e}) % ${bk / 8}u;`,
      `  let ag${i} = (m0 + ar${i}) * k8 + ak${i};`, nest
        ? `  let aw${i} = vec2<u32>(ar${i} / ${cm * 16}u, (ar${i} % ${cm * 16}u) * ${sa}u + ak${i});`
        : `  let aw${i} = ar${i} * ${(bk + 8) / 8}u + ak${i};`);
  }
  for (let i = 0; i < bPer; i++) {
    const e = `lid + ${i * threads}u`;
    L.push(`  let br${i} = (${e}) / ${bn / 8}u;`, `  let bc${i} = (${e}) % ${bn / 8}u;`,
      `  let bg${i} = br${i} * n8 + n0 / 8u + bc${i};`, nest
        ? `  let bw${i} = vec2<u32>(bc${i} / ${cn * 2}u, br${i} * ${sb}u + bc${i} % ${cn * 2}u);`
        : `  let bw${i} = br${i} * ${(bn + 8) / 8}u + bc${i};`);
  }
  // A 16-byte vector into workgroup memory at element offset `at` (in 16-byte units when elem is vec4u).
  const put = (arr, at, val) => v ? [`${arr}[${at}] = ${val};`]
    : [0, 1, 2, 3].flatMap((w) => [`{ let h = bitcast<vec2<f16>>(${val}[${w}]);`,
      `  ${arr}[(${at}) * 8u + ${2 * w}u] = h.x; ${arr}[(${at}) * 8u + ${2 * w + 1}u] = h.y; }`]);
  const loadRegs = (q, ind) => {
    for (let i = 0; i < aPer; i++) L.push(`${ind}ra${i} = a[ag${i} + (${q}) * ${bk / 8}u];`);
    for (let i = 0; i < bPer; i++) L.push(`${ind}rb${i} = b[bg${i} + (${q}) * ${bk}u * n8];`);
  };
  const storeRegs = (buf, ind) => {
    if (nest) {
      for (let i = 0; i < aPer; i++) L.push(`${ind}as_[aw${i}.x][aw${i}.y] = ra${i};`);
      for (let i = 0; i < bPer; i++) L.push(`${ind}bs_[bw${i}.x][bw${i}.y] = rb${i};`);
      return;
    }
    // Offsets in 16-byte units: a buffer is aSize (bSize) elements of E.
    for (let i = 0; i < aPer; i++) put("as_", `(${buf}) * ${aSize * per / 8}u + aw${i}`, `ra${i}`).forEach((s) => L.push(ind + s));
    for (let i = 0; i < bPer; i++) put("bs_", `(${buf}) * ${bSize * per / 8}u + bw${i}`, `rb${i}`).forEach((s) => L.push(ind + s));
  };
  // Direct loads: the matrices of reduction step q (k-block kk), offsets in elements of elem.
  const aDirect = (q, kk, i) => `subgroupMatrixLoad<${LT}, row_major>(&a, ((m0 + sgm * ${cm * 16}u + ${i * 16}u) * p.k + (${q}) * ${bk}u + ${kk * 16}u) / ${per}u, p.k / ${per}u)`;
  const bDirect = (q, kk, j) => `subgroupMatrixLoad<${RT}, row_major>(&b, (((${q}) * ${bk}u + ${kk * 16}u) * p.n + n0 + sgn * ${cn * 16}u + ${j * 16}u) / ${per}u, p.n / ${per}u)`;

  for (let i = 0; i < aPer; i++) L.push(`  var ra${i}: vec4<u32>;`);
  for (let i = 0; i < bPer; i++) L.push(`  var rb${i}: vec4<u32>;`);
  for (let kk = 0; kk < kb; kk++) {
    if (!stageA) for (let i = 0; i < cm; i++) L.push(`  var na${kk}_${i} = ${aDirect(0, kk, i)};`);
    if (!stageB) for (let j = 0; j < cn; j++) L.push(`  var nb${kk}_${j} = ${bDirect(0, kk, j)};`);
  }
  const staged = stageA || stageB;
  // Double buffer: step q+1 is stored into the other half while step q is multiplied, one barrier a step.
  // single: one buffer, stored at the top of each step between two barriers (half the memory, bk twice as deep).
  // unroll2: the double buffer's loop unrolled by two, so that every matrix load's buffer offset is a constant.
  if (staged) loadRegs("0u", "  ");
  if (staged && !single) {  // step 0 into buffer 0
    storeRegs("0u", "  ");
    L.push("  workgroupBarrier();");
  }
  const step = (cur, nxt, ind) => {
    L.push(`${ind}let more = q + 1u < steps;`);
    if (staged && single) {
      L.push(`${ind}workgroupBarrier();`);
      storeRegs("0u", ind);
      L.push(`${ind}workgroupBarrier();`);
    }
    for (let kk = 0; kk < kb; kk++) {
      if (!stageA) for (let i = 0; i < cm; i++) L.push(`${ind}let a${kk}_${i} = na${kk}_${i};`);
      if (!stageB) for (let j = 0; j < cn; j++) L.push(`${ind}let b${kk}_${j} = nb${kk}_${j};`);
    }
    L.push(`${ind}if (more) {`);
    if (staged) loadRegs("q + 1u", ind + "  ");
    for (let kk = 0; kk < kb; kk++) {
      if (!stageA) for (let i = 0; i < cm; i++) L.push(`${ind}  na${kk}_${i} = ${aDirect("q + 1u", kk, i)};`);
      if (!stageB) for (let j = 0; j < cn; j++) L.push(`${ind}  nb${kk}_${j} = ${bDirect("q + 1u", kk, j)};`);
    }
    L.push(`${ind}}`);
    if (cofs) {
      // Every offset a literal: under the switch, abuf and bbuf are the case's constants; nested, 0.
      const multiplies = (aArr, abuf, bArr, bbuf, ind2) => {
        for (let kk = 0; kk < kb; kk++) {
          for (let i = 0; i < cm; i++)
            L.push(`${ind2}let a${kk}_${i} = subgroupMatrixLoad<${LT}, row_major>(${aArr}, ${abuf + i * 16 * sa + kk * 2}u, ${sa}u);`);
          for (let j = 0; j < cn; j++)
            L.push(`${ind2}let b${kk}_${j} = subgroupMatrixLoad<${RT}, row_major>(${bArr}, ${bbuf + kk * 16 * sb + j * 2}u, ${sb}u);`);
          for (let i = 0; i < cm; i++) for (let j = 0; j < cn; j++)
            L.push(`${ind2}acc${i}_${j} = subgroupMatrixMultiplyAccumulate(a${kk}_${i}, b${kk}_${j}, acc${i}_${j});`);
        }
      };
      if (nest) multiplies("&as_[sgm]", 0, "&bs_[sgn]", 0, ind);
      else {
        L.push(`${ind}switch sg {`);
        for (let s = 0; s < wm * wn; s++) {
          L.push(`${ind}  case ${s}u: {`);
          multiplies("&as_", (s % wm) * cm * 16 * sa, "&bs_", Math.floor(s / wm) * cn * 2, ind + "    ");
          L.push(`${ind}  }`);
        }
        L.push(`${ind}  default: {}`, `${ind}}`);
      }
      return;
    }
    if (stageA) L.push(`${ind}let abuf = ${cur} * ${aSize}u + sgm * ${cm * 16 * sa}u;`);
    if (stageB) L.push(`${ind}let bbuf = ${cur} * ${bSize}u + sgn * ${cn * 16 / per}u;`);
    for (let kk = 0; kk < kb; kk++) {
      if (stageA) for (let i = 0; i < cm; i++)
        L.push(`${ind}let a${kk}_${i} = subgroupMatrixLoad<${LT}, row_major>(&as_, abuf + ${i * 16 * sa + kk * 16 / per}u, ${sa}u);`);
      if (stageB) for (let j = 0; j < cn; j++)
        L.push(`${ind}let b${kk}_${j} = subgroupMatrixLoad<${RT}, row_major>(&bs_, bbuf + ${kk * 16 * sb + j * 16 / per}u, ${sb}u);`);
      for (let i = 0; i < cm; i++) for (let j = 0; j < cn; j++)
        L.push(`${ind}acc${i}_${j} = subgroupMatrixMultiplyAccumulate(a${kk}_${i}, b${kk}_${j}, acc${i}_${j});`);
    }
    if (staged && !single) {
      L.push(`${ind}if (more) {`);
      storeRegs(nxt, ind + "  ");
      L.push(`${ind}}`, `${ind}workgroupBarrier();`);
    }
  };
  if (unroll2) {
    if (!staged || single) throw new Error("unroll2 unrolls the double buffer");
    L.push("  for (var q0 = 0u; q0 < steps; q0 += 2u) {", "    {", "      let q = q0;");
    step("0u", "1u", "      ");
    L.push("    }", "    {", "      let q = q0 + 1u;");
    step("1u", "0u", "      ");
    L.push("    }", "  }");
  } else {
    L.push("  for (var q = 0u; q < steps; q += 1u) {");
    step(single ? "0u" : "(q % 2u)", "(q + 1u) % 2u", "    ");
    L.push("  }");
  }
  const cDiv = cvec ? 4 : 1;
  for (let i = 0; i < cm; i++) for (let j = 0; j < cn; j++)
    L.push(`  subgroupMatrixStore<row_major>(&c, ((m0 + sgm * ${cm * 16}u + ${i * 16}u) * p.n + n0 + sgn * ${cn * 16}u + ${j * 16}u) / ${cDiv}u, acc${i}_${j}, p.n / ${cDiv}u);`);
  L.push("}");
  return { code: L.join("\n"), bm, bn, bk, kstep: unroll2 ? 2 * bk : bk, threads, wgBytes: buffers * ((stageA ? aSize : 0) + (stageB ? bSize : 0)) * 2 * per };
}

// The tile this workgroup computes: (m0, n0), with tile rows numbered in groups of p.group (every group's
// workgroups share B's columns while they run; p.group = 0: row by row).
function tileOrigin(L, bm, bn) {
  L.push(`  let tiles_n = p.n / ${bn}u;`, `  let tiles_m = p.m / ${bm}u;`, "  var tm = wid.x / tiles_n;", "  var tn = wid.x % tiles_n;",
    "  if (p.group > 0u) {",
    "    let per_group = p.group * tiles_n;",
    "    let first = (wid.x / per_group) * p.group;",
    "    let rows = min(tiles_m - first, p.group);",
    "    tm = first + (wid.x % per_group) % rows;",
    "    tn = (wid.x % per_group) / rows;",
    "  }",
    `  let m0 = tm * ${bm}u;`, `  let n0 = tn * ${bn}u;`);
}

// ---------------------------------------------------------------------------------------------------------
// f32 SIMT: a bm x bn tile per workgroup of (bm/tm) x (bn/tn) invocations, each tm x tn outputs in vec4 rows,
// its rows and columns in runs of 4 strided across the tile (a warp's shared and global vectors contiguous).
// A tile stored transposed in workgroup memory ([k][m]: a vec4 of 4 rows per read), B as [k][n]; 16-byte
// global loads one step ahead into registers, double buffer, one barrier per step.
function simtShader(c) {
  const { bm, bn, tm, tn, bk } = c;
  const tx = bn / tn, ty = bm / tm, threads = tx * ty;
  const aVecs = bm * bk / 4, bVecs = bk * bn / 4;
  if (aVecs % threads || bVecs % threads) throw new Error("tiles not a whole number of vectors per invocation");
  const aPer = aVecs / threads, bPer = bVecs / threads;
  const aSize = bk * bm / 4, bSize = bk * bn / 4;  // vec4s per buffer
  const L = ["struct P { m: u32, n: u32, k: u32, group: u32 }", "@group(0) @binding(0) var<uniform> p: P;",
    "@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;",
    "@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;",
    "@group(0) @binding(3) var<storage, read_write> c: array<vec4<f32>>;",
    `var<workgroup> as_: array<vec4<f32>, ${2 * aSize}>;`, `var<workgroup> bs_: array<vec4<f32>, ${2 * bSize}>;`,
    `@compute @workgroup_size(${threads})`,
    "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,",
    "        @builtin(local_invocation_index) lid: u32) {"];
  tileOrigin(L, bm, bn);
  // Split-K: the dispatch's y is the split; split z reduces its 1/nwg.y of K into the z-th M x N slice of c.
  L.push(`  let tx = lid % ${tx}u;`, `  let ty = lid / ${tx}u;`, "  let k4 = p.k / 4u;", "  let n4 = p.n / 4u;",
    `  let steps = p.k / ${bk}u / nwg.y;`, "  let k0 = wid.y * steps;", "  let c0 = wid.y * p.m * n4;");
  for (let i = 0; i < aPer; i++) {
    const e = `lid + ${i * threads}u`;
    L.push(`  let ar${i} = (${e}) / ${bk / 4}u;`, `  let ak${i} = ((${e}) % ${bk / 4}u) * 4u;`,
      `  let ag${i} = (m0 + ar${i}) * k4 + ak${i} / 4u + k0 * ${bk / 4}u;`, `  var ra${i}: vec4<f32>;`);
  }
  for (let i = 0; i < bPer; i++) {
    const e = `lid + ${i * threads}u`;
    L.push(`  let br${i} = (${e}) / ${bn / 4}u;`, `  let bc${i} = (${e}) % ${bn / 4}u;`,
      `  let bg${i} = (br${i} + k0 * ${bk}u) * n4 + n0 / 4u + bc${i};`, `  let bw${i} = br${i} * ${bn / 4}u + bc${i};`, `  var rb${i}: vec4<f32>;`);
  }
  const load = (q, ind) => {
    for (let i = 0; i < aPer; i++) L.push(`${ind}ra${i} = a[ag${i} + (${q}) * ${bk / 4}u];`);
    for (let i = 0; i < bPer; i++) L.push(`${ind}rb${i} = b[bg${i} + (${q}) * ${bk}u * n4];`);
  };
  const store = (buf, ind) => {
    // A transposed: component r of the vector (k = ak + r) into row k, element m = ar of the [k][m] tile.
    for (let i = 0; i < aPer; i++) for (let r = 0; r < 4; r++)
      L.push(`${ind}as_[(${buf}) * ${aSize}u + (ak${i} + ${r}u) * ${bm / 4}u + ar${i} / 4u][ar${i} % 4u] = ra${i}[${r}];`);
    for (let i = 0; i < bPer; i++) L.push(`${ind}bs_[(${buf}) * ${bSize}u + bw${i}] = rb${i};`);
  };
  for (let i = 0; i < tm; i++) for (let j = 0; j < tn / 4; j++) L.push(`  var acc${i}_${j} = vec4<f32>();`);
  load("0u", "  "); store("0u", "  "); L.push("  workgroupBarrier();");
  L.push("  for (var q = 0u; q < steps; q += 1u) {", "    let more = q + 1u < steps;", "    if (more) {");
  load("q + 1u", "      ");
  L.push("    }", `    let abuf = (q % 2u) * ${aSize}u + ty;`, `    let bbuf = (q % 2u) * ${bSize}u + tx;`);
  for (let k = 0; k < bk; k++) {
    for (let i = 0; i < tm / 4; i++) L.push(`    let a${k}_${i} = as_[abuf + ${k * bm / 4 + i * ty}u];`);
    for (let j = 0; j < tn / 4; j++) L.push(`    let b${k}_${j} = bs_[bbuf + ${k * bn / 4 + j * tx}u];`);
    for (let i = 0; i < tm; i++) for (let j = 0; j < tn / 4; j++)
      L.push(`    acc${i}_${j} = fma(vec4<f32>(a${k}_${i >> 2}[${i & 3}]), b${k}_${j}, acc${i}_${j});`);
  }
  L.push("    if (more) {");
  store("(q + 1u) % 2u", "      ");
  L.push("    }", "    workgroupBarrier();", "  }");
  // Row i of this invocation: run i/4 of 4 rows, strided by ty; column vector j strided by tx.
  for (let i = 0; i < tm; i++) for (let j = 0; j < tn / 4; j++)
    L.push(`  c[c0 + (m0 + (${i >> 2}u * ${ty}u + ty) * 4u + ${i & 3}u) * n4 + n0 / 4u + ${j}u * ${tx}u + tx] = acc${i}_${j};`);
  L.push("}");
  return { code: L.join("\n"), bm, bn, bk, kstep: bk, threads, wgBytes: 2 * 16 * (aSize + bSize) };
}

// ---------------------------------------------------------------------------------------------------------
const F16 = [];
const f16 = (name, o) => F16.push({ name, kind: "f16", group: 8, elem: "vec4u", stageA: true, stageB: true, cvec: false, single: false, unroll2: false, ...o });
// Both operands staged in workgroup memory.
f16("S-2x2sg-4x4acc-k32", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32 });
f16("S-2x2sg-4x4acc-k16", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 16 });
f16("S-2x2sg-2x2acc-k32", { wm: 2, wn: 2, cm: 2, cn: 2, bk: 32 });
f16("S-2x2sg-2x2acc-k64", { wm: 2, wn: 2, cm: 2, cn: 2, bk: 64 });
f16("S-2x2sg-2x4acc-k32", { wm: 2, wn: 2, cm: 2, cn: 4, bk: 32 });
f16("S-2x2sg-4x2acc-k32", { wm: 2, wn: 2, cm: 4, cn: 2, bk: 32 });
f16("S-2x4sg-4x2acc-k32", { wm: 2, wn: 4, cm: 4, cn: 2, bk: 32 });
f16("S-4x2sg-2x4acc-k32", { wm: 4, wn: 2, cm: 2, cn: 4, bk: 32 });
f16("S-2x4sg-2x2acc-k32", { wm: 2, wn: 4, cm: 2, cn: 2, bk: 32 });
f16("S-2x4sg-2x4acc-k32", { wm: 2, wn: 4, cm: 2, cn: 4, bk: 32 });
f16("S-2x4sg-4x4acc-k16", { wm: 2, wn: 4, cm: 4, cn: 4, bk: 16 });
f16("S-4x2sg-4x4acc-k16", { wm: 4, wn: 2, cm: 4, cn: 4, bk: 16 });
f16("S-2x2sg-4x4acc-k32-single", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, single: true });
f16("S-2x2sg-4x4acc-k64-single", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 64, single: true });
// Around the fastest of the first sitting (single, 2 x 2 subgroups of 4 x 4 matrices).
f16("S-2x2sg-4x4acc-k16-single", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 16, single: true });
f16("S-2x2sg-4x4acc-k32-unroll2", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, unroll2: true });
f16("S-2x2sg-4x4acc-k16-unroll2", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 16, unroll2: true });
f16("S-2x4sg-4x4acc-k32-single", { wm: 2, wn: 4, cm: 4, cn: 4, bk: 32, single: true });
f16("S-4x2sg-4x4acc-k32-single", { wm: 4, wn: 2, cm: 4, cn: 4, bk: 32, single: true });
f16("S-4x2sg-2x4acc-k32-single", { wm: 4, wn: 2, cm: 2, cn: 4, bk: 32, single: true });
f16("S-2x2sg-2x4acc-k32-single", { wm: 2, wn: 2, cm: 2, cn: 4, bk: 32, single: true });
f16("S-2x2sg-4x4acc-k32-single-f16elem", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, single: true, elem: "f16" });
f16("S-2x2sg-4x4acc-k32-f16elem", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, elem: "f16" });
f16("S-2x2sg-2x2acc-k32-f16elem", { wm: 2, wn: 2, cm: 2, cn: 2, bk: 32, elem: "f16" });
// The fastest two with every matrix load's offset a constant (no bounds-check predicate on the loads).
f16("S-2x2sg-4x4acc-k32-single-switch", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, single: true, cofs: "switch" });
f16("S-2x4sg-4x4acc-k32-single-switch", { wm: 2, wn: 4, cm: 4, cn: 4, bk: 32, single: true, cofs: "switch" });
f16("S-2x2sg-4x4acc-k32-single-nest", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, single: true, cofs: "nest" });
f16("S-2x4sg-4x4acc-k32-single-nest", { wm: 2, wn: 4, cm: 4, cn: 4, bk: 32, single: true, cofs: "nest" });
f16("S-2x2sg-4x4acc-k32-rowwise", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, group: 0 });
f16("S-2x2sg-4x4acc-k32-cvec", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, cvec: true });
// A staged, B straight from storage (phase_gemm_sgmat's bd).
f16("H-2x2sg-4x4acc-k32", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, stageB: false });
f16("H-2x2sg-4x4acc-k64", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 64, stageB: false });
f16("H-2x2sg-2x4acc-k32", { wm: 2, wn: 2, cm: 2, cn: 4, bk: 32, stageB: false });
f16("H-2x2sg-4x4acc-k32-f16elem", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, stageB: false, elem: "f16" });
// Both straight from storage.
f16("D-2x2sg-4x4acc-k16", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 16, stageA: false, stageB: false });
f16("D-2x2sg-4x4acc-k32", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 32, stageA: false, stageB: false });
f16("D-2x2sg-4x4acc-k16-f16elem", { wm: 2, wn: 2, cm: 4, cn: 4, bk: 16, stageA: false, stageB: false, elem: "f16" });
f16("D-2x2sg-2x2acc-k32", { wm: 2, wn: 2, cm: 2, cn: 2, bk: 32, stageA: false, stageB: false });
f16("D-2x2sg-2x2acc-k32-f16elem", { wm: 2, wn: 2, cm: 2, cn: 2, bk: 32, stageA: false, stageB: false, elem: "f16" });
f16("D-2x2sg-2x4acc-k32", { wm: 2, wn: 2, cm: 2, cn: 4, bk: 32, stageA: false, stageB: false });
f16("D-2x4sg-4x2acc-k16", { wm: 2, wn: 4, cm: 4, cn: 2, bk: 16, stageA: false, stageB: false });
const F32 = [];
const f32 = (name, o) => F32.push({ name, kind: "f32", group: 8, ...o });
f32("F-128x128-8x8-k8", { bm: 128, bn: 128, tm: 8, tn: 8, bk: 8 });
f32("F-128x128-8x8-k16", { bm: 128, bn: 128, tm: 8, tn: 8, bk: 16 });
f32("F-64x128-4x8-k16", { bm: 64, bn: 128, tm: 4, tn: 8, bk: 16 });
f32("F-128x64-8x4-k16", { bm: 128, bn: 64, tm: 8, tn: 4, bk: 16 });
f32("F-128x128-8x4-k16", { bm: 128, bn: 128, tm: 8, tn: 4, bk: 16 });
f32("F-64x64-4x4-k16", { bm: 64, bn: 64, tm: 4, tn: 4, bk: 16 });
f32("F-128x256-8x8-k16", { bm: 128, bn: 256, tm: 8, tn: 8, bk: 16 });
// The conv kernels' tiles (phase_gemm's vec4 kernel: 64 x 128 of 8 x 8 or 4 x 8), for small GEMMs split along K.
f32("F-64x128-8x8-k16", { bm: 64, bn: 128, tm: 8, tn: 8, bk: 16 });
f32("F-64x64-8x8-k16", { bm: 64, bn: 64, tm: 8, tn: 8, bk: 16 });
f32("F-128x128-8x8-k8-rowwise", { bm: 128, bn: 128, tm: 8, tn: 8, bk: 8, group: 0 });

// ---------------------------------------------------------------------------------------------------------
const extraToggles = (process.env.CEILING_TOGGLES || "").split(",").filter(Boolean);
const gpu = dawnGpu(process.env.PROBE_NULL ? ["backend=null"] : [], extraToggles);
// Held for the whole run: collected, the instance takes the device down (a crash inside Dawn, not an error).
globalThis.dawnInstance = gpu;
const adapter = await gpu.requestAdapter();
const limitNames = ["maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX",
  "maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupsPerDimension"];
// Without subgroup matrices and f16 (SwiftShader) only the f32 kernels run.
const features = ["chromium-experimental-subgroup-matrix", "shader-f16", "subgroups", "timestamp-query"].filter((f) => adapter.features.has(f));
const device = await adapter.requestDevice({
  requiredFeatures: features,
  requiredLimits: Object.fromEntries(limitNames.map((k) => [k, adapter.limits[k]])),
});
device.addEventListener?.("uncapturederror", (e) => console.log("GPU error:", e.error.message.split("\n")[0]));
const info = adapter.info;
console.log(`adapter: ${info.vendor} ${info.architecture} ${info.device} ${info.description}; toggles ${[...ENABLED, ...extraToggles].join(",")}`);
const started = Date.now();
const elapsed = () => (Date.now() - started) / 1000;

const layout = device.createBindGroupLayout({ entries: [
  { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } },
  { binding: 1, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } },
  { binding: 2, visibility: GPUShaderStage.COMPUTE, buffer: { type: "read-only-storage" } },
  { binding: 3, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } }] });
const pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [layout] });

// Inputs from a hash of the element index: "exact" gives multiples of 1/8 in [-1, 1] (every product and sum
// of the check is exact in f32), "full" values with full mantissas (the timed runs: tensor cores draw less
// power, and clock higher, on sparse bit patterns).
function hash(i) {
  let x = Math.imul(i, 0x9e3779b1) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0; x = Math.imul(x, 0x85ebca77) >>> 0; x = (x ^ (x >>> 13)) >>> 0;
  return x;
}
const exactValue = (i, seed) => ((hash(i + seed) >>> 8) % 17 - 8) / 8;
const FILL = `
struct F { count: u32, seed: u32, exact: u32, half: u32 }
@group(0) @binding(0) var<uniform> f: F;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
fn hash(i: u32) -> u32 {
  var x = i * 0x9e3779b1u; x = x ^ (x >> 15u); x = x * 0x85ebca77u; x = x ^ (x >> 13u); return x;
}
fn value(i: u32) -> f32 {
  let h = hash(i + f.seed);
  if (f.exact == 1u) { return (f32((h >> 8u) % 17u) - 8.0) / 8.0; }
  return f32(h >> 8u) / 8388608.0 - 1.0;
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = gid.x + gid.y * nwg.x * 256u;
  if (w >= f.count) { return; }
  if (f.half == 1u) { out[w] = pack2x16float(vec2<f32>(value(2u * w), value(2u * w + 1u))); }
  else { out[w] = bitcast<u32>(value(w)); }
}`;
const fillModule = device.createShaderModule({ code: FILL });
const fillPipeline = device.createComputePipeline({ layout: "auto", compute: { module: fillModule, entryPoint: "main" } });
function fill(buffer, elements, half, seed, exact) {
  const words = half ? elements / 2 : elements;
  const u = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(u, 0, new Uint32Array([words, seed, exact ? 1 : 0, half ? 1 : 0]));
  const bind = device.createBindGroup({ layout: fillPipeline.getBindGroupLayout(0), entries: [
    { binding: 0, resource: { buffer: u } }, { binding: 1, resource: { buffer } }] });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(fillPipeline); pass.setBindGroup(0, bind);
  const groups = Math.ceil(words / 256);
  pass.dispatchWorkgroups(Math.min(groups, 32768), Math.ceil(groups / 32768));
  pass.end();
  device.queue.submit([enc.finish()]);
}

const buffers = {};
function operands(kind, [m, n, k, kz = 1], exact) {
  const key = `${kind} ${m} ${n} ${k} ${kz} ${exact}`;
  if (buffers.key === key) return buffers;
  for (const name of ["a", "b", "c", "u"]) buffers[name]?.destroy();
  const bytes = kind === "f16" ? 2 : 4;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  buffers.a = device.createBuffer({ size: m * k * bytes, usage });
  buffers.b = device.createBuffer({ size: k * n * bytes, usage });
  buffers.c = device.createBuffer({ size: Math.max(kz, kind === "f32" ? CHECK_KZ : 1) * m * n * 4, usage });
  fill(buffers.a, m * k, kind === "f16", 0, exact);
  fill(buffers.b, k * n, kind === "f16", 1 << 30, exact);
  buffers.key = key;
  return buffers;
}

function bindFor(bufs, [m, n, k], group) {
  const u = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(u, 0, new Uint32Array([m, n, k, group]));
  return device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: u } },
    { binding: 1, resource: { buffer: bufs.a } }, { binding: 2, resource: { buffer: bufs.b } },
    { binding: 3, resource: { buffer: bufs.c } }] });
}

const querySet = device.createQuerySet({ type: "timestamp", count: 2 * RUNS });
const resolved = device.createBuffer({ size: 16 * RUNS, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
const readTimes = device.createBuffer({ size: 16 * RUNS, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
/** `warm` untimed dispatches, then `runs` dispatches each in its own timed pass, back to back: their ms. */
async function timed(pipeline, bind, groups, warm, runs, splits = 1) {
  const enc = device.createCommandEncoder();
  for (let r = 0; r < warm + runs; r++) {
    const t = r - warm;
    const p = enc.beginComputePass(t >= 0 ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * t, endOfPassWriteIndex: 2 * t + 1 } } : {});
    p.setPipeline(pipeline); p.setBindGroup(0, bind); p.dispatchWorkgroups(groups, splits); p.end();
  }
  enc.resolveQuerySet(querySet, 0, 2 * runs, resolved, 0);
  enc.copyBufferToBuffer(resolved, 0, readTimes, 0, 16 * runs);
  device.queue.submit([enc.finish()]);
  await readTimes.mapAsync(GPUMapMode.READ);
  const t = new BigUint64Array(readTimes.getMappedRange().slice(0, 16 * runs));
  readTimes.unmap();
  return Array.from({ length: runs }, (_, i) => Number(t[2 * i + 1] - t[2 * i]) / 1e6);
}

async function readback(buffer, bytes) {
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buffer, 0, staging, 0, bytes);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(staging.getMappedRange().slice(0));
  staging.unmap(); staging.destroy();
  return out;
}

// The check's reference, computed once from the same hashes (the f16 and f32 inputs hold the same values).
const [cm_, cn_, ck_] = CHECK;
const refA = Float64Array.from({ length: cm_ * ck_ }, (_, i) => exactValue(i, 0));
const refB = Float64Array.from({ length: ck_ * cn_ }, (_, i) => exactValue(i, 1 << 30));
const reference = new Float64Array(cm_ * cn_);
for (let i = 0; i < cm_; i++) for (let kk = 0; kk < ck_; kk++) {
  const av = refA[i * ck_ + kk];
  if (av) for (let j = 0; j < cn_; j++) reference[i * cn_ + j] += av * refB[kk * cn_ + j];
}

function fastest(file, top) {
  const { results: earlier } = JSON.parse(readFileSync(file, "utf8"));
  const names = new Set();
  for (const size of new Set(earlier.map((r) => r.size))) for (const kind of ["f16", "f32"])
    earlier.filter((r) => r.size === size && r.kind === kind).sort((x, y) => x.median_ms - y.median_ms)
      .slice(0, top).forEach((r) => names.add(r.name));
  return names;
}
const only = process.env.CEILING_FROM ? fastest(process.env.CEILING_FROM, Number(process.env.CEILING_TOP || 2))
  : process.env.CEILING_ONLY ? new Set(process.env.CEILING_ONLY.split(",")) : null;
const sizeNames = (process.env.CEILING_SIZES ?? "4096,8192,skinny").split(",").filter(Boolean);
const results = [];
// Rewritten after every timing: a run cut short (a lost device, the time limit) keeps what it measured.
const save = () => process.env.CEILING_JSON && writeFileSync(process.env.CEILING_JSON,
  JSON.stringify({ adapter: { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description }, toggles, results }, null, 1));
const sgmat = ["chromium-experimental-subgroup-matrix", "shader-f16", "subgroups"].every((f) => features.includes(f));
if (!sgmat) console.log("no subgroup matrices with f16 here: f32 kernels only");
// CEILING_ELEM=f16: only the matrix loads through f16 arrays (a fallback, should vec4<u32> ones fail to build).
const configs = [...(sgmat ? F16 : []), ...F32].filter((c) => (!only || only.has(c.name)) &&
  (!process.env.CEILING_ELEM || c.kind === "f32" || c.elem === process.env.CEILING_ELEM));

// Compile and check every configuration first; time only those that passed.
const ready = [];
for (const c of configs) {
  let shader;
  try { shader = c.kind === "f16" ? sgmatShader(c) : simtShader(c); } catch (e) { console.log(`${c.name}: not generated: ${e.message}`); continue; }
  // The null backend's limit is the default 16 KiB; it checks shaders against the H200's 48 KiB.
  const wgLimit = process.env.PROBE_NULL ? 49152 : device.limits.maxComputeWorkgroupStorageSize;
  if (shader.wgBytes > wgLimit) { console.log(`${c.name}: ${shader.wgBytes} B of workgroup memory, over the limit`); continue; }
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code: shader.code });
  const msgs = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error");
  if (msgs.length) { await device.popErrorScope(); console.log(`${c.name}: compile error: ${msgs[0].message}`); continue; }
  const pipeline = device.createComputePipeline({ layout: pipelineLayout, compute: { module, entryPoint: "main" } });
  const err = await device.popErrorScope();
  if (err) {
    const overNull = process.env.PROBE_NULL && shader.wgBytes > 16384;
    console.log(`${c.name}: ${overNull ? "compiles; over the null backend's workgroup memory" : `pipeline error: ${err.message.split("\n")[0]}`}`);
    continue;
  }
  const bufs = operands(c.kind, CHECK, true);
  const bind = bindFor(bufs, CHECK, c.group);
  const clear = device.createCommandEncoder();  // a kernel that writes nothing must not pass on the last one's C
  clear.clearBuffer(bufs.c);
  device.queue.submit([clear.finish()]);
  const splits = c.kind === "f32" ? CHECK_KZ : 1;
  await timed(pipeline, bind, (cm_ / shader.bm) * (cn_ / shader.bn), 0, 1, splits);
  const parts = await readback(bufs.c, splits * cm_ * cn_ * 4);
  const got = parts.slice(0, cm_ * cn_);
  for (let z = 1; z < splits; z++) for (let i = 0; i < got.length; i++) got[i] += parts[z * cm_ * cn_ + i];
  let worst = 0, at = 0;
  for (let i = 0; i < got.length; i++) { const d = Math.abs(got[i] - reference[i]); if (!(d <= worst)) { worst = d; at = i; } }
  const ok = worst <= 1e-3 || process.env.PROBE_NULL;
  console.log(`${c.name}: ${shader.bm}x${shader.bn} tile, k step ${shader.bk}, ${shader.threads} invocations, ${shader.wgBytes} B workgroup memory; ` +
    `check ${cm_}x${cn_}x${ck_}: max |err| ${worst} at ${at}${ok ? "" : ` (got ${got[at]}, want ${reference[at]}) FAILED`}`);
  if (ok) ready.push({ c, shader, pipeline });
}

for (const size of sizeNames) {
  const dims = sizeOf(size);
  if (!dims) { console.log(`${size}: not a size (${Object.keys(SIZES).join(", ")} or MxNxK[/kz])`); continue; }
  const [m, n, k, kz = 1] = dims;
  for (const kind of ["f16", "f32"]) {
    if (kind === "f16" && kz > 1) continue;
    for (const { c, shader, pipeline } of ready.filter((r) => r.c.kind === kind)) {
      if (elapsed() > DEADLINE_S) { console.log(`deadline: ${c.name} ${size} not timed`); continue; }
      if (m % shader.bm || n % shader.bn || k % (shader.kstep * kz)) { console.log(`${c.name} ${size}: tile does not divide`); continue; }
      const bufs = operands(kind, dims, false);
      const bind = bindFor(bufs, dims, c.group);
      const groups = (m / shader.bm) * (n / shader.bn);
      const once = Math.max(0.01, Math.min(...(await timed(pipeline, bind, groups, 1, 1, kz))));
      const ms = (await timed(pipeline, bind, groups, Math.min(2000, Math.ceil(WARM_MS / once)), RUNS, kz)).sort((x, y) => x - y);
      const med = ms[RUNS >> 1];
      const tflops = 2 * m * n * k / med / 1e9;
      results.push({ name: c.name, kind, size, m, n, k, kz, median_ms: med, min_ms: ms[0], max_ms: ms[RUNS - 1], tflops, config: c,
        tile: [shader.bm, shader.bn, shader.bk], invocations: shader.threads });
      save();
      console.log(`${kind} ${size.padEnd(6)} ${c.name.padEnd(30)} median ${med.toFixed(4)} ms (min ${ms[0].toFixed(4)}, max ${ms[RUNS - 1].toFixed(4)})  ${tflops.toFixed(2)} TFLOP/s`);
    }
  }
}
console.log("\nbest per size and kind (median):");
for (const size of sizeNames) for (const kind of ["f16", "f32"]) {
  const rows = results.filter((r) => r.size === size && r.kind === kind).sort((x, y) => x.median_ms - y.median_ms);
  if (rows.length) console.log(`  ${kind} ${size.padEnd(6)} ${rows[0].name.padEnd(30)} ${rows[0].median_ms.toFixed(4)} ms  ${rows[0].tflops.toFixed(1)} TFLOP/s`);
}
save();
console.log(`done in ${elapsed().toFixed(1)} s`);
process.exit(0);
