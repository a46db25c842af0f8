// The device panel every view shows: the adapter, the features and limits the variants depend on, and a
// plain message when WebGPU is missing or the adapter is a software fallback.

// Features and limits the planner and the variants read (app/caps.py, app/variants/*), with why they matter.
const FEATURES = {
  "timestamp-query": "GPU times (else wall time)",
  "subgroups": "subgroup variants",
  "shader-f16": "float16 inputs",
  "chromium-experimental-subgroup-matrix": "subgroup-matrix GEMM variants",
};
const LIMITS = {
  maxComputeWorkgroupStorageSize: "workgroup memory (tiles, staged weights)",
  maxComputeInvocationsPerWorkgroup: "workgroup size",
  maxComputeWorkgroupSizeX: "workgroup width",
  maxComputeWorkgroupsPerDimension: "grid size before folding",
  maxStorageBufferBindingSize: "largest tensor / column buffer",
  maxBufferSize: "largest buffer",
  maxStorageBuffersPerShaderStage: "buffers per kernel",
};
const SHOWN = new Set(["vendor", "architecture", "device", "description", "is_fallback", "features", "limits"]);

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function bytes(n) {
  if (typeof n !== "number" || n < 1024) return String(n);
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n, u = -1;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${n} (${Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]})`;
}

function table(rows) {
  const t = el("table", { className: "kv" });
  for (const [k, v, note] of rows) t.append(el("tr", {}, el("th", { textContent: k }), el("td", { textContent: v }),
    el("td", { className: "hint", textContent: note ?? "" })));
  return t;
}

/** Shows a message instead of device data: WebGPU missing, no adapter, or the device was lost. */
export function showDeviceProblem(message) {
  const panel = document.getElementById("device-panel");
  panel.classList.add("problem");
  panel.open = true;
  document.getElementById("device").textContent = "No WebGPU device";
  document.getElementById("device-details").replaceChildren(el("p", { className: "error", textContent: message }));
}

/** Why WebGPU cannot run here, before trying (null when navigator.gpu exists). */
export function webgpuMissingReason() {
  if (navigator.gpu) return null;
  return window.isSecureContext
    ? "This browser has no WebGPU (navigator.gpu is missing). Use a recent Chrome or Edge (113+) on a machine with a GPU, or enable WebGPU in the browser's flags."
    : "WebGPU needs a secure context: open the app over https:// or from http://127.0.0.1 / http://localhost.";
}

function browserName(userAgent = "") {
  for (const [token, name] of [["Firefox/", "Firefox"], ["Edg/", "Edge"], ["Chrome/", "Chrome"], ["Safari/", "Safari"]]) {
    if (userAgent.includes(token)) return name;
  }
  return null;
}

/** The adapter's name for people: vendor, architecture and device as reported; the description when those
 * are empty; and when everything is empty (Firefox reports no strings at all), what is known instead: the
 * browser whose adapter it is. */
export function adapterLabel(info, userAgent = globalThis.navigator?.userAgent ?? "") {
  const named = [info.vendor, info.architecture, info.device].filter(Boolean).join(" ") || info.description;
  if (named) return named;
  const browser = browserName(userAgent);
  return `${browser ? `${browser}'s ` : ""}WebGPU adapter (no vendor or name reported)`;
}

/** Fills the panel from bridge.device_info; keys it does not know (added later) are shown generically. */
export function showDevice(info) {
  const name = adapterLabel(info);
  const summary = document.getElementById("device");
  summary.textContent = `Device: ${name}${info.is_fallback ? " · software fallback" : ""}`;
  const panel = document.getElementById("device-panel");
  panel.classList.toggle("fallback", Boolean(info.is_fallback));
  const parts = [];
  if (info.is_fallback) {
    parts.push(el("p", { className: "warning", textContent:
      "This is a software fallback adapter (the GPU runs on the CPU): results are right, but times are " +
      "orders of magnitude slower than a real GPU, so keep tensors small and read benchmark ratios, not absolutes." }));
  }
  if (info.description) parts.push(el("p", { className: "hint", textContent: info.description }));
  const features = new Set(info.features ?? []);
  parts.push(el("h3", { textContent: "Features" }), table(Object.entries(FEATURES).map(([f, why]) =>
    [f, features.has(f) ? "✓ yes" : "✗ no", why])));
  const others = [...features].filter((f) => !(f in FEATURES));
  if (others.length) parts.push(el("p", { className: "hint", textContent: `Other features: ${others.join(", ")}` }));
  const limits = info.limits ?? {};
  parts.push(el("h3", { textContent: "Limits" }), table(Object.entries(LIMITS).filter(([k]) => k in limits).map(([k, why]) =>
    [k, bytes(limits[k]), why])));
  const extra = Object.entries(info).filter(([k]) => !SHOWN.has(k));
  if (extra.length) {
    // The planner uses reported subgroup sizes only with the subgroups feature (app/caps.py).
    const note = (k) => (k === "subgroup_sizes" && !features.has("subgroups")
      ? "not used: the device has no subgroups feature" : "");
    parts.push(el("h3", { textContent: "More" }), table(extra.map(([k, v]) =>
      [k, typeof v === "number" && /bytes/i.test(k) ? bytes(v) : typeof v === "object" ? JSON.stringify(v) : String(v),
        note(k)])));
  }
  document.getElementById("device-details").replaceChildren(...parts);
}
