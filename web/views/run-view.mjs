// The Run view: a form for one request (every attribute from manifest.json, fields per spatial rank),
// live output-shape preview, errors next to the field they name, a GPU run with its result plotted,
// a check against the float64 CPU reference, the output as .npy, and the same call as code.
import { callPythonNow } from "../runtime/index.mjs";
import { drawHeatmap, drawLine } from "./plots.mjs";
import { jsSnippet, pySnippet } from "./snippets.mjs";

const $ = (id) => document.getElementById(id);
const form = $("request");
const INPUTS = ["x", "w", "b"];
const AXES = { 1: ["L"], 2: ["H", "W"], 3: ["D", "H", "W"] };
const DEFAULT_SHAPES = { 1: ["1, 2, 16", "2, 3, 4"], 2: ["1, 2, 8, 8", "2, 3, 3, 3"], 3: ["1, 2, 4, 6, 6", "2, 3, 3, 3, 3"] };

const parseList = (text) => text.split(/[\s,\[\]()]+/).filter(Boolean).map(Number);
const size = (shape) => shape.reduce((a, d) => a * d, 1);

let manifest, kernel = null, adapterName = "–";
const loaded = {}; // .npy files the user picked: name -> {data, shape, dtype, file}
let last = null, downloadUrl = null;

// ------------------------------------------------------------------------------------------- the form
function axisLabels(count, rank) {
  const axes = AXES[rank];
  if (count === 2 * rank) return [...axes.map((a) => `${a} begin`), ...axes.map((a) => `${a} end`)];
  return axes;
}

function attributeFields(rank) {
  const box = $("attributes");
  box.querySelectorAll(".field").forEach((f) => f.remove());
  for (const [name, spec] of Object.entries(manifest.attributes)) {
    const field = document.createElement("div");
    field.className = "field";
    field.dataset.field = name;
    const title = document.createElement("span");
    title.className = "name";
    title.textContent = name;
    if (spec.doc) title.title = spec.doc;
    field.append(title);
    const row = document.createElement("div");
    row.className = "axes";
    if (spec.type === "string") {
      const select = document.createElement("select");
      select.name = `attr_${name}`;
      select.setAttribute("aria-label", name);
      for (const option of spec.allowed) select.append(new Option(option, option, option === spec.default, option === spec.default));
      row.append(select);
    } else {
      const count = spec.type === "int" ? 1 : spec.length === "2n" ? 2 * rank : rank;
      const labels = spec.type === "int" ? [""] : axisLabels(count, rank);
      labels.forEach((axis, i) => {
        const label = document.createElement("label");
        const input = document.createElement("input");
        input.type = "number";
        input.name = spec.type === "int" ? `attr_${name}` : `attr_${name}_${i}`;
        input.min = String(spec.min ?? 0);
        input.setAttribute("aria-label", axis ? `${name} ${axis}` : name);
        const fallback = spec.type === "int" ? spec.default : spec.per_axis_default;
        input.placeholder = fallback == null ? "–" : String(fallback);
        label.append(axis ? `${axis}` : "", input);
        row.append(label);
      });
    }
    const error = document.createElement("small");
    error.className = "field-error";
    error.dataset.errorFor = name;
    field.append(row, error);
    box.append(field);
  }
}

function readAttributes() {
  const rank = Number(form.rank.value);
  const attrs = {};
  for (const [name, spec] of Object.entries(manifest.attributes)) {
    if (spec.type === "string") {
      const value = form[`attr_${name}`].value;
      if (value !== spec.default) attrs[name] = value;
    } else if (spec.type === "int") {
      const text = form[`attr_${name}`].value.trim();
      if (text) attrs[name] = Number(text);
    } else {
      const count = spec.length === "2n" ? 2 * rank : rank;
      const texts = Array.from({ length: count }, (_, i) => form[`attr_${name}_${i}`].value.trim());
      // All empty: the ONNX default. Partly filled: empty axes take the per-axis default where there is one.
      if (texts.some(Boolean)) attrs[name] = texts.map((t) => (t ? Number(t) : spec.per_axis_default ?? null));
    }
  }
  return attrs;
}

function setRank(rank, { resetShapes }) {
  form.rank.value = String(rank);
  if (resetShapes) [form.x_shape.value, form.w_shape.value] = DEFAULT_SHAPES[rank];
  attributeFields(rank);
}

