// The Benchmarks view's drop zone: an .onnx file dropped (or picked) is read in the page with protobufjs and
// ONNX's schema (onnx-convtranspose.mjs), its ConvTranspose nodes listed, and each runnable layer run on our
// kernel with the model's weights (constant) on seeded inputs, checked against onnxruntime-web's y in this
// page where ORT is there and runs the layer, else against the float64 reference (the app's Python). A
// table and a bar chart of the median end-to-end times. `python -m app model` is the same from a shell,
// with onnx's shape inference (the page sizes tensors from the file's shapes: see convTransposeLayers).
import { callPython } from "../runtime/index.mjs";
import { drawBars } from "./plots.mjs";

const $ = (id) => document.getElementById(id);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const OURS = "ours (WebGPU, Pyodide)", ORT = "onnxruntime-web webgpu";
// A dropped file is untrusted: bounds checked before anything is allocated (app/host/model_runner.py has the
// same rules for the shell tool).
const MAX_FILE_BYTES = 512 * 1024 * 1024;
const LAYER_BUDGET_BYTES = 512 * 1024 * 1024;  // x, w, b, y and the copies a layer's run holds, estimated
const MAX_LAYERS = 500;
const elements = (shape) => shape.reduce((a, b) => a * b, 1);

/** Why a layer would not fit the page's memory budget, or null: x, w, y held about four times (ours, ORT's or
 * the float64 reference's, and the copies between them). */
function overBudget(layer) {
  const bytes = 4 * 4 * (elements(layer.x_shape) + elements(layer.w_shape) + elements(layer.y_shape) + (layer.b?.length ?? 0));
  return bytes > LAYER_BUDGET_BYTES
    ? `needs about ${(bytes / 2 ** 20).toFixed(0)} MiB in the page, past its budget of ${LAYER_BUDGET_BYTES / 2 ** 20} MiB` : null;
}
let kernel = null, busy = false;

/** test.json's tolerance (tools/gen_test_cases.py, app/host/model_runner.py): R products summed per output. */
function tolerance(layer) {
  const [c, , ...k] = layer.w_shape;
  const r = Math.max(1, (c / (layer.attributes.group ?? 1)) * k.reduce((a, b) => a * b, 1));
  return { atol: Math.min(Math.max(1e-5 * r, 1e-5), 1e-3), rtol: 1e-4 };
}

/** Seeded uniform [-1, 1) (mulberry32): the same x for a layer each time the file is dropped. */
function seeded(count, seed) {
  let a = seed >>> 0;
  return Float32Array.from({ length: count }, () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  });
}

const dims = (s) => s.join(",");
const describe = (l) => `x[${dims(l.x_shape)}] w[${dims(l.w_shape)}]${l.b ? " +b" : ""}` +
  Object.entries(l.attributes).map(([k, v]) => ` ${k}=${Array.isArray(v) ? v.join(",") : v}`).join("") +
  ` -> y[${dims(l.y_shape)}]`;

function check(got, want, tol) {
  let err = 0, ok = got.length === want.length;
  for (let i = 0; ok && i < got.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    err = Math.max(err, d);
    if (!(d <= tol.atol + tol.rtol * Math.abs(want[i]))) ok = false;
  }
  return { ok, err };
}

async function timed(runs, fn) {
  let out;
  const times = [];
  for (let i = 0; i <= runs; i++) {  // one warm-up
    const start = performance.now();
    out = await fn();
    if (i > 0) times.push(performance.now() - start);
  }
  return { out, ms: median(times) };
}

