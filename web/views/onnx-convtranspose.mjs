// ONNX models in JavaScript, read and written with protobufjs (npm, pinned in package.json) and ONNX's own
// schema (web/views/onnx.proto, copied from the `onnx` package): the one-node models that ort-bench.mjs and
// compare.mjs give onnxruntime-web, and the ConvTranspose layers of a model the page is given.
//
//   convTransposeModel({ x: [1, 64, 4, 4], w: [64, 32, 4, 4], bias: true, attributes: { strides: [2, 2] },
//                        w_data: Float32Array, b_data?: Float32Array })  ->  Uint8Array (an ONNX ModelProto)
//   readModel(bytes) -> the ModelProto as plain data (int64 as numbers, bytes as Uint8Array)
//   tensorData(tensorProto) -> Float32Array | Uint16Array (float16 bits)
//   await convTransposeLayers(model, yShape) -> [{index, name, x_shape, w_shape, attributes, dtype, w, b, ...}
//                                               | {index, name, reason}]
//
// protobufjs and the schema load once, when this module is imported: from node_modules and this folder in
// Node, from the app server's /node_modules/protobufjs/dist/ route and /web/views/ in the page (never a CDN).

const OPSET = 17;  // ConvTranspose-11 semantics; any opset 11-22 runs the same operator
const IR_VERSION = 8;
const FLOAT = 1, FLOAT16 = 10;
const DTYPES = { [FLOAT]: "float32", [FLOAT16]: "float16" };
const ELEM = { float32: FLOAT, float16: FLOAT16 };
const ATTR = { FLOAT: 1, INT: 2, STRING: 3, FLOATS: 6, INTS: 7 };
const inNode = Boolean(globalThis.process?.versions?.node);

async function text(url) {
  if (inNode) return (await import("node:fs/promises")).readFile(new URL(url), "utf8");
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.text();
}

// The dist bundle is UMD: CommonJS in Node (the module's default export), a global in the page.
const loaded = await import(new URL("../../node_modules/protobufjs/dist/protobuf.min.js", import.meta.url).href);
const protobuf = loaded.default ?? globalThis.protobuf;
const root = protobuf.parse(await text(new URL("./onnx.proto", import.meta.url).href), { keepCase: true }).root;
const ModelProto = root.lookupType("onnx.ModelProto");
const CONVERSION = { longs: Number, enums: Number, defaults: false, arrays: true };

/** An ONNX file's bytes as plain data (throws protobufjs's error for bytes that are not a ModelProto). */
export function readModel(bytes) {
  return ModelProto.toObject(ModelProto.decode(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)), CONVERSION);
}