function readShapes() {
  const x = parseList(form.x_shape.value), w = parseList(form.w_shape.value);
  const attrs = readAttributes();
  const group = Number.isInteger(attrs.group) && attrs.group > 0 ? attrs.group : 1;
  let b = null;
  if (form.use_bias.checked) b = form.source.value === "npy" && loaded.b ? loaded.b.shape : [(w[1] ?? 0) * group];
  return { x, w, b, attrs };
}

function showSources() {
  const source = form.source.value;
  form.querySelectorAll("[data-source]").forEach((node) => { node.hidden = node.dataset.source !== source; });
}

// ---------------------------------------------------------------------------------- errors by field
function clearErrors() {
  form.querySelectorAll(".field.invalid").forEach((f) => f.classList.remove("invalid"));
  form.querySelectorAll("[aria-invalid]").forEach((i) => i.removeAttribute("aria-invalid"));
  form.querySelectorAll(".field-error").forEach((e) => { e.textContent = ""; });
  $("error").textContent = "";
}

/** Puts the message next to the field it names; returns false when no field of the form matches. */
function showFieldError(field, message) {
  const slot = field && form.querySelector(`[data-error-for="${field}"]`);
  if (!slot) return false;
  slot.textContent = message;
  const box = slot.closest(".field");
  box.classList.add("invalid");
  box.querySelectorAll("input, select, textarea").forEach((i) => i.setAttribute("aria-invalid", "true"));
  return true;
}

function showError({ error, field }) {
  if (!showFieldError(field, error)) $("error").textContent = error;
}

// ------------------------------------------------------------------------------------ live preview
function preview() {
  clearErrors();
  const { x, w, b, attrs } = readShapes();
  $("b-shape").textContent = b ? `[${b.join(", ")}]` : "";
  const res = py("preview", { x_shape: x, w_shape: w, b_shape: b, ...attrs });
  const line = $("shape-preview");
  if (res.error) {
    line.textContent = "Output shape: –";
    line.className = "error";
    showError(res);
  } else {
    line.textContent = `Output shape: [${res.y_shape.join(", ")}]`;
    line.className = "ok";
  }
  updateCode();
  return !res.error;
}

function codeSpec() {
  const { x, w, b, attrs } = readShapes();
  const pasted = {};
  for (const n of INPUTS) pasted[n] = parseList(form[`${n}_data`].value);
  const files = Object.fromEntries(Object.entries(loaded).map(([n, t]) => [n, t.file]));
  return { shapes: { x, w, b }, attrs, variant: form.variant.value, source: form.source.value,
    seed: Number(form.seed.value) | 0, pasted, files };
}

function updateCode() {
  const spec = codeSpec();
  $("code-js").textContent = jsSnippet(spec);
  $("code-py").textContent = pySnippet(spec);
}

// ------------------------------------------------------------------------------------------ the data
async function loadNpy(name, file) {
  delete loaded[name];
  document.querySelector(`[data-note-for="${name}"]`).textContent = "";
  if (!file) return;
  const res = py("load_npy", new Uint8Array(await file.arrayBuffer()));
  clearErrors();
  if (res.error) {
    showFieldError(`${name}_data`, `${file.name}: ${res.error}`);
    return;
  }
  const bytes = res.data.slice().buffer;
  loaded[name] = { shape: res.shape, dtype: res.dtype, file: file.name,
    data: res.dtype === "float16" ? new Uint16Array(bytes) : new Float32Array(bytes) };
  document.querySelector(`[data-note-for="${name}"]`).textContent =
    `${file.name}: shape [${res.shape.join(", ")}], ${res.dtype}${res.note ? ` (${res.note})` : ""}`;
  // The file's shape is the tensor's shape: the shape fields follow it.
  if (name === "x") {
    form.x_shape.value = res.shape.join(", ");
    if ([1, 2, 3].includes(res.shape.length - 2) && res.shape.length - 2 !== Number(form.rank.value)) {
      setRank(res.shape.length - 2, { resetShapes: false });
    }
  }
  if (name === "w") form.w_shape.value = res.shape.join(", ");
  if (name === "b") form.use_bias.checked = true;
  preview();
}

