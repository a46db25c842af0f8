// The Benchmarks view: bench.json's cases of one tier, our kernel (the planner's choice) and, when the
// module is there, onnxruntime-web on the same case; a table and a bar chart of median GPU time. Below them,
// the drop zone for an .onnx file's layers (model-drop.mjs).
import { initModelDrop } from "./model-drop.mjs";
import { drawBars } from "./plots.mjs";
import { tuneRows } from "./tune-rows.mjs";

const $ = (id) => document.getElementById(id);
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

let kernel = null, benchDoc = null, cases = [], running = false, stopRequested = false, fallback = false;
let ort = null, ortProblem = null;
const results = new Map(); // case index -> rows

async function loadOrt() {
  try {
    ({ benchOrt: ort } = await import("./ort-bench.mjs"));
    if (typeof ort !== "function") throw new Error("web/views/ort-bench.mjs exports no benchOrt");
    $("bench-ort-status").textContent = "onnxruntime-web: loaded (runs on the same cases, WebGPU execution provider)";
  } catch (err) {
    ort = null;
    ortProblem = String(err.message ?? err);
    $("bench-ort-status").textContent = "onnxruntime-web not available: only our kernel is timed.";
    $("bench-ort-status").title = ortProblem;
    $("bench-ort").checked = false;
    $("bench-ort").disabled = true;
  }
}

const fmt = (v) => (v == null ? "–" : v.toFixed(3));
const describe = (c) => `x[${c.x.join(",")}] w[${c.w.join(",")}]` +
  Object.entries(c.attributes).map(([k, v]) => ` ${k}=${Array.isArray(v) ? v.join(",") : v}`).join("") + (c.bias ? " +b" : "");

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function render() {
  const body = $("bench-table").tBodies[0];
  body.replaceChildren();
  cases.forEach((c, index) => {
    const rows = results.get(index) ?? [{ impl: "–", pending: true }];
    rows.forEach((r, k) => {
      // Every row has the same cells (the case and the Run button only on a case's first row), so that
      // narrow screens can lay rows out as cards.
      const tr = document.createElement("tr");
      tr.dataset.case = c.name;
      tr.className = `${k === 0 ? "first" : "more"}${r.pending ? " pending" : ""}`;
      const name = cell(k === 0 ? c.name : "", "name");
      if (k === 0) {
        const shape = document.createElement("small");
        shape.className = "hint shape";
        shape.textContent = describe(c);
        name.append(shape);
        name.title = c.model;
      }
      const median = cell(r.pending ? "–" : fmt(r.median_ms), "num");
      median.dataset.label = "median ms";
      const min = cell(r.pending ? "–" : fmt(r.min_ms), "num");
      min.dataset.label = "min ms";
      const detail = r.pending ? "not run yet" : r.error ?? r.detail;
      tr.append(name, cell(r.impl, "impl"), cell(detail, r.error ? "error detail" : "detail"), median, min);
      const td = document.createElement("td");
      td.className = "run";
      if (k === 0) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "bench-one";
        button.textContent = "Run";
        button.disabled = running;
        button.addEventListener("click", () => runCases([index]));
        td.append(button);
      }
      tr.append(td);
      body.append(tr);
    });
  });
  const groups = [...results.entries()].sort((a, b) => a[0] - b[0]).map(([index, rows]) => ({
    label: cases[index].name,
    bars: rows.map((r) => ({ name: r.impl, value: r.error ? null : r.median_ms })),
  }));
  const chart = $("bench-chart");
  chart.hidden = groups.length === 0;
  if (groups.length) drawBars(chart, groups);
}

async function runOne(index, runs) {
  const c = cases[index];
  const rows = (await kernel.runBenchCase(index, { runs, warmup: 1 })).map((r) => ({
    impl: "ours (WebGPU, Pyodide)", median_ms: r.median_ms, min_ms: r.min_ms,
    detail: `${r.variant} · ${r.source}${r.gflops ? ` · ${r.gflops.toFixed(2)} GFLOP/s` : ""}`,
  }));
  if (ort && $("bench-ort").checked) {
    try {
      const raw = benchDoc.cases.find((b) => b.name === c.name && b.tier === $("bench-tier").value);
      const out = await ort({ ...raw, fill: benchDoc.fill }, { runs, warmup: 1, ep: "webgpu" });
      for (const r of Array.isArray(out) ? out : [out]) {
        rows.push({ impl: r.impl ?? "onnxruntime-web", median_ms: r.median_ms, min_ms: r.min_ms,
          detail: r.source ?? "", error: r.error });
      }
    } catch (err) {
      rows.push({ impl: "onnxruntime-web", error: String(err.message ?? err) });
    }
  }
  results.set(index, rows);
}

