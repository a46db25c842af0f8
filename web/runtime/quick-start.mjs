// A signature seen for the first time on a revisit, run before Python is up: its first calls need only the rank's
// gather kernel, whose WGSL depends on the rank, the dtype and the bias alone (a stored starter of the same three
// holds it: kernel.mjs keeps one per kind) and whose sizes are uniforms. So the request is judged here and the
// gather launch planned here, while Python starts behind the first result; Python then plans the starter again (it
// must match, else the stored source goes) and the signature's own plan.
//
// The judge is app/shapes.py infer's rules, kept to what is sure: a request it is unsure of (output_shape, SAME_*
// padding, anything infer would refuse) is left to Python, which judges every request. tests/test_quick_start.py
// holds the two to the same answers, and this spec to Python's plan of the starter, on the fuzzer's requests.

import { DTYPES } from "./contract.mjs";
import { outputShape } from "./output-shape.mjs";
import { TYPED_ARRAYS } from "./typed-arrays.mjs";

// app/variants/gather.py NAMES and WORKGROUP
export const GATHER = { 1: "ncl1d_gather", 2: "nchw2d_gather", 3: "ncdhw3d_gather" };
const WORKGROUP = 64;
const MAX_ELEMENTS = 2 ** 31 - 1;  // app/shapes.py: indices are 32-bit on the GPU
const ATTRIBUTES = new Set(["auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"]);

const ints = (v, length, min) => v === undefined ? true : Array.isArray(v) && v.length === length &&
  v.every((d) => Number.isSafeInteger(d) && d >= min && d <= MAX_ELEMENTS);
const product = (xs) => xs.reduce((a, b) => a * b, 1);

/** The geometry of a request infer would accept, from {x, w, b?} ({shape, dtype}) and the call's attributes;
 * null where it is not sure (Python judges those). */
export function quickGeometry(tensors, attributes) {
  const { x, w, b } = tensors;
  if (!x?.shape || !w?.shape || x.buffer !== undefined || w.buffer !== undefined || b?.buffer !== undefined) return null;
  const rank = x.shape.length - 2;
  if (!GATHER[rank] || w.shape.length !== x.shape.length || w.dtype !== x.dtype || (b && b.dtype !== x.dtype)) return null;
  if (!DTYPES.includes(x.dtype) || ![x, w, ...(b ? [b] : [])].every((t) => t.shape.every((d) => Number.isSafeInteger(d) && d >= 1) &&
      product(t.shape) <= MAX_ELEMENTS)) return null;
  if (Object.keys(attributes).some((k) => !ATTRIBUTES.has(k))) return null;
  const { auto_pad: autoPad = "NOTSET", group = 1, output_shape: given } = attributes;
  if ((autoPad !== "NOTSET" && autoPad !== "VALID") || (given !== undefined && given !== null)) return null;
  if (!Number.isSafeInteger(group) || group < 1 || group > MAX_ELEMENTS) return null;
  const { strides = Array(rank).fill(1), dilations = Array(rank).fill(1), output_padding: outputPadding = Array(rank).fill(0),
          pads = Array(2 * rank).fill(0), kernel_shape: kernelShape } = attributes;
  if (!ints(strides, rank, 1) || !ints(dilations, rank, 1) || !ints(outputPadding, rank, 0) || !ints(pads, 2 * rank, 0) ||
      !ints(kernelShape, rank, 1)) return null;
  const [batch, channels] = x.shape, kernel = w.shape.slice(2), spatial = x.shape.slice(2);
  if (w.shape[0] !== channels || channels % group) return null;
  if (kernelShape !== undefined && kernelShape.some((k, i) => k !== kernel[i])) return null;
  const outChannels = w.shape[1] * group;
  if (b && (b.shape.length !== 1 || b.shape[0] !== outChannels)) return null;
  if (outputPadding.some((op, i) => op >= Math.max(strides[i], dilations[i]))) return null;
  const natural = spatial.map((n, i) => strides[i] * (n - 1) + outputPadding[i] + (kernel[i] - 1) * dilations[i] + 1);
  if (natural.some((n) => n > MAX_ELEMENTS)) return null;
  const yShape = outputShape(x.shape, w.shape, attributes), out = yShape.slice(2);
  if (out.some((o) => o <= 0) || product(yShape) > MAX_ELEMENTS) return null;
  const begins = autoPad === "VALID" ? Array(rank).fill(0) : pads.slice(0, rank);
  return { rank, dtype: x.dtype, batch, channels, outChannels, group, spatial, out, kernel, strides, dilations,
           begins, hasBias: Boolean(b), yShape };
}