/** The request as getKernel takes it, or null after showing what is missing or malformed. */
function buildRequest() {
  const { x, w, b, attrs } = readShapes();
  const shapes = { x, w, b };
  const source = form.source.value;
  const tensors = {};
  if (source === "random") {
    const bytes = py("random_inputs", { x, w, b }, Number(form.seed.value) | 0);
    for (const n of INPUTS) if (shapes[n]) tensors[n] = { data: new Float32Array(bytes[n].slice().buffer), shape: shapes[n] };
  } else {
    for (const n of INPUTS) {
      if (!shapes[n]) continue;
      if (source === "pasted") {
        const tokens = form[`${n}_data`].value.split(/[\s,\[\]()]+/).filter(Boolean);
        const bad = tokens.find((t) => !Number.isFinite(Number(t)) && !/^[-+]?(inf|infinity|nan)$/i.test(t));
        if (bad !== undefined) {
          showFieldError(`${n}_data`, `'${bad}' is not a number`);
          return null;
        }
        tensors[n] = { data: Float32Array.from(tokens, (t) => Number(t.replace(/^([-+]?)inf(inity)?$/i, "$1Infinity"))), shape: shapes[n] };
      } else {
        if (!loaded[n]) {
          showFieldError(`${n}_data`, `pick a .npy file for ${n}`);
          return null;
        }
        tensors[n] = { data: loaded[n].data, shape: shapes[n], dtype: loaded[n].dtype };
      }
    }
  }
  const req = { ...tensors, ...attrs };
  if (form.variant.value) req.variant = form.variant.value;
  return req;
}

// -------------------------------------------------------------------------------------- the result
function halfToFloat(bits) {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i], s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    out[i] = e === 0 ? s * 2 ** -14 * (f / 1024) : e === 31 ? (f ? NaN : s * Infinity) : s * 2 ** (e - 15) * (1 + f / 1024);
  }
  return out;
}

function plot() {
  const { values, shape } = last;
  const rank = shape.length - 2;
  const [N, M] = shape;
  const box = $("plot");
  box.hidden = values.length === 0;
  if (box.hidden) return;
  const sliders = { n: document.querySelector("[name=plot_n]"), c: document.querySelector("[name=plot_c]"),
    d: document.querySelector("[name=plot_d]") };
  sliders.n.max = String(N - 1);
  sliders.c.max = String(M - 1);
  $("plot-d-label").hidden = rank !== 3;
  if (rank === 3) sliders.d.max = String(shape[2] - 1);
  for (const k of ["n", "c", "d"]) {
    if (Number(sliders[k].value) > Number(sliders[k].max)) sliders[k].value = sliders[k].max;
    $(`plot-${k}`).textContent = sliders[k].value;
  }
  const n = Number(sliders.n.value), c = Number(sliders.c.value), d = Number(sliders.d.value);
  const spatial = shape.slice(2);
  const sliceSize = size(spatial);
  let range, where;
  $("out-canvas").classList.toggle("line", rank === 1); // smooth scaling for the line, square pixels for heatmaps
  if (rank === 1) {
    range = drawLine($("out-canvas"), values, (n * M + c) * sliceSize, spatial[0]);
    where = `y[${n}, ${c}, :]`;
  } else if (rank === 2) {
    range = drawHeatmap($("out-canvas"), values, (n * M + c) * sliceSize, spatial[0], spatial[1]);
    where = `y[${n}, ${c}, :, :]`;
  } else {
    const plane = spatial[1] * spatial[2];
    range = drawHeatmap($("out-canvas"), values, (n * M + c) * sliceSize + d * plane, spatial[1], spatial[2]);
    where = `y[${n}, ${c}, ${d}, :, :]`;
  }
  $("plot-legend").textContent = `${where}: min ${range.min.toPrecision(4)}, max ${range.max.toPrecision(4)}` +
    (rank === 1 ? "" : " · blue < 0 < red");
}

function showResult(y, meta, wallMs) {
  const values = y.dtype === "float16" ? halfToFloat(y.data) : y.data;
  last = { ...last, y, values, shape: y.shape };
  $("out-shape").textContent = `[${y.shape.join(", ")}] ${y.dtype}`;
  $("out-variant").textContent = meta.variant;
  $("out-reason").textContent = meta.reason ?? "–";
  $("out-time").textContent = meta.gpu_ms == null ? "n/a (the adapter has no timestamp-query)" : `${meta.gpu_ms.toFixed(3)} ms`;
  $("out-wall").textContent = `${wallMs.toFixed(1)} ms (validation, upload, dispatch, readback)`;
  $("out-adapter").textContent = adapterName;
  $("out-values").textContent = Array.from(values.slice(0, 8), (v) => v.toPrecision(5)).join(", ") + (values.length > 8 ? ", …" : "");
  $("out-check").textContent = "–";
  plot();
  const npy = py("to_npy", new Uint8Array(y.data.buffer, y.data.byteOffset, y.data.byteLength), y.shape, y.dtype);
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = URL.createObjectURL(new Blob([npy], { type: "application/octet-stream" }));
  const link = $("download");
  link.href = downloadUrl;
  link.hidden = false;
  link.textContent = `Download y.npy (${npy.length.toLocaleString()} bytes)`;
  $("check").disabled = false;
  $("result").dataset.runs = String(Number($("result").dataset.runs ?? 0) + 1);
}