async function runCases(indices) {
  if (running) return;
  running = true;
  stopRequested = false;
  $("bench-run-all").disabled = true;
  $("bench-tune").disabled = true;
  $("bench-stop").disabled = false;
  render();
  const runs = Math.max(1, Number($("bench-runs").value) | 0);
  const status = $("bench-status");
  status.className = "";
  const start = performance.now();
  try {
    for (const [k, index] of indices.entries()) {
      if (stopRequested) break;
      status.textContent = `Running ${cases[index].name} (${k + 1} / ${indices.length}), ${runs} timed runs after 1 warm-up…`;
      await nextTask();
      try {
        await runOne(index, runs);
      } catch (err) {
        results.set(index, [{ impl: "ours (WebGPU, Pyodide)", error: String(err.message ?? err).split("\n").filter(Boolean).slice(-1)[0] }]);
      }
      render();
    }
    status.textContent = `${stopRequested ? "Stopped" : "Done"}: ${indices.length} case(s) in ${((performance.now() - start) / 1000).toFixed(1)} s` +
      " · median GPU time per case (timestamp-query where the adapter has it, else wall time)";
  } finally {
    running = false;
    $("bench-run-all").disabled = false;
    $("bench-tune").disabled = false;
    $("bench-stop").disabled = true;
    render();
    window.dispatchEvent(new Event("gpu-work"));
  }
}

// Tuning: the cases run so far (or every case of the tier), tile grids and variant choice, each candidate
// checked against the float64 reference; the table then applies to this page's later runs.
async function tune() {
  if (running) return;
  running = true;
  for (const id of ["bench-run-all", "bench-tune"]) $(id).disabled = true;
  render();
  const ran = [...results.keys()];
  const indices = ran.length ? ran : cases.map((_, i) => i);
  const status = $("bench-tune-status");
  $("bench-tuning").hidden = false;
  status.className = "";
  status.textContent = `Tuning ${indices.length} case(s)…`;
  const start = performance.now();
  try {
    const { table, file } = await kernel.tuneBench(JSON.stringify(benchDoc), indices, {
      runs: Math.max(1, Number($("bench-runs").value) | 0),
      progress: (line) => { status.textContent = line; },
    });
    const body = $("bench-tune-table").querySelector("tbody");
    body.replaceChildren();
    for (const cells of tuneRows(table)) {
      const tr = document.createElement("tr");
      for (const text of cells) tr.append(cell(text));
      body.append(tr);
    }
    const rejected = table.rejected.length;
    status.textContent = `Tuned ${table.measured.length} case(s) in ${((performance.now() - start) / 1000).toFixed(1)} s; ` +
      `${rejected ? `${rejected} case(s) had candidates REJECTED for wrong results` : "every candidate matched the reference"}; ` +
      "the table now applies to this page's runs.";
    status.className = rejected ? "error" : "ok";
    const link = $("bench-tune-download");
    link.href = URL.createObjectURL(new Blob([JSON.stringify(table, null, 1)], { type: "application/json" }));
    link.download = file;
    link.textContent = `Download the table (${file}: commit it under tuning/ to ship it)`;
    link.hidden = false;
  } catch (err) {
    status.textContent = `Tuning failed: ${String(err.message ?? err).split("\n").filter(Boolean).slice(-1)[0]}`;
    status.className = "error";
  } finally {
    running = false;
    for (const id of ["bench-run-all", "bench-tune"]) $(id).disabled = false;
    render();
    window.dispatchEvent(new Event("gpu-work"));
  }
}

function loadTier() {
  const tier = $("bench-tier").value;
  cases = kernel.loadBench(JSON.stringify(benchDoc), tier);
  results.clear();
  $("bench-note").textContent = tier === "full" && fallback
    ? "The full tier holds real model sizes: on this software adapter a case can take minutes."
    : `${cases.length} cases in the ${tier} tier (${benchDoc.tiers?.[tier] ?? ""}).`;
  render();
}

export async function initBench(readyKernel, deviceInfo) {
  kernel = readyKernel;
  fallback = Boolean(deviceInfo?.is_fallback);
  const response = await fetch("bench.json");
  benchDoc = await response.json();
  $("bench-tier").value = fallback ? "small" : "full";
  $("bench-tier").addEventListener("change", () => { if (!running) loadTier(); });
  $("bench-run-all").addEventListener("click", () => runCases(cases.map((_, i) => i)));
  $("bench-stop").addEventListener("click", () => { stopRequested = true; });
  $("bench-tune").addEventListener("click", tune);
  $("bench-run-all").disabled = false;
  $("bench-tune").disabled = false;
  loadTier();
  await loadOrt();
  initModelDrop(kernel);
}