async function runLayer(layer, runs, ort) {
  const x = seeded(layer.x_shape.reduce((a, b) => a * b, 1), layer.index + 1);
  const request = { x: { data: x, shape: layer.x_shape }, w: { data: layer.w, shape: layer.w_shape, constant: true },
                    ...(layer.b ? { b: { data: layer.b, shape: [layer.b.length], constant: true } } : {}), ...layer.attributes };
  const ours = await timed(runs, () => kernel(request));
  const row = { variant: ours.out.meta.variant, ours_ms: ours.ms, ort_ms: null };
  let want = null;
  if (ort) {
    try {
      const bytes = ort.convTransposeModel({ x: layer.x_shape, w: layer.w_shape, bias: !!layer.b, attributes: layer.attributes,
                                             w_data: layer.w, b_data: layer.b ?? null });
      const session = await ort.ortModel("webgpu", bytes, { input: "x", output: "y", dims: layer.x_shape, data: x });
      try {
        const theirs = await timed(runs, () => session.e2e());
        row.ort_ms = theirs.ms;
        want = theirs.out;
        row.against = "onnxruntime-web's y";
      } finally {
        await session.close();
      }
    } catch (err) {
      row.ort_error = ort.ortMessage(err);
    }
  }
  if (!want) {
    want = kernel.reference(request).data;
    row.against = `the float64 reference${row.ort_error ? ` (onnxruntime-web: ${row.ort_error})` : ""}`;
  }
  const tol = tolerance(layer);
  const { ok, err } = check(ours.out.y.data, want, tol);
  return { ...row, status: ok ? "PASS" : "FAIL", detail: `against ${row.against}: max abs err ${err.toExponential(2)} (atol ${tol.atol.toPrecision(2)})` };
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function render(rows) {
  const body = $("model-table").tBodies[0];
  body.replaceChildren(...rows.map((r) => {
    const tr = document.createElement("tr");
    tr.dataset.node = r.name;
    const fmt = (v) => (v == null ? "–" : v.toFixed(3));
    tr.append(cell(r.name, "name"), cell(r.shape ?? "", "detail"), cell(r.variant ?? "", "impl"), cell(fmt(r.ours_ms), "num"),
              cell(fmt(r.ort_ms), "num"), cell(r.status ?? "…", r.status === "FAIL" ? "error" : ""), cell(r.detail ?? "", "detail"));
    return tr;
  }));
  const timedRows = rows.filter((r) => r.ours_ms != null);
  const chart = $("model-chart");
  chart.hidden = timedRows.length === 0;
  if (timedRows.length) {
    drawBars(chart, timedRows.map((r) => ({ label: r.name, bars: [{ name: OURS, value: r.ours_ms },
      ...(r.ort_ms != null || r.ort_error ? [{ name: ORT, value: r.ort_ms }] : [])] })));
  }
}

async function loadModule(path) {
  try { return await import(path); } catch (err) { return { problem: String(err.message ?? err) }; }
}

async function runFile(file) {
  if (busy) return;
  busy = true;
  const status = $("model-status");
  status.className = "";
  status.textContent = `Reading ${file.name}…`;
  render([]);
  try {
    const onnx = await loadModule("./onnx-convtranspose.mjs");
    if (onnx.problem) throw new Error(`protobufjs or ONNX's schema did not load (${onnx.problem})`);
    if (file.size > MAX_FILE_BYTES) throw new Error(`the file is ${file.size} bytes, past the ${MAX_FILE_BYTES} the page reads`);
    let model;
    try {
      model = onnx.readModel(new Uint8Array(await file.arrayBuffer()));
    } catch (err) {
      throw new Error(`not an ONNX model (protobufjs: ${String(err.message ?? err).split("\n")[0]})`);
    }
    if (!model.graph || !model.ir_version) throw new Error("not an ONNX model (no graph or IR version in the file)");
    const layers = await onnx.convTransposeLayers(model, (l) =>
      callPython("preview", { x_shape: l.x_shape, w_shape: l.w_shape, b_shape: l.b_shape, ...l.attributes }));
    const ortModule = $("bench-ort").checked ? await loadModule("./ort-bench.mjs") : { problem: "off" };
    const ort = ortModule.problem ? null : { ...ortModule, convTransposeModel: onnx.convTransposeModel };
    const runs = Math.max(1, Number($("bench-runs").value) | 0);
    const rows = layers.map((l, i) => {
      if (i >= MAX_LAYERS) return { name: l.name, status: "SKIP", detail: `past the first ${MAX_LAYERS} layers` };
      if (l.reason) return { name: l.name, status: l.invalid ? "FAIL" : "SKIP", detail: l.reason + (l.field ? ` (field ${l.field})` : "") };
      const why = overBudget(l);
      return why ? { name: l.name, shape: describe(l), status: "FAIL", detail: why } : { name: l.name, shape: describe(l) };
    });
    render(rows);
    for (const [i, layer] of layers.entries()) {
      if (rows[i].status) continue;
      if (layer.dtype !== "float32") {
        Object.assign(rows[i], { status: "SKIP", detail: "float16 weights: run python -m app model FILE --dtype float16" });
        continue;
      }
      status.textContent = `Running ${layer.name} (${i + 1} / ${layers.length})…`;
      try {
        Object.assign(rows[i], await runLayer(layer, runs, ort));
      } catch (err) {
        const message = String(err.message ?? err).split("\n").filter(Boolean).slice(-1)[0];
        Object.assign(rows[i], { status: /needs the device feature/.test(message) ? "SKIP" : "FAIL", detail: message });
      }
      render(rows);
    }
    const count = (s) => rows.filter((r) => r.status === s).length;
    status.textContent = `Done: ${file.name}, ${rows.length} ConvTranspose node(s): ${count("PASS")} passed, ` +
      `${count("FAIL")} failed, ${count("SKIP")} skipped · median end-to-end ms after 1 warm-up, weights constant`;
    status.className = count("FAIL") ? "error" : "ok";
  } catch (err) {
    status.textContent = `Could not read ${file.name}: ${String(err.message ?? err)}`;
    status.className = "error";
  } finally {
    busy = false;
    window.dispatchEvent(new Event("gpu-work"));
  }
}

export function initModelDrop(readyKernel) {
  kernel = readyKernel;
  const zone = $("model-drop");
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    const file = e.dataTransfer?.files?.[0];
    if (file) runFile(file);
  });
  const input = $("model-file");
  input.disabled = false;
  input.addEventListener("change", () => { if (input.files[0]) runFile(input.files[0]); input.value = ""; });
}
