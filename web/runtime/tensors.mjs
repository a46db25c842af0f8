// The caller's inputs checked as Python's `app.tensors` checks them, for the calls that never enter Python: a
// repeat call's x, w and b become typed arrays of a dtype the op contract allows, or GPU buffers.
import { kernelError } from "./errors.mjs";
import { TYPED_ARRAYS } from "./typed-arrays.mjs";

export const INPUTS = ["x", "w", "b"];
const DEFAULT_DTYPE = "float32";  // as Python's: data given without a dtype
// objects already seen to be GPUBuffers (their size a number): reading `size` is a call into the WebGPU
// implementation (a native getter in Dawn's Node binding), made once per buffer instead of once per call
const gpuBuffers = new WeakSet();
// constant inputs given as numbers (a plain array, a Float16Array): source -> its converted typed array, so that
// each call binds the same array and the weight cache finds it (a new copy per call missed it every time)
const constants = new WeakMap();

/** The converted copy of a constant source (null: none made). */
export function constantCopy(source) {
  return source !== null && typeof source === "object" ? constants.get(source)?.data ?? null : null;
}

/** Forgets a constant source's converted copy (the caller changed the source: converted again next call). */
export function forgetConstant(source) {
  if (source !== null && typeof source === "object") constants.delete(source);
}

// ONNX's ints are int64, so JS decoders of models hand them over as BigInt: one taken where a number goes becomes the
// Number it equals, exact for every value the kernel takes (sizes and attributes stop at 2^31-1); a larger one is
// refused by the range check that refuses that Number. The call and validate() both read values through these.
const plainNumber = (v) => (typeof v === "bigint" ? Number(v) : v);

function plainValue(v) {
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.some((e) => typeof e === "bigint") ? v.map(plainNumber) : v;
  // an ints attribute as an Int32Array or a BigInt64Array: a list, as Python reads lists
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return Array.from(v, plainNumber);
  return v;
}

/** A caller's value in a message: JSON, with BigInts written as literals (JSON.stringify throws on them). */
const show = (v) => JSON.stringify(v, (_, e) => (typeof e === "bigint" ? `${e}n` : e));

/** The attributes of a request (every own key but the inputs and `variant`), each value as Python reads it, defined
 * on `into` as own properties: assigned, a key "__proto__" (JSON.parse makes one) would set the object's prototype
 * and vanish from the request, where Python refuses it as the unknown attribute it is. */
export function requestAttributes(inputs, into = {}) {
  for (const k of Object.keys(inputs)) {
    if (k === "x" || k === "w" || k === "b" || k === "variant") continue;
    Object.defineProperty(into, k, { value: plainValue(inputs[k]), enumerable: true, writable: true, configurable: true });
  }
  return into;
}

/** The element count of a shape, or -1 when it is not a list of non-negative integers. */
function elements(shape) {
  if (!Array.isArray(shape)) return -1;
  let count = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (!Number.isInteger(d) || d < 0) return -1;
    count *= d;
  }
  return count;
}

/** The dtypes manifest.json allows for the inputs (their type constraints), sorted as Python lists them. */
export function inputDtypes(manifest) {
  const types = new Set(manifest.inputs.map((input) => input.type));
  return [...new Set([...types].flatMap((t) => manifest.type_constraints[t].map((c) => c.dtype)))].sort();
}

/** One input as the hot path needs it, checked: {data (typed array of the dtype), shape, dtype, constant}
 * or {buffer, shape, dtype, finite}; null when only Python can take it (float16 as plain numbers).
 * dtypes: inputDtypes(manifest). */
