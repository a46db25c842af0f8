// "Copy as code": the JavaScript and Python calls that do what the run form does.
import { CONTRACT_VERSION, KERNEL_ID } from "../runtime/contract.mjs";

const PACKAGE_NAME = "webgpu-convtranspose";  // the npm package (app/host/export.py)
const INLINE_MAX = 32; // pasted data up to this many values is written into the snippet; more is loaded from files

const list = (values) => `[${values.join(", ")}]`;

function pyValue(v) {
  return typeof v === "string" ? JSON.stringify(v) : Array.isArray(v) ? list(v) : String(v);
}

/** spec: {shapes: {x, w, b}, attrs, variant, source, seed, pasted: {x, w, b}, files: {x, w, b}} */
export function jsSnippet(spec) {
  const { shapes, attrs, variant, source } = spec;
  const lines = [
    `import { getKernel } from ${JSON.stringify(PACKAGE_NAME)};  // npm install the package (README.md)`,
    `const kernel = await getKernel(${JSON.stringify(KERNEL_ID)}, { version: ${CONTRACT_VERSION} });`,
  ];
  const names = ["x", "w", "b"].filter((n) => shapes[n]);
  for (const n of names) {
    const size = shapes[n].reduce((a, d) => a * d, 1);
    if (source === "pasted" && spec.pasted[n].length <= INLINE_MAX) {
      lines.push(`const ${n}Data = new Float32Array(${list(spec.pasted[n])});`);
    } else {
      lines.push(`const ${n}Data = new Float32Array(${size}); // ${size} values, row-major: fill with your data`);
    }
  }
  // w and b as a model's weights are: constant (x is the data that changes from call to call)
  const fields = names.map((n) => `  ${n}: { data: ${n}Data, shape: ${list(shapes[n])}${n === "x" ? "" : ", constant: true"} },`);
  for (const [k, v] of Object.entries(attrs)) fields.push(`  ${k}: ${JSON.stringify(v).replaceAll(",", ", ")},`);
  if (variant) fields.push(`  variant: ${JSON.stringify(variant)},`);
  lines.push("// weights marked constant are uploaded and prepared once while the same arrays come back:",
    "// call kernel.forget(wData) after changing one in place");
  lines.push("const { y, meta } = await kernel({", ...fields, "});");
  lines.push("// y = { data: Float32Array, shape, dtype }, meta = { variant, reason, gpu_ms, y_shape, pieces }");
  return lines.join("\n");
}

export function pySnippet(spec) {
  const { shapes, attrs, variant, source } = spec;
  // Python in Pyodide, where the page's package is `app` (installed with pip it is webgpu_convtranspose)
  const lines = ["import numpy as np", "import app", "",
    `kernel = await app.get_kernel(${JSON.stringify(KERNEL_ID)}, version=${CONTRACT_VERSION})`];
  const names = ["x", "w", "b"].filter((n) => shapes[n]);
  if (source === "random") {
    lines.push(`rng = np.random.default_rng(${spec.seed})  # the page's data: x, w, b drawn in this order`);
    for (const n of names) lines.push(`${n} = rng.uniform(-1, 1, ${list(shapes[n])}).astype(np.float32)`);
  } else {
    for (const n of names) {
      if (source === "pasted" && spec.pasted[n].length <= INLINE_MAX) {
        lines.push(`${n} = np.array(${list(spec.pasted[n])}, np.float32).reshape(${list(shapes[n])})`);
      } else {
        lines.push(`${n} = np.load(${JSON.stringify(spec.files?.[n] || `${n}.npy`)})  # shape ${list(shapes[n])}`);
      }
    }
  }
  const args = names.map((n) => `${n}=${n}`);
  for (const [k, v] of Object.entries(attrs)) args.push(`${k}=${pyValue(v)}`);
  if (variant) args.push(`variant=${JSON.stringify(variant)}`);
  lines.push(`out = await kernel(${args.join(", ")})`);
  lines.push('y, meta = out["y"], out["meta"]  # numpy array; {"variant", "reason", "gpu_ms", ...}');
  return lines.join("\n");
}
