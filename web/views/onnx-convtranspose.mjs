// One-node ONNX models (ConvTranspose), encoded by hand as protobuf bytes: no protobuf library needed in
// the page. Used by ort-bench.mjs to give onnxruntime-web the same operator the bench runs on our kernel;
// tests/test_ort_bench.py parses the bytes with the `onnx` package and checks them.
//
//   convTransposeModel({ x: [1, 64, 4, 4], w: [64, 32, 4, 4], bias: true, attributes: { strides: [2, 2] },
//                        w_data: Float32Array, b_data?: Float32Array })  ->  Uint8Array (an ONNX ModelProto)
//
// Graph: input "x" (float, the given shape), initializers "w" (and "b"), one ConvTranspose node, output "y"
// (float, symbolic dims: sizes left for ORT to infer). Weights are initializers, as in a real model, so ORT may pre-pack them.

const OPSET = 17;  // ConvTranspose-11 semantics; any opset 11-22 runs the same operator
const IR_VERSION = 8;
const FLOAT = 1;
const ATTR_INT = 2, ATTR_STRING = 3, ATTR_INTS = 7;

function varint(value) {
  // int64 as protobuf varint; negatives take 10 bytes (two's complement), as protobuf requires.
  let v = BigInt.asUintN(64, BigInt(value));
  const out = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
  return Uint8Array.from(out);
}

// Messages are built as Uint8Array concatenations (weights can be megabytes: no per-byte JS arrays).
function cat(...parts) {
  const flat = parts.flat(Infinity);
  const out = new Uint8Array(flat.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of flat) { out.set(p, at); at += p.length; }
  return out;
}

const utf8 = (s) => new TextEncoder().encode(s);
const key = (field, wire) => varint((field << 3) | wire);
const intField = (field, value) => cat(key(field, 0), varint(value));
const bytesField = (field, bytes) => cat(key(field, 2), varint(bytes.length), bytes);
const stringField = (field, s) => bytesField(field, utf8(s));

function valueInfo(name, shape) {
  // Dimension: dim_value (1) for numbers, dim_param (2) for symbolic names.
  const dims = cat(shape.map((d) => bytesField(1, typeof d === "string" ? stringField(2, d) : intField(1, d))));
  const tensorType = cat(intField(1, FLOAT), bytesField(2, dims));  // elem_type, shape
  return cat(stringField(1, name), bytesField(2, bytesField(1, tensorType)));  // name, type.tensor_type
}

function initializer(name, shape, data) {
  const raw = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return cat(shape.map((d) => intField(1, d)), intField(2, FLOAT), stringField(8, name), bytesField(9, raw));
}

function attribute(name, value) {
  if (typeof value === "string") return cat(stringField(1, name), intField(20, ATTR_STRING), bytesField(4, utf8(value)));
  if (Array.isArray(value)) return cat(stringField(1, name), intField(20, ATTR_INTS), value.map((v) => intField(8, v)));
  return cat(stringField(1, name), intField(20, ATTR_INT), intField(3, value));
}

/** The ONNX model bytes for one ConvTranspose request (see the module header). */
export function convTransposeModel({ x, w, bias = false, attributes = {}, w_data, b_data = null }) {
  const inputs = bias ? ["x", "w", "b"] : ["x", "w"];
  const node = cat(inputs.map((n) => stringField(1, n)), stringField(2, "y"), stringField(3, "convtranspose"),
                   stringField(4, "ConvTranspose"),
                   Object.entries(attributes).map(([name, value]) => bytesField(5, attribute(name, value))));
  const inits = [bytesField(5, initializer("w", w, w_data))];
  if (bias) inits.push(bytesField(5, initializer("b", [b_data.length], b_data)));
  // y is declared float with symbolic dims of the right rank: ORT infers the sizes.
  const graph = cat(bytesField(1, node), stringField(2, "convtranspose"), inits,
                    bytesField(11, valueInfo("x", x)), bytesField(12, valueInfo("y", x.map((_, i) => `y${i}`))));
  return cat(intField(1, IR_VERSION), stringField(2, "webgpu-convtranspose-bench"), bytesField(7, graph),
             bytesField(8, cat(stringField(1, ""), intField(2, OPSET))));
}