export function tensor(name, t, dtypes) {
  if (t === null || typeof t !== "object") {
    throw kernelError("ConvTransposeError", `input '${name}' must be {data, shape[, dtype]} or {buffer, shape[, dtype]}`, name);
  }
  const dtype = t.dtype ?? DEFAULT_DTYPE;
  if (!dtypes.includes(dtype)) {
    const allowed = `[${dtypes.map((d) => `'${d}'`).join(", ")}]`;
    throw kernelError("ConvTransposeError", `input '${name}': dtype ${show(dtype)} is not supported; allowed: ${allowed}`, name);
  }
  let shape = t.shape;
  let count = elements(shape);
  if (count < 0 && Array.isArray(shape) && shape.some((d) => typeof d === "bigint")) {
    shape = shape.map(plainNumber);  // converted only here: a shape of Numbers, the hot path's, is never copied
    count = elements(shape);
  }
  if (count < 0) {
    throw kernelError("ConvTransposeError", `input '${name}': shape must be a list of non-negative integers, got ${show(shape)}`, name);
  }
  const buffer = t.buffer;
  if (buffer !== undefined) {
    if (t.data !== undefined) throw kernelError("ConvTransposeError", `input '${name}': give data or buffer, not both`, name);
    if (!gpuBuffers.has(buffer)) {
      if (typeof buffer?.size !== "number") throw kernelError("ConvTransposeError", `input '${name}': buffer must be a GPUBuffer`, name);
      gpuBuffers.add(buffer);
    }
    return { buffer, shape, dtype, finite: t.finite };  // the caller's word: finite.mjs reads it
  }
  let data = t.data;
  const constant = t.constant === true;
  const source = data;
  if (constant && constants.get(source)?.dtype === dtype) {
    data = constants.get(source).data;
  } else if (data instanceof TYPED_ARRAYS[dtype]) {
    // the hot path: the caller's own array, written to the GPU as it is
  } else if (dtype === "float16" && globalThis.Float16Array && data instanceof globalThis.Float16Array) {
    data = new Uint16Array(data.buffer, data.byteOffset, data.length);
  } else if (ArrayBuffer.isView(data)) {
    // one rule in both languages (Python's `app.tensors`): a typed array carries its dtype, which must be one of
    // manifest.json's; numbers of another type are never converted silently
    const want = dtype === "float16" ? "Uint16Array (float16 bits) or a Float16Array" : TYPED_ARRAYS[dtype].name;
    throw kernelError("ConvTransposeError", `input '${name}': data is a ${data.constructor?.name ?? "typed array"}; ` +
      `dtype ${JSON.stringify(dtype)} takes a ${want} or a list of numbers (allowed dtypes: ${dtypes.join(", ")})`, name);
  } else if (Array.isArray(data)) {
    const bad = Array.prototype.find.call(data, (v) => typeof v !== "number" && typeof v !== "bigint");
    if (bad !== undefined || (Array.isArray(data) && data.length !== data.filter(() => true).length)) {
      throw kernelError("ConvTransposeError", `input '${name}': data must be a flat list of numbers, found ${show(bad ?? null)}`, name);
    }
    if (dtype === "float16") {
      // numbers to float16 bits: Float16Array rounds them as numpy does; without it, numpy does it in Python
      if (!globalThis.Float16Array) return null;
      const halves = globalThis.Float16Array.from(data, Number);
      data = new Uint16Array(halves.buffer, halves.byteOffset, halves.length);
    } else {
      data = TYPED_ARRAYS[dtype].from(data, Number);
    }
  } else {
    throw kernelError("ConvTransposeError", `input '${name}': data must be a typed array or a flat list of numbers, got ${data === undefined ? "nothing" : typeof data}`, name);
  }
  if (data.length !== count) {
    throw kernelError("ConvTransposeError", `input '${name}': data has ${data.length} values but shape ${show(shape)} needs ${count}`, name);
  }
  if (constant && data !== source) constants.set(source, { dtype, data });
  return { data, shape, dtype, constant };
}

/** A JS request -> the plain request Python's bridge.call reads (typed arrays travel without per-element copies);
 * its attributes and shapes read as the call reads them (requestAttributes), so that validate() and the call agree. */
export function pythonRequest(inputs) {
  const out = requestAttributes(inputs);
  for (const name of [...INPUTS, "variant"]) if (Object.hasOwn(inputs, name)) out[name] = inputs[name];
  for (const name of INPUTS) {
    const t = inputs[name];
    if (t == null) continue;
    const dtype = t.dtype ?? DEFAULT_DTYPE;
    let data = ArrayBuffer.isView(t.data) ? t.data : Array.from(t.data ?? []);
    // Python tells a typed array's element type by its buffer format, which Pyodide has none for in a Float16Array:
    // float16 goes as its bits, as the call takes it (app/bridge.py _typed)
    if (globalThis.Float16Array && data instanceof globalThis.Float16Array) data = new Uint16Array(data.buffer, data.byteOffset, data.length);
    out[name] = { data, shape: Array.from(t.shape ?? [], plainNumber), dtype };
  }
  return out;
}
