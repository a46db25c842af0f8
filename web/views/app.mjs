// The app: one page, three views (#/run, #/tests, #/bench) sharing one Pyodide and one GPU device, and a
// device panel on top. Sets window.getKernel and window.appReady (resolves once the kernel is ready).
import { bootApp, bootPhases, getKernel } from "../runtime/index.mjs";
import { CONTRACT_VERSION, KERNEL_ID } from "../runtime/contract.mjs";
import { initBench } from "./bench-view.mjs";
import { adapterLabel, showDevice, showDeviceProblem, webgpuMissingReason } from "./device-panel.mjs";
import { enableRun, initRunForm } from "./run-view.mjs";
import { initTests } from "./tests-view.mjs";

const $ = (id) => document.getElementById(id);
const VIEWS = ["run", "tests", "bench"];

function route() {
  const name = location.hash.replace(/^#\/?/, "");
  const view = VIEWS.includes(name) ? name : "run";
  for (const section of document.querySelectorAll(".view")) section.hidden = section.dataset.view !== view;
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${{ run: "Run", tests: "Tests", bench: "Benchmarks" }[view]} · ConvTranspose on WebGPU`;
}

const lastLine = (err) => String(err?.message ?? err).split("\n").filter(Boolean).slice(-1)[0];

async function start() {
  const status = $("status");
  const progress = (message) => { status.textContent = message; };
  const missing = webgpuMissingReason();
  if (missing) showDeviceProblem(missing);
  const booting = bootApp({ progress }); // Pyodide starts at once; the manifest loads meanwhile
  const manifest = await (await fetch("manifest.json")).json();
  const { loadMs } = await booting;
  initRunForm(manifest); // the preview needs Python only, not the GPU
  progress("Opening the WebGPU device…");
  let kernel;
  try {
    kernel = await getKernel(KERNEL_ID, { version: CONTRACT_VERSION });
  } catch (err) {
    if (!missing) showDeviceProblem(`WebGPU could not start: ${lastLine(err)}`);
    throw new Error(missing ?? lastLine(err));
  }
  window.getKernel = getKernel;
  const info = kernel.device();
  showDevice(info);
  // Views announce finished GPU work; the panel re-reads the device (live keys such as memory in use).
  window.addEventListener("gpu-work", () => showDevice(kernel.device()));
  const adapter = adapterLabel(info) + (info.is_fallback ? " (software fallback)" : "");
  enableRun(kernel, adapter);
  initTests(kernel);
  await initBench(kernel, info);
  // each start-up phase, as the runtime timed it (docs/npm.md "Start-up")
  const phases = bootPhases().map((p) => `${p.phase} ${((p.ms ?? 0) / 1000).toFixed(1)} s`).join(", ");
  status.textContent = `Ready (Python runtime loaded in ${(loadMs / 1000).toFixed(1)} s: ${phases})`;
  $("loading").classList.add("done");
  return true;
}

route();
window.addEventListener("hashchange", route);
window.appReady = start();
window.appReady.catch((err) => {
  $("status").textContent = `Failed: ${lastLine(err)}`;
  $("status").className = "error";
  $("loading").classList.add("done");
});