function check() {
  const ref = kernel.reference(last.req);
  let maxAbs = 0, maxRel = 0, worst = 0;
  const f16 = last.y.dtype === "float16";
  const [atol, rtol] = f16 ? [2e-3, 2e-3] : [1e-4, 1e-4];
  ref.data.forEach((r, i) => {
    const d = Math.abs(r - last.values[i]);
    if (Number.isNaN(d)) { if (!(Number.isNaN(r) && Number.isNaN(last.values[i]))) worst = Infinity; return; }
    maxAbs = Math.max(maxAbs, d);
    maxRel = Math.max(maxRel, d / Math.max(Math.abs(r), 1e-6));
    worst = Math.max(worst, d / (atol + rtol * Math.abs(r)));
  });
  const ok = worst <= 1;
  const text = `${ok ? "✓" : "✗"} max abs error ${maxAbs.toExponential(2)}, max rel error ${maxRel.toExponential(2)} ` +
    `vs the float64 reference (${ok ? "within" : "outside"} atol ${atol} + rtol ${rtol}·|ref|)`;
  $("out-check").textContent = text;
  $("out-check").className = ok ? "ok" : "error";
}

// ---------------------------------------------------------------------------------------- wiring
const py = callPythonNow;

/** Sets the form up as soon as the Python runtime is there (preview works without a GPU). */
export function initRunForm(loadedManifest) {
  manifest = loadedManifest;
  setRank(2, { resetShapes: false });
  for (const name of py("variant_names")) form.variant.append(new Option(name, name));
  showSources();
  form.rank.addEventListener("change", () => { setRank(Number(form.rank.value), { resetShapes: true }); preview(); });
  form.x_shape.addEventListener("change", () => {
    const rank = parseList(form.x_shape.value).length - 2;
    if ([1, 2, 3].includes(rank) && rank !== Number(form.rank.value)) { setRank(rank, { resetShapes: false }); preview(); }
  });
  form.addEventListener("input", (event) => {
    if (event.target.type === "file") return;
    if (event.target.name === "source") showSources();
    preview();
  });
  for (const n of INPUTS) form[`${n}_file`].addEventListener("change", (e) => loadNpy(n, e.target.files[0]));
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", async () => {
      const text = $(button.dataset.copy).textContent;
      try {
        await navigator.clipboard.writeText(text);
        button.textContent = "Copied";
      } catch {
        getSelection().selectAllChildren($(button.dataset.copy));
        button.textContent = "Selected: press Ctrl+C";
      }
      setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
  }
  document.querySelectorAll(".plot-controls input").forEach((s) => s.addEventListener("input", () => last && plot()));
  preview();
}

/** Turns Run and Check on once the kernel (and so the GPU) is ready. */
export function enableRun(readyKernel, adapter) {
  kernel = readyKernel;
  adapterName = adapter;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!preview()) return;
    const req = buildRequest();
    if (!req) return;
    const problem = kernel.validate(req);
    if (problem.error) {
      // preview() has accepted every shape, so a refusal naming an input is about its data or dtype: the data
      // field is where the user fixes it
      const field = INPUTS.includes(problem.field) ? `${problem.field}_data` : problem.field;
      showError({ ...problem, field });
      return;
    }
    $("run").disabled = true;
    try {
      const start = performance.now();
      const { y, meta } = await kernel(req);
      last = { req };
      showResult(y, meta, performance.now() - start);
      window.dispatchEvent(new Event("gpu-work"));
    } catch (err) {
      $("error").textContent = String(err.message ?? err).split("\n").filter(Boolean).slice(-1)[0];
    } finally {
      $("run").disabled = false;
    }
  });
  $("check").addEventListener("click", check);
  $("run").disabled = false;
}