const gcd = (a, b) => (b ? gcd(b, a % b) : a);

/** The gather kernel's launch spec for `geom` (app/variants/gather.py, app/gpu.py compile_launch), its pass's
 * pipeline `pipeline` ({key, source, label}: a stored starter's of the same rank, dtype and bias). */
export function quickSpec(geom, pipeline, checkWorkgroup, maxPerDim) {
  const ySize = product(geom.yShape);
  const uniforms = [geom.batch, ySize, geom.channels, geom.outChannels, geom.channels / geom.group,
                    geom.outChannels / geom.group];
  geom.spatial.forEach((n, a) => {
    const s = geom.strides[a], d = geom.dilations[a];
    uniforms.push(n, geom.out[a], geom.kernel[a], s, d, geom.begins[a], s / gcd(s, d));
  });
  const groups = Math.max(1, Math.ceil(ySize / WORKGROUP));
  const rows = Math.ceil(groups / maxPerDim);
  if (rows > maxPerDim) return null;
  const workgroups = groups <= maxPerDim ? [groups, 1, 1] : [Math.ceil(groups / rows), rows, 1];
  const bytes = (shape) => product(shape) * TYPED_ARRAYS[geom.dtype].BYTES_PER_ELEMENT;
  const inputs = { x: bytes([geom.batch, geom.channels, ...geom.spatial]),
                   w: bytes([geom.channels, geom.outChannels / geom.group, ...geom.kernel]) };
  if (geom.hasBias) inputs.b = bytes([geom.outChannels]);
  return { variant: GATHER[geom.rank], reason: "the quick first kernel, planned before Python is up", dtype: geom.dtype,
           finite_only: false, finite_check: null, finite_scanned: [], check_workgroup: checkWorkgroup,
           y_shape: geom.yShape, y_bytes: bytes(geom.yShape), inputs, scratch: {}, prepared: {}, prepare: [],
           passes: [{ pipeline, bindings: geom.hasBias ? ["x", "w", "b", "y"] : ["x", "w", "y"], uniforms, workgroups }] };
}

/** A gather launch's work, from its uniforms (quickSpec's order): outputs x input channels per group x the taps
 * that reach an output (ceil(k / step) an axis); 0 for what is not such a spec. Its runs scale with it. */
export function gatherWork(spec) {
  const u = spec?.passes?.[0]?.uniforms;
  if (!Array.isArray(u) || u.length < 13 || (u.length - 6) % 7 || !u.every(Number.isSafeInteger)) return 0;
  let work = u[1] * u[4];
  for (let a = 6; a < u.length; a += 7) work *= Math.ceil(u[a + 2] / u[a + 6]);
  return work > 0 ? work : 0;
}

// JSON with each object's keys sorted: the same spec whatever order its fields were made in
const canonical = (v) => JSON.stringify(v, (_, o) => (o && typeof o === "object" && !Array.isArray(o)
  ? Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]])) : o));

/** Whether two storable specs run the same work (the reason and the pipeline's label apart). */
export function sameWork(a, b) {
  const work = (s) => canonical({ ...s, reason: null, passes: s.passes.map((p) => ({ ...p, pipeline: p.pipeline.key })) });
  return work(a) === work(b);
}