/** Plain data (the shape readModel returns) as ONNX bytes. */
export function writeModel(model) {
  const problem = ModelProto.verify(model);
  if (problem) throw new Error(`not a valid ModelProto: ${problem}`);
  const out = ModelProto.encode(ModelProto.fromObject(model)).finish();
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

const bytesOf = (data) => new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
const dims = (shape) => ({ dim: shape.map((d) => (typeof d === "string" ? { dim_param: d } : { dim_value: d })) });
const valueInfo = (name, elem, shape) => ({ name, type: { tensor_type: { elem_type: elem, shape: dims(shape) } } });

function attribute(name, value) {
  if (typeof value === "string") return { name, type: ATTR.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: ATTR.INTS, ints: value };
  return { name, type: ATTR.INT, i: value };
}

/** The ONNX model bytes for one ConvTranspose request (see the module header). Graph: input "x", initializers
 * "w" (and "b"), one ConvTranspose node, output "y" (symbolic dims of x's rank: sizes left for ORT to infer). */
export function convTransposeModel({ x, w, bias = false, attributes = {}, w_data, b_data = null, dtype = "float32" }) {
  const elem = ELEM[dtype];
  const initializer = [{ name: "w", dims: w, data_type: elem, raw_data: bytesOf(w_data) }];
  if (bias) initializer.push({ name: "b", dims: [b_data.length], data_type: elem, raw_data: bytesOf(b_data) });
  const node = { input: bias ? ["x", "w", "b"] : ["x", "w"], output: ["y"], name: "convtranspose",
                 op_type: "ConvTranspose", attribute: Object.entries(attributes).map(([k, v]) => attribute(k, v)) };
  return writeModel({
    ir_version: IR_VERSION, producer_name: "webgpu-convtranspose-bench",
    opset_import: [{ domain: "", version: OPSET }],
    graph: { name: "convtranspose", node: [node], initializer,
             input: [valueInfo("x", elem, x)], output: [valueInfo("y", elem, x.map((_, i) => `y${i}`))] },
  });
}

/** A TensorProto's values: Float32Array (float) or Uint16Array (float16 bits), copied out of the message. */
export function tensorData(t) {
  const count = (t.dims ?? []).reduce((a, b) => a * b, 1);
  if (t.data_location === 1) throw new Error(`tensor ${t.name}: external data is not read here`);
  if (!(t.data_type in DTYPES)) throw new Error(`tensor ${t.name}: data type ${t.data_type} (float32 and float16 are read)`);
  const Typed = t.data_type === FLOAT ? Float32Array : Uint16Array;
  let out;
  // A copy: raw_data may sit unaligned in the file's bytes (and a Node Buffer's slice() is a view)
  if (t.raw_data?.length) out = new Typed(Uint8Array.prototype.slice.call(t.raw_data).buffer);
  else if (t.data_type === FLOAT) out = Float32Array.from(t.float_data ?? []);
  else out = Uint16Array.from(t.int32_data ?? []);  // float16 bits live in int32_data
  if (out.length !== count) throw new Error(`tensor ${t.name}: ${out.length} values for dims [${t.dims}]`);
  return out;
}

function attributeValue(a) {
  switch (a.type) {
    case ATTR.INT: return a.i ?? 0;
    case ATTR.INTS: return a.ints ?? [];
    case ATTR.STRING: return new TextDecoder().decode(a.s ?? new Uint8Array());
    case ATTR.FLOAT: return a.f ?? 0;
    case ATTR.FLOATS: return a.floats ?? [];
    default: return undefined;
  }
}

const staticDims = (info) => {
  const shape = info?.type?.tensor_type?.shape;
  if (!shape) return undefined;
  return (shape.dim ?? []).map((d) => (typeof d.dim_value === "number" && d.dim_value > 0 ? d.dim_value : null));
};

// Ops whose output has their first input's shape, or the inputs' broadcast shape: how x shapes reach the
// ConvTranspose nodes of a model saved without value_info (the page has no onnx shape inference).
const SAME_SHAPE = new Set(["Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Elu", "Selu", "Gelu", "Softplus",
  "HardSigmoid", "HardSwish", "Clip", "Identity", "Dropout", "BatchNormalization", "InstanceNormalization",
  "Cast", "Neg", "Abs", "Exp", "Sqrt", "Erf", "Mish"]);
const BROADCAST = new Set(["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum"]);

function broadcast(shapes) {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out = [];
  for (let i = 0; i < rank; i++) {
    const sizes = shapes.map((s) => s[s.length - rank + i] ?? 1);
    if (sizes.includes(null)) return null;
    const big = Math.max(...sizes);
    if (sizes.some((d) => d !== 1 && d !== big)) return null;
    out.push(big);
  }
  return out;
}

/**
 * The ConvTranspose nodes of a model (readModel's data), in graph order: runnable layers {index, name, x_shape,
 * w_shape, y_shape, attributes, dtype, w, b?} (w, b: tensorData of the initializers), or {index, name, reason}
 * for a node whose weights are not initializers or whose input shape stays unknown. Shapes come from the
 * graph's inputs and value_info, then through the ops above and through each ConvTranspose, whose output
 * shape `yShape({x_shape, w_shape, b_shape, attributes})` gives (async: the page asks the app's Python).
 */
export async function convTransposeLayers(model, yShape) {
  const graph = model.graph ?? {};
  const inits = new Map((graph.initializer ?? []).map((t) => [t.name, t]));
  const graphInputs = new Set((graph.input ?? []).map((i) => i.name).filter((n) => !inits.has(n)));
  const producer = new Map();
  const shapes = new Map();
  for (const info of [...(graph.input ?? []), ...(graph.value_info ?? []), ...(graph.output ?? [])]) {
    const d = staticDims(info);
    if (d) shapes.set(info.name, d);
  }
  for (const [name, t] of inits) shapes.set(name, t.dims ?? []);
  const known = (name) => { const s = shapes.get(name); return s && !s.includes(null) ? s : null; };
  const layers = [];
  let index = 0;
  for (const node of graph.node ?? []) {
    for (const out of node.output ?? []) producer.set(out, node.op_type);
    if (node.op_type !== "ConvTranspose" || (node.domain && node.domain !== "ai.onnx")) {
      const first = known(node.input?.[0]);
      let out = null;
      if (SAME_SHAPE.has(node.op_type)) out = first;
      else if (BROADCAST.has(node.op_type)) {
        const ins = (node.input ?? []).filter(Boolean).map(known);
        out = ins.every(Boolean) ? broadcast(ins) : null;
      }
      if (out && node.output?.[0] && !known(node.output[0])) shapes.set(node.output[0], out);
      continue;
    }
    const name = node.name || `ConvTranspose_${index}`;
    const [x, w, b] = node.input;
    const where = (t) => (graphInputs.has(t) ? "a graph input, not an initializer"
      : `computed by a ${producer.get(t) ?? "unknown"} node, not an initializer`);
    const attributes = Object.fromEntries((node.attribute ?? []).map((a) => [a.name, attributeValue(a)]));
    let reason = null;
    if (!inits.has(w)) reason = `w (${JSON.stringify(w)}) is ${where(w)}`;
    else if (b && !inits.has(b)) reason = `b (${JSON.stringify(b)}) is ${where(b)}`;
    else if (!known(x)) reason = `x (${JSON.stringify(x)}) has no static shape here (save the model with onnx.shape_inference, or run python -m app model)`;
    else if (!(inits.get(w).data_type in DTYPES)) reason = `w has ONNX data type ${inits.get(w).data_type}; the kernel takes float32 and float16`;
    if (reason) {
      layers.push({ index: index++, name, reason });
      continue;
    }
    // A layer the file cannot give (external data, data short of its dims) or that our validation refuses is
    // {reason, invalid: true, field}: the drop zone reports it as FAIL and goes on with the next.
    let layer;
    try {
      layer = { index, name, x_shape: known(x), w_shape: inits.get(w).dims, attributes,
                dtype: DTYPES[inits.get(w).data_type], w: tensorData(inits.get(w)) };
      if (b) layer.b = tensorData(inits.get(b));
    } catch (err) {
      layers.push({ index: index++, name, reason: String(err.message ?? err), invalid: true, field: "w" });
      continue;
    }
    index++;
    const out = await yShape({ x_shape: layer.x_shape, w_shape: layer.w_shape, b_shape: b ? [layer.b.length] : null, attributes });
    if (out.error) {
      layers.push({ index: layer.index, name, reason: out.error, invalid: true, field: out.field ?? null });
      continue;
    }
    layer.y_shape = out.y_shape;
    shapes.set(node.output[0], out.y_shape);
    layers.push(layer);
  }
  return layers;
}

/** A one-node (or chain) model cut by app/onnx_model.py: its input, output and ConvTranspose nodes in order, {x_shape, w_shape, attributes,
 * with {name, w_shape, attributes, w, b?} per node. */
export function modelNodes(model) {
  const graph = model.graph;
  const inits = new Map((graph.initializer ?? []).map((t) => [t.name, t]));
  const input = graph.input.find((i) => !inits.has(i.name));
  return {
    input: input.name, x_shape: staticDims(input), output: graph.output[0].name,
    dtype: DTYPES[input.type.tensor_type.elem_type],
    nodes: graph.node.map((node) => {
      const [, w, b] = node.input;
      const layer = { name: node.name, w_shape: inits.get(w).dims, w: tensorData(inits.get(w)),
                      attributes: Object.fromEntries((node.attribute ?? []).map((a) => [a.name, attributeValue(a)])) };
      if (b) layer.b = tensorData(inits.get(b));
      return layer;
    }),
  };
}
