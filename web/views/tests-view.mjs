// The Tests view: runs a case file (test.json, or one the user picks) in this page, case by case, with a
// progress bar, a live pass/fail table, a failures-only filter and a summary. The page stays responsive:
// every case yields to the next frame before the next one, so the bar moves case by case.
const $ = (id) => document.getElementById(id);
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));
// A task boundary alone need not paint: a run of fast cases could end inside one frame. Hidden tabs draw no frames,
// so a timer stands in for the frame there.
const nextFrame = () => Promise.race([new Promise((resolve) => requestAnimationFrame(() => resolve())),
  new Promise((resolve) => setTimeout(resolve, 100))]);

let kernel = null, running = false, stopRequested = false;

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function addRow(index, r) {
  const tr = document.createElement("tr");
  tr.className = r.status.toLowerCase();
  tr.append(cell(String(index + 1)), cell(r.name, "name"), cell(r.status, "status"), cell(r.variant),
    cell(r.max_abs_err == null ? "–" : r.max_abs_err.toExponential(2), "num"), cell(r.ms.toFixed(1), "num"),
    cell(r.detail, "detail"));
  tr.lastChild.title = r.detail;
  $("tests-table").tBodies[0].append(tr);
}

function summarize(counts, total, seconds, stopped) {
  const summary = $("tests-summary");
  const done = counts.PASS + counts.FAIL + counts.SKIP;
  summary.textContent = `${stopped ? "Stopped" : "Done"}: ${counts.PASS} passed, ${counts.FAIL} failed, ` +
    `${counts.SKIP} skipped of ${total} cases${stopped ? ` (${done} run)` : ""} in ${seconds.toFixed(1)} s`;
  summary.className = counts.FAIL ? "error" : "ok";
}

async function run(label, readText) {
  if (running) return;
  running = true;
  stopRequested = false;
  $("tests-run").disabled = true;
  $("tests-file").disabled = true;
  $("tests-stop").disabled = false;
  $("tests-table").tBodies[0].replaceChildren();
  $("tests-progress").value = 0;
  $("tests-count").textContent = "–";
  const summary = $("tests-summary");
  summary.className = "";
  try {
    summary.textContent = `Loading ${label}…`;
    await nextTask();
    let names;
    try {
      names = kernel.loadCases(await readText());
    } catch (err) {
      summary.textContent = `${label}: ${String(err.message ?? err).split("\n").filter(Boolean).slice(-1)[0]}`;
      summary.className = "error";
      return;
    }
    const counts = { PASS: 0, FAIL: 0, SKIP: 0 };
    const progress = $("tests-progress");
    progress.max = Math.max(1, names.length);
    const start = performance.now();
    summary.textContent = `Running ${names.length} cases from ${label}…`;
    for (let i = 0; i < names.length && !stopRequested; i++) {
      const result = await kernel.runCase(i);
      counts[result.status] += 1;
      addRow(i, result);
      progress.value = i + 1;
      $("tests-count").textContent = `${i + 1} / ${names.length} · ${counts.PASS} passed, ${counts.FAIL} failed, ${counts.SKIP} skipped`;
      await nextFrame(); // let clicks, scrolling and painting through between cases
    }
    summarize(counts, names.length, (performance.now() - start) / 1000, stopRequested);
    window.dispatchEvent(new Event("gpu-work"));
  } finally {
    running = false;
    $("tests-run").disabled = false;
    $("tests-file").disabled = false;
    $("tests-stop").disabled = true;
  }
}

export function initTests(readyKernel) {
  kernel = readyKernel;
  $("tests-run").disabled = false;
  $("tests-file").disabled = false;
  $("tests-run").addEventListener("click", () => run("test.json", async () => {
    const response = await fetch("test.json");
    if (!response.ok) throw new Error(`test.json: HTTP ${response.status}`);
    return response.text();
  }));
  $("tests-file").addEventListener("change", (event) => {
    const file = event.target.files[0];
    if (file) run(file.name, () => file.text());
    event.target.value = "";
  });
  $("tests-stop").addEventListener("click", () => { stopRequested = true; });
  $("tests-failures-only").addEventListener("change", (event) => {
    $("tests-table").classList.toggle("failures-only", event.target.checked);
  });
}
