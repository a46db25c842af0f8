// The run page: a form for every attribute (from manifest.json), Run on the GPU, check against CPU.
import { bootApp, getKernel } from "./boot.mjs";

const $ = (id) => document.getElementById(id);
const form = $("request");
const KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose";

const parseList = (text) => text.split(/[\s,\[\]]+/).filter(Boolean).map(Number);

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function attributeFields(manifest) {
  const box = $("attributes");
  for (const [name, spec] of Object.entries(manifest.attributes)) {
    const label = document.createElement("label");
    const hint = spec.type === "string" ? spec.allowed.join(" | ") : spec.type === "ints" ? `${spec.length} ints` : "int";
    label.textContent = `${name} (${hint})`;
    let input;
    if (spec.type === "string") {
      input = document.createElement("select");
      for (const option of spec.allowed) input.append(new Option(option, option, option === spec.default));
    } else {
      input = document.createElement("input");
      input.placeholder = spec.default === null ? "default" : String(spec.default);
    }
    input.name = `attr_${name}`;
    input.dataset.kind = spec.type;
    label.append(input);
    box.append(label);
  }
}

function readAttributes() {
  const attrs = {};
  for (const el of form.querySelectorAll("[name^=attr_]")) {
    const name = el.name.slice(5);
    const text = el.value.trim();
    if (!text) continue;
    attrs[name] = el.dataset.kind === "string" ? text : el.dataset.kind === "int" ? Number(text) : parseList(text);
  }
  return attrs;
}

function readShapes() {
  const x = parseList(form.x_shape.value), w = parseList(form.w_shape.value);
  const attrs = readAttributes();
  const group = attrs.group ?? 1;
  const b = form.use_bias.checked ? [(w[1] ?? 0) * group] : null;
  return { x, w, b, attrs };
}

function readRequest() {
  const { x, w, b, attrs } = readShapes();
  const size = (shape) => shape.reduce((a, d) => a * d, 1);
  let data;
  if (form.source.value === "random") {
    const rand = mulberry32(Number(form.seed.value) | 0);
    const fill = (shape) => Float32Array.from({ length: size(shape) }, () => rand() * 2 - 1);
    data = { x: fill(x), w: fill(w), b: b && fill(b) };
  } else {
    data = { x: parseList(form.x_data.value), w: parseList(form.w_data.value), b: b && parseList(form.b_data.value) };
  }
  const req = { x: { data: data.x, shape: x }, w: { data: data.w, shape: w }, ...attrs };
  if (b) req.b = { data: data.b, shape: b };
  return req;
}

function fmt(values, count = 8) {
  return Array.from(values.slice(0, count), (v) => v.toPrecision(5)).join(", ") + (values.length > count ? ", …" : "");
}

async function main() {
  const status = $("status");
  window.appReady = (async () => {
    const manifest = await (await fetch("manifest.json")).json();
    attributeFields(manifest);
    const { loadMs, bridge, pyodide } = await bootApp({ progress: (m) => { status.textContent = m; } });
    const kernel = await getKernel(KERNEL_ID, { version: 1 });
    window.getKernel = getKernel;
    const dev = kernel.device();
    $("device").textContent = `Adapter: ${dev.vendor} ${dev.architecture} ${dev.device}`.trim() +
      (dev.is_fallback ? " (software fallback adapter: expect low speed)" : "") +
      ` · features: ${dev.features.join(", ") || "none"}`;
    status.textContent = `Ready (Python runtime loaded in ${(loadMs / 1000).toFixed(1)} s)`;
    const preview = () => {
      const { x, w, b, attrs } = readShapes();
      const res = bridge.preview(pyodide.toPy({ x_shape: x, w_shape: w, b_shape: b, ...attrs })).toJs({ dict_converter: Object.fromEntries });
      $("shape-preview").textContent = res.error ? `✗ ${res.error}` : `Output shape: [${res.y_shape.join(", ")}]`;
      $("shape-preview").className = res.error ? "error" : "";
    };
    form.addEventListener("input", preview);
    preview();
    let last = null;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      $("error").textContent = "";
      try {
        const req = readRequest();
        const start = performance.now();
        const { y, meta } = await kernel(req);
        last = { req, y };
        $("out-shape").textContent = `[${y.shape.join(", ")}]`;
        $("out-variant").textContent = `${meta.variant} — ${meta.reason}`;
        $("out-time").textContent = meta.gpu_ms == null ? "n/a (no timestamp-query)" : `${meta.gpu_ms.toFixed(3)} ms`;
        $("out-wall").textContent = `${(performance.now() - start).toFixed(1)} ms`;
        $("out-values").textContent = fmt(y.data);
        $("out-check").textContent = "–";
        $("check").disabled = false;
      } catch (err) {
        $("error").textContent = String(err.message ?? err).split("\n").filter(Boolean).slice(-1)[0];
      }
    });
    $("check").addEventListener("click", () => {
      const ref = kernel.reference(last.req);
      let maxAbs = 0, maxRel = 0;
      ref.data.forEach((r, i) => {
        const d = Math.abs(r - last.y.data[i]);
        maxAbs = Math.max(maxAbs, d);
        maxRel = Math.max(maxRel, d / Math.max(Math.abs(r), 1e-12));
      });
      $("out-check").textContent = `max abs error ${maxAbs.toExponential(2)}, max rel error ${maxRel.toExponential(2)} vs float64 reference`;
    });
    $("run").disabled = false;
    return true;
  })();
  window.appReady.catch((err) => { status.textContent = `Failed: ${err.message ?? err}`; status.className = "error"; });
}

main();
